from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = _("Identity")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from identity.language import copy_choice_on_sign_in
        from identity.recheck import mark_checked_on_sign_in

        user_logged_in.connect(mark_checked_on_sign_in, dispatch_uid="identity-mark-checked")
        user_logged_in.connect(copy_choice_on_sign_in, dispatch_uid="identity-language-choice")
