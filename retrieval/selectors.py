"""Reads of retrieval configuration."""
from __future__ import annotations

from django.conf import settings

from retrieval.models import AiServer, RetrievalSettings


def retrieval_settings_get() -> RetrievalSettings:
    """The single settings row (created with defaults if missing).

    Read on every use, not cached per process: staff changes must reach the web server and
    every worker at once, and this is one primary-key lookup.
    """
    row = RetrievalSettings.objects.select_related("default_embedding_server", "default_chat_server",
                                                       "rerank_server").filter(pk=1).first()
    if row is None:
        row = RetrievalSettings(pk=1)
        row.save()
    return row


def external_ai_disabled(rs: RetrievalSettings | None = None) -> bool:
    """True when servers marked external must be refused (environment or admin setting)."""
    rs = rs or retrieval_settings_get()
    return bool(settings.EXTERNAL_AI_DISABLED or rs.external_ai_disabled)


def default_embedding_server(rs: RetrievalSettings | None = None) -> AiServer:
    rs = rs or retrieval_settings_get()
    server = rs.default_embedding_server
    if server is None or not server.is_active:
        server = AiServer.objects.filter(kind="builtin", is_active=True).first()
    return server
