from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class UsageConfig(AppConfig):
    name = "usage"
    verbose_name = _("Usage and quotas")
    default_auto_field = "django.db.models.BigAutoField"
