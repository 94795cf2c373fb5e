from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = _("Sources")
    default_auto_field = "django.db.models.BigAutoField"
