"""The user of an API token, for the views and ASGI apps DRF does not run (`/v1/`, `/mcp`)."""
from __future__ import annotations

from channels.db import database_sync_to_async


def token_key(header: str | None) -> str | None:
    """The key of `Authorization: Bearer <key>` (OpenAI and MCP clients) or `Token <key>` (DRF's)."""
    kind, _, key = (header or "").partition(" ")
    if kind.lower() in ("bearer", "token") and key.strip():
        return key.strip()
    return None


def user_for_key(key: str | None):
    """The active user owning the token, or None."""
    if not key:
        return None
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token and token.user.is_active else None


auser_for_key = database_sync_to_async(user_for_key)
