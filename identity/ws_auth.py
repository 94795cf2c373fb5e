"""Token authentication for WebSockets, and the re-check that ends a socket whose sign-in ended.

DRF authenticates HTTP requests; Channels knows only sessions, so API clients without a session
cookie get their user here, before the consumer runs. The token travels in a header, never in the
URL (which lands in access logs and browser history):

* ``Sec-WebSocket-Protocol: ragsite.bearer, <token>`` — what a browser can send
  (``new WebSocket(url, ["ragsite.bearer", token])``); the server answers with the subprotocol
  ``ragsite.bearer`` only, never echoing the token;
* ``Authorization: Token <key>`` (or ``Bearer``) — for clients that can set headers.

A ``?token=`` in the URL is refused: the consumer accepts, sends one message
``{"type": "error", "code": "token_in_url", "message": …}`` saying how to send it instead
(`url_token_refused`), and closes with code 4400 (the same text as the close reason, which daphne
does not pass on).

An open socket outlives the request that opened it, so `still_signed_in` is asked again on a short
interval (``WEBSOCKET_AUTH_RECHECK`` seconds): a revoked, rotated or expired token, a logged-out
session, a changed password or a disabled account close the socket with code 4401. The server-sent
event streams (chat/sse.py, /v1 streaming) ask the same two questions (`token_still_valid`,
`session_still_valid`) and end.
"""
from __future__ import annotations

from importlib import import_module
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from identity.tokens import token_authenticate, token_still_valid

SUBPROTOCOL = "ragsite.bearer"
URL_TOKEN_CLOSE_CODE = 4400
SIGNED_OUT_CLOSE_CODE = 4401


class TokenAuthMiddleware:
    """`Sec-WebSocket-Protocol: ragsite.bearer, <token>` or `Authorization: Token <key>`."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if "token" in query:
            scope = dict(scope, ragsite_url_token=True)
        user = scope.get("user")
        if user is None or not user.is_authenticated:
            key, subprotocol = _token_key(scope)
            if key:
                token = await atoken_authenticate(key)
                scope = dict(scope, user=token.user if token else AnonymousUser(),
                             ragsite_token=(token.pk, token.digest) if token else None,
                             ragsite_subprotocol=subprotocol)
        return await self.app(scope, receive, send)


def offered_subprotocols(scope) -> list[str]:
    offered = scope.get("subprotocols") or [  # scopes built by hand may carry the header only
        p.strip() for name, value in scope.get("headers", []) if name == b"sec-websocket-protocol"
        for p in value.decode("latin-1").split(",")]
    return [p for p in offered if p]


def _token_key(scope) -> tuple[str | None, str | None]:
    offered = offered_subprotocols(scope)
    if SUBPROTOCOL in offered:
        index = offered.index(SUBPROTOCOL)
        if index + 1 < len(offered):
            return offered[index + 1], SUBPROTOCOL
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, key = value.decode("latin-1").partition(" ")
            if kind.lower() in ("token", "bearer") and key.strip():
                return key.strip(), None
    return None, None


atoken_authenticate = database_sync_to_async(token_authenticate)


def url_token_refused(scope) -> str | None:
    """The close reason when the URL carries `?token=` (refused whatever else signs in), else None."""
    if not scope.get("ragsite_url_token"):
        return None
    # The close reason travels in a close frame of at most 123 bytes: kept short.
    from django.utils.translation import gettext

    reason = gettext("Send the token in Sec-WebSocket-Protocol (ragsite.bearer, <token>), not ?token=.")
    return reason.encode()[:123].decode(errors="ignore")  # a translation must fit too


@database_sync_to_async
def still_signed_in(scope) -> bool:
    """Whether the socket's sign-in still holds: its token is live (not revoked, rotated or expired)
    for an active user, or its session still signs in the same active user with the same password."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return False
    if scope.get("ragsite_token"):
        token_id, digest = scope["ragsite_token"]
        return token_still_valid(token_id=token_id, digest=digest, user_id=user.pk)
    return session_still_valid(session_key=getattr(scope.get("session"), "session_key", None), user_id=user.pk)


def session_still_valid(*, session_key: str | None, user_id: int) -> bool:
    """Whether this session still signs in this active user with the password it signed in with
    (a logout, a password change or a disabled account end it)."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.utils.crypto import constant_time_compare

    if not session_key:
        return False
    data = import_module(settings.SESSION_ENGINE).SessionStore(session_key).load()
    if str(data.get(SESSION_KEY)) != str(user_id) or not data.get(BACKEND_SESSION_KEY):
        return False
    current = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    return current is not None and constant_time_compare(data.get(HASH_SESSION_KEY, ""),
                                                         current.get_session_auth_hash())
