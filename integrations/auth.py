"""The user of an API token, for the views and ASGI apps DRF does not run (`/v1/`, `/mcp`)."""
from __future__ import annotations

from channels.db import database_sync_to_async

from identity.tokens import token_authenticate


def token_key(header: str | None) -> str | None:
    """The key of `Authorization: Bearer <key>` (OpenAI and MCP clients) or `Token <key>` (DRF's)."""
    kind, _, key = (header or "").partition(" ")
    if kind.lower() in ("bearer", "token") and key.strip():
        return key.strip()
    return None


def user_for_key(key: str | None):
    """The active user owning the live token (not revoked, rotated or expired), or None."""
    token = token_authenticate(key)
    return token.user if token is not None else None


auser_for_key = database_sync_to_async(user_for_key)
atoken_for_key = database_sync_to_async(token_authenticate)
