"""Token authentication for WebSockets: `Authorization: Token <key>` or `?token=<key>`.

DRF authenticates HTTP requests; Channels knows only sessions, so API clients without a session
cookie get their user here, before the consumer runs.
"""
from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser


class TokenAuthMiddleware:
    """`Authorization: Token <key>` header or `?token=<key>`, for clients without a session."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        user = scope.get("user")
        if user is None or not user.is_authenticated:
            key = _token_key(scope)
            if key:
                scope = dict(scope, user=await _token_user(key))
        return await self.app(scope, receive, send)


def _token_key(scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, key = value.decode("latin-1").partition(" ")
            if kind.lower() == "token" and key.strip():
                return key.strip()
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return (query.get("token") or [None])[0]


@database_sync_to_async
def _token_user(key: str):
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token and token.user.is_active else AnonymousUser()
