"""The WebSocket of a conversation: `/ws/conversations/<id>/`, live events for its owner only.

On connect the client gets the answers still in progress (for each: `message.status_updated`, its
`sources` once known, its text so far as one `token` at offset 0), then every live event of the
conversation.
"""
from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from chat.contracts import LiveEvent
from chat.events import FINAL_STATUSES, TextTracker, group_name, snapshot_events
from chat.models import Conversation, Message
from chat.selectors import messages_in_flight
from chat.serializers import message_data
from identity.ws_auth import SIGNED_OUT_CLOSE_CODE, URL_TOKEN_CLOSE_CODE, still_signed_in, url_token_refused

logger = logging.getLogger(__name__)


@database_sync_to_async
def _owned(user, conversation_id: int) -> bool:
    return Conversation.objects.visible_to(user).filter(pk=conversation_id).exists()


@database_sync_to_async
def _in_flight(conversation_id: int) -> list[dict]:
    return [message_data(m) for m in messages_in_flight(conversation_id=conversation_id)]


@database_sync_to_async
def _content(message_id: int) -> str:
    return Message.objects.filter(pk=message_id).values_list("content", flat=True).first() or ""


async def forward(event: LiveEvent, tracker: TextTracker, send, *, load_content=_content) -> None:
    """Send one live event: tokens cut to what the client lacks (filling a gap from the database)."""
    if event["type"] == "token":
        out, gap = tracker.trim(event)
        if gap is not None:
            content = await load_content(event["message_id"])
            fill = tracker.snapshot_from(event["message_id"], content, gap)
            if fill:
                await send(fill)
            out, _ = tracker.trim(event)
        if out:
            await send(out)
        return
    if event["type"] == "sources":
        if event["message_id"] in tracker.sourced:
            return  # already in the snapshot
        tracker.sourced.add(event["message_id"])
    elif event["type"] == "message.status_updated":
        message = event["message"]
        if message["status"] in FINAL_STATUSES:
            tracker.reset(message["id"])
        elif message["status"] == "streaming" and not message["content"]:
            tracker.reset(message["id"])  # a (re)started answer streams from offset 0
            tracker.lengths[message["id"]] = 0
    await send(event)


class ConversationConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        refused = url_token_refused(self.scope)
        if refused:
            # Accepted only to say why (a refused handshake carries no reason): as a message, since
            # daphne drops a close frame's reason, and as the reason for servers that keep it.
            await self.accept()
            await self.send_json({"type": "error", "code": "token_in_url", "message": refused})
            await self.close(code=URL_TOKEN_CLOSE_CODE, reason=refused)
            return
        user = self.scope.get("user")
        self.conversation_id = int(self.scope["url_route"]["kwargs"]["conversation_id"])
        if user is None or not user.is_authenticated or not await _owned(user, self.conversation_id):
            await self.close()  # before accept: the handshake is refused, nothing is revealed
            return
        self.group = group_name(self.conversation_id)
        self.tracker = TextTracker()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept(subprotocol=self.scope.get("ragsite_subprotocol"))
        self.recheck = asyncio.ensure_future(self._recheck_sign_in())
        # Subscribed first, read second: whatever was sent before is in the saved text.
        for message in await _in_flight(self.conversation_id):
            for event in snapshot_events(message, self.tracker):
                await self.send_json(event)

    async def _recheck_sign_in(self) -> None:
        """Close the socket once its token or session no longer signs its user in."""
        while True:
            await asyncio.sleep(max(0.1, settings.WEBSOCKET_AUTH_RECHECK))
            try:
                signed_in = await still_signed_in(self.scope)
            except Exception:  # the database is away for a moment: the socket stays, asked again later
                logger.warning("could not re-check a WebSocket's sign-in", exc_info=True)
                continue
            if not signed_in:
                await self.close(code=SIGNED_OUT_CLOSE_CODE)
                return

    async def disconnect(self, code):
        if hasattr(self, "recheck"):
            self.recheck.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def chat_event(self, message):
        await forward(message["event"], self.tracker, self.send_json)
