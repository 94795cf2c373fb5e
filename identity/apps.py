from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Identity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from identity.recheck import mark_checked_on_sign_in

        user_logged_in.connect(mark_checked_on_sign_in, dispatch_uid="identity-mark-checked")
