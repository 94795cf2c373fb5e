"""Server-sent events of one answer: `GET /api/conversations/<id>/messages/<message_id>/stream/`.

The same events as the WebSocket, for one message: its current state (`message.status_updated`),
its sources once known and its text so far (a `token` at offset 0), then live `sources` / `token`
events until the final
`message.status_updated` (done or failed), after which the stream ends. A client that leaves
early changes nothing: the answer is written by the worker, not by this view. When the token or
session that opened the stream ends, one `error` event (`code: signed_out`) closes it
(identity/streams.py).
"""
from __future__ import annotations

import asyncio
import json

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.http import JsonResponse, StreamingHttpResponse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from chat.consumers import forward
from chat.contracts import LiveEvent
from chat.events import FINAL_STATUSES, TextTracker, group_name, snapshot_events, status_event
from chat.models import Message
from chat.serializers import message_data
from identity.streams import Credential, acredential_still_valid, until_signed_out
from identity.tokens import token_authenticate

KEEPALIVE_SECONDS = 15.0


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"code": code, "message": message, "extra": {}}, status=status)


async def _user(request):
    """The signed-in user and the credential the stream re-checks (identity/streams.py), or (None, None)."""
    header = request.headers.get("Authorization", "")
    kind, _, key = header.partition(" ")
    if kind.lower() == "token" and key.strip():
        token = await sync_to_async(token_authenticate)(key.strip())
        return (token.user, Credential.of(token.user, token=token)) if token is not None else (None, None)
    user = await request.auser()
    if not user.is_authenticated:
        return None, None
    return user, Credential.of(user, session_key=request.session.session_key)


async def _message(user, conversation_id: int, message_id: int) -> Message | None:
    return await Message.objects.owned(user, conversation_id=conversation_id, message_id=message_id).afirst()


async def _release_connection() -> None:
    """Close this request's database connection while the stream waits.

    Under daphne every request runs in a thread of its own and keeps the connection it opened
    until the response ends: 50 open streams held 50 PostgreSQL connections (issue #20). The
    close runs in that same thread (thread-sensitive); the next read opens a new one.
    """
    await sync_to_async(_close_connection)()


def _close_connection() -> None:
    connection.close()  # looked up here, in the request's thread: each thread has its own


def _sse(event: LiveEvent) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


@require_GET
async def message_stream(request, conversation_id: int, message_id: int):
    user, credential = await _user(request)
    if user is None:
        return _error(401, "not_authenticated", "Authentication credentials were not provided.")
    if await _message(user, conversation_id, message_id) is None:
        return _error(404, "not_found", "No such message.")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = group_name(conversation_id)
    await layer.group_add(group, channel)
    # Subscribed first, read second: whatever was sent before is in the saved text.
    message = await _message(user, conversation_id, message_id)
    await _release_connection()

    async def events():
        tracker = TextTracker()
        pending: asyncio.Task | None = None
        out: list[bytes] = []

        async def collect(event: dict) -> None:
            out.append(_sse(event))

        try:
            if message is None:
                return
            if message.status in FINAL_STATUSES:
                yield _sse(status_event(message_data(message)))
                return
            for event in snapshot_events(message_data(message), tracker):
                yield _sse(event)
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(layer.receive(channel))
                done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
                if not done:
                    # Quiet for a while: make sure the answer still exists and has not ended unseen.
                    current = await _message(user, conversation_id, message_id)
                    await _release_connection()
                    if current is None:
                        return
                    if current.status in FINAL_STATUSES:
                        yield _sse(status_event(message_data(current)))
                        return
                    yield b": keep-alive\n\n"
                    continue
                event = pending.result()["event"]
                pending = None
                if _message_id(event) != message.pk:
                    continue
                await forward(event, tracker, collect)
                while out:
                    yield out.pop(0)
                if event["type"] == "message.status_updated" and event["message"]["status"] in FINAL_STATUSES:
                    return
        finally:
            if pending is not None:
                pending.cancel()
            await layer.group_discard(group, channel)

    signed_out = _sse({"type": "error", "code": "signed_out",  # type: ignore[typeddict-item]
                       "message": gettext("Your sign-in ended (token or session): sign in again.")})
    stream = until_signed_out(events(), lambda: acredential_still_valid(credential), signed_out)
    response = StreamingHttpResponse(stream, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass events through at once
    return response


def _message_id(event: dict) -> int | None:
    if event["type"] == "message.status_updated":
        return event["message"]["id"]
    return event.get("message_id")
