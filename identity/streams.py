"""An open stream (server-sent events of an answer, `/v1` streaming) ends when the sign-in that
opened it does: its token is revoked, rotated or expires, its session logs out, the password
changes or the account is disabled. WebSockets ask the same question (identity/ws_auth.py).

The stream's credential is asked again every ``WEBSOCKET_AUTH_RECHECK`` seconds (default 5)
whether events flow or not; when it no longer holds the stream sends one last event and ends.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from identity.tokens import token_still_valid
from identity.ws_auth import session_still_valid


@dataclass(frozen=True)
class Credential:
    """What signed a stream in: a token (its id and the digest of the key used) or a session."""

    user_id: int
    token_id: int | None = None
    token_digest: str = ""
    session_key: str | None = None

    @classmethod
    def of(cls, user, token=None, session_key: str | None = None) -> Credential:
        if token is not None:
            return cls(user_id=user.pk, token_id=token.pk, token_digest=token.digest)
        return cls(user_id=user.pk, session_key=session_key)


def credential_still_valid(credential: Credential) -> bool:
    """Whether the stream's token or session still signs in its (active) user."""
    if credential.token_id is not None:
        return token_still_valid(token_id=credential.token_id, digest=credential.token_digest,
                                 user_id=credential.user_id)
    return session_still_valid(session_key=credential.session_key, user_id=credential.user_id)


def _check_and_release(credential: Credential) -> bool:
    try:
        return credential_still_valid(credential)
    finally:
        connection.close()  # a waiting stream holds no database connection (issue #20)


async def acredential_still_valid(credential: Credential) -> bool:
    return await sync_to_async(_check_and_release)(credential)


async def until_signed_out(stream: AsyncIterator[bytes], still_valid: Callable[[], Awaitable[bool]],
                           last: bytes, interval: float | None = None) -> AsyncIterator[bytes]:
    """`stream`'s items until it ends, or until `still_valid()` says no: then `last`, and the end.

    Asked every `interval` seconds (WEBSOCKET_AUTH_RECHECK), also while `stream` waits quietly.
    """
    every = max(0.1, float(interval if interval is not None else settings.WEBSOCKET_AUTH_RECHECK))
    items = stream.__aiter__()
    pending: asyncio.Future | None = None
    checked = time.monotonic()
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(items.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=max(0.0, checked + every - time.monotonic()))
            if done:
                try:
                    item = pending.result()
                except StopAsyncIteration:
                    pending = None
                    return
                pending = None
                yield item
            if time.monotonic() - checked >= every:
                if not await still_valid():
                    yield last
                    return
                checked = time.monotonic()
    finally:
        if pending is not None:
            pending.cancel()
            try:
                await pending
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()
