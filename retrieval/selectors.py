"""Reads of retrieval configuration."""
from __future__ import annotations

import copy
import os

from django.conf import settings
from django.db import connection

from retrieval.models import AiServer, RetrievalSettings


# The settings row and its three servers' row versions: xmin (the writing transaction), cmin (the
# command within it: two updates in one transaction differ) and ctid (each version's own place).
_VERSIONS_SQL = """
SELECT concat_ws(':', s.xmin, s.cmin, s.ctid), concat_ws(':', e.xmin, e.cmin, e.ctid),
       concat_ws(':', c.xmin, c.cmin, c.ctid), concat_ws(':', r.xmin, r.cmin, r.ctid)
FROM retrieval_retrievalsettings s
LEFT JOIN retrieval_aiserver e ON e.id = s.default_embedding_server_id
LEFT JOIN retrieval_aiserver c ON c.id = s.default_chat_server_id
LEFT JOIN retrieval_aiserver r ON r.id = s.rerank_server_id
WHERE s.id = 1
"""
_settings_cache: tuple | None = None  # (pid, versions, settings)


def retrieval_settings_get() -> RetrievalSettings:
    """The single settings row (created with defaults if missing), with its servers.

    Checked on every use, not trusted from a cache: staff changes must reach the web server and
    every worker at once. But one plain query compares the row versions of the settings and of
    their three servers with the ones this process last loaded, and only a change loads them again:
    building the ORM query with its three joins cost ~4 ms of every question (retrieve() profile).
    Callers get their own copy, free to change.
    """
    global _settings_cache
    with connection.cursor() as cursor:
        cursor.execute(_VERSIONS_SQL)
        versions = cursor.fetchone()
    cached = _settings_cache
    if versions is not None and cached is not None and cached[0] == os.getpid() and cached[1] == versions:
        return copy.deepcopy(cached[2])
    row = RetrievalSettings.objects.select_related("default_embedding_server", "default_chat_server",
                                                       "rerank_server").filter(pk=1).first()
    if row is None:
        row = RetrievalSettings(pk=1)
        row.save()
        return row
    # Versions read before the row: if it changed in between, the next call sees a newer version.
    _settings_cache = (os.getpid(), versions, row)
    return copy.deepcopy(row)


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
