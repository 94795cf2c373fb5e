from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """Interfaces other tools speak: the OpenAI-compatible chat API and the MCP server (above chat)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "integrations"
    verbose_name = "Integrations"
