from django.apps import AppConfig


class RagsiteConfig(AppConfig):
    name = "ragsite"
    verbose_name = "ragsite"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from django_q.signals import post_spawn

        from identity.tokens import end_tokens_on_credential_change
        from core.health import cluster_name_record

        # A new password or a disabled account ends the user's API tokens (identity/tokens.py).
        pre_save.connect(end_tokens_on_credential_change, sender=get_user_model(),
                         dispatch_uid="ragsite.end_tokens_on_credential_change")

        # /healthz tells the indexing and the chat worker clusters apart by the name each records.
        post_spawn.connect(cluster_name_record, dispatch_uid="ragsite-record-cluster-name")
