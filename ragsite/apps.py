from django.apps import AppConfig


class RagsiteConfig(AppConfig):
    name = "ragsite"
    verbose_name = "ragsite"

    def ready(self):
        from django_q.signals import post_spawn

        from core.health import cluster_name_record

        # /healthz tells the indexing and the chat worker clusters apart by the name each records.
        post_spawn.connect(cluster_name_record, dispatch_uid="ragsite-record-cluster-name")
