from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RetrievalConfig(AppConfig):
    verbose_name = _("Retrieval")
    name = "retrieval"

    def ready(self):
        from django_q.signals import post_spawn

        from documents.signals import index_wanted
        from retrieval.tasks import queue_index_wanted, recover_at_worker_start

        # documents announces a document waiting to be indexed; the indexing side queues it.
        index_wanted.connect(queue_index_wanted, dispatch_uid="ragsite-queue-indexing")

        # A worker that starts after a crash picks up documents a dead worker left in `processing`.
        post_spawn.connect(recover_at_worker_start, dispatch_uid="ragsite-recover-stale-documents")
