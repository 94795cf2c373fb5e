from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"

    def ready(self):
        from django_q.signals import post_spawn

        from retrieval.indexing import recover_at_worker_start

        # A worker that starts after a crash picks up documents a dead worker left in `processing`.
        post_spawn.connect(recover_at_worker_start, dispatch_uid="ragsite-recover-stale-documents")
