from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IntegrationsConfig(AppConfig):
    """Interfaces other tools speak: the OpenAI-compatible chat API and the MCP server (above chat)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "integrations"
    verbose_name = _("Integrations")
