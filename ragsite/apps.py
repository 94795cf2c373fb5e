from django.apps import AppConfig


class RagsiteConfig(AppConfig):
    name = "ragsite"
    verbose_name = "ragsite"

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from core.api_tokens import end_tokens_on_credential_change

        # A new password or a disabled account ends the user's API token (core/api_tokens.py).
        pre_save.connect(end_tokens_on_credential_change, sender=get_user_model(),
                         dispatch_uid="ragsite.end_tokens_on_credential_change")
