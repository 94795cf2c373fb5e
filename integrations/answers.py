"""Ask through the chat's own path and follow the answer: what the OpenAI-compatible endpoint and
the MCP `ask` tool share.

A question is saved with `chat.services.message_send` like one from the chat page, so the chat
worker answers it with the same orchestrator (retrieval, prompt, citations by tag) and it is a
conversation of the user. The answer is then followed over the conversation's Channels group the
way the SSE view does: subscribe first, read the saved text second, then trim live tokens by
offset (`chat.consumers.forward`), so nothing is missed or repeated.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext

from chat.consumers import forward
from chat.events import FINAL_STATUSES, TextTracker, group_name
from chat.models import Conversation, Message, MessageRole, MessageStatus
from chat.selectors import conversation_get
from chat.serializers import message_data
from chat.services import message_send
from chat.titles import title_from_question
from core.errors import ApplicationError, TimedOut
from documents.collections import collection_readable

KEEPALIVE_SECONDS = 15.0
MAX_HISTORY_TURNS = 50
HISTORY_ANSWER_FACTOR = 4  # an earlier answer may be this many times longer than a question


@dataclass(frozen=True)
class Turn:
    role: str  # "user" or "assistant"
    content: str


# The interface that asked (kept with each question) → the conversation's origin (chat.models.ConversationOrigin).
CONVERSATION_ORIGIN = {"openai": "api", "mcp": "mcp"}


class AnswerTimeout(TimedOut):
    code = "answer_timeout"


def ask_start(*, user, question: str, history: list[Turn] | None = None, conversation_id: int | None = None,
              metadata: dict | None = None, origin: str, collection: str | None = None) -> Message:
    """Save the question (in a new conversation, or continuing one of the user's); the pending answer.

    Earlier turns a client sends along (OpenAI clients send the whole chat every time) become the
    new conversation's history, so the orchestrator sees them as it sees the chat page's turns.
    With `conversation_id` the stored conversation is the history and `history` is ignored.
    `collection`: a new conversation's questions search only that collection (a slug the user reads).
    """
    history = list(history or [])[-MAX_HISTORY_TURNS:]
    _check_history(history)
    with transaction.atomic():
        if conversation_id is None:
            first = next((t.content for t in history if t.role == "user"), question)
            conversation = Conversation.objects.create(
                owner=user, title=title_from_question(first), origin=CONVERSATION_ORIGIN.get(origin, "api"),
                collection=collection_readable(user=user, ref=collection) if collection else None)
            Message.objects.bulk_create([
                Message(conversation=conversation, role=t.role, status=MessageStatus.DONE, content=t.content,
                        metadata={"origin": origin, "imported": True})
                for t in history if t.role in (MessageRole.USER, MessageRole.ASSISTANT) and t.content.strip()
            ])
        else:
            conversation = conversation_get(conversation_id=conversation_id, user=user)
        _, answer = message_send(conversation_id=conversation.pk, user=user, content=question,
                                 metadata=metadata, origin=origin)
    return answer


def _check_history(history: list[Turn]) -> None:
    """Earlier turns are stored as messages: a user's turn within the question's limit, an answer's
    within HISTORY_ANSWER_FACTOR times it (a 2 MB "turn" was stored before this check)."""
    limit = settings.CHAT_MAX_QUESTION_CHARS
    for i, turn in enumerate(history):
        allowed = limit if turn.role == MessageRole.USER else limit * HISTORY_ANSWER_FACTOR
        if len(turn.content) > allowed:
            raise ApplicationError(gettext("An earlier message (%(role)s) is longer than %(limit)s characters.")
                                   % {"role": turn.role, "limit": allowed}, code="invalid",
                                   extra={"turn": i})


async def follow_answer(*, user, answer: Message, timeout: float | None = None) -> AsyncIterator[tuple[str, object]]:
    """Yield ("delta", text) as the answer streams, then ("final", message dict) once done or failed."""
    deadline = time.monotonic() + (timeout or settings.CHAT_ANSWER_TIME_LIMIT + 120)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = group_name(answer.conversation_id)
    await layer.group_add(group, channel)
    pending: asyncio.Task | None = None
    deltas: list[str] = []

    async def collect(event: dict) -> None:
        if event["type"] == "token" and event["delta"]:
            deltas.append(event["delta"])

    async def current() -> Message | None:
        return await Message.objects.filter(conversation__owner_id=user.pk, pk=answer.pk).afirst()

    try:
        # Subscribed first, read second: whatever was sent before is in the saved text.
        message = await current()
        tracker = TextTracker()
        if message is None or message.status in FINAL_STATUSES:
            yield "final", message_data(message) if message else None
            return
        if message.content:
            tracker.snapshot(message.pk, message.content)
            yield "delta", message.content
        else:
            tracker.lengths[message.pk] = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AnswerTimeout(gettext("The answer took longer than the time limit; it may still appear in the conversation."), extra={"conversation_id": answer.conversation_id})
            if pending is None:
                pending = asyncio.ensure_future(layer.receive(channel))
            done, _ = await asyncio.wait({pending}, timeout=min(KEEPALIVE_SECONDS, left))
            if not done:
                # Quiet for a while: make sure the answer has not ended unseen (or been deleted).
                message = await current()
                if message is None or message.status in FINAL_STATUSES:
                    yield "final", message_data(message) if message else None
                    return
                continue
            event = pending.result()["event"]
            pending = None
            if _message_id(event) != answer.pk:
                continue
            await forward(event, tracker, collect)
            while deltas:
                yield "delta", deltas.pop(0)
            if event["type"] == "message.status_updated" and event["message"]["status"] in FINAL_STATUSES:
                yield "final", event["message"]
                return
    finally:
        if pending is not None:
            pending.cancel()
        await layer.group_discard(group, channel)


async def answer_of(*, user, answer: Message, timeout: float | None = None) -> dict | None:
    """Wait for the finished answer (the message as the API shows it; None if it was deleted)."""
    async for kind, value in follow_answer(user=user, answer=answer, timeout=timeout):
        if kind == "final":
            return value
    return None


def _message_id(event: dict) -> int | None:
    if event["type"] == "message.status_updated":
        return event["message"]["id"]
    return event.get("message_id")


def citations_of(message: dict) -> list[dict]:
    """The answer's citations for other tools: source id (the `[S1]` marker), document, page, offsets, snippet."""
    return [
        {"source_id": c.get("source_id"), "source_type": c.get("source_type"), "document_id": c.get("document_id"),
         "document_name": c.get("document_name"), "chunk_id": c.get("chunk_id"), "chunk_index": c.get("chunk_index"),
         "page_number": c.get("page_number"), "page_label": c.get("page_label"), "heading_path": c.get("heading_path") or [],
         "start_offset": c.get("start_offset"), "end_offset": c.get("end_offset"),
         "snippet": c.get("snippet_preview") or "", "qa_id": c.get("qa_id")}
        for c in (message.get("metadata") or {}).get("citations") or []
    ]
