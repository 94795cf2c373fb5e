from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = _("Identity")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from django.contrib.auth.signals import user_logged_in, user_login_failed
        from django.db.models.signals import m2m_changed

        from identity.audit import on_m2m_changed, on_user_logged_in, on_user_login_failed
        from identity.language import copy_choice_on_sign_in
        from identity.recheck import mark_checked_on_sign_in

        user_logged_in.connect(mark_checked_on_sign_in, dispatch_uid="identity-mark-checked")
        user_logged_in.connect(copy_choice_on_sign_in, dispatch_uid="identity-language-choice")
        # The audit log: sign-ins (local, LDAP, OpenID Connect), failed ones, group and permission changes.
        user_logged_in.connect(on_user_logged_in, dispatch_uid="identity-audit-sign-in")
        user_login_failed.connect(on_user_login_failed, dispatch_uid="identity-audit-sign-in-failed")
        User = get_user_model()
        for through in (User.groups.through, User.user_permissions.through, Group.permissions.through):
            m2m_changed.connect(on_m2m_changed, sender=through, dispatch_uid=f"identity-audit-{through._meta.db_table}")
