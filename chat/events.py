"""Live events of a conversation: their shapes, and how an answering process sends them.

Every event goes to the Channels group of the conversation, wrapped as
``{"type": "chat.event", "event": {...}}``; WebSocket consumers and the SSE view unwrap it.

* ``{"type": "token", "message_id", "delta", "offset"}`` — ``offset`` is where ``delta`` starts
  in the message's streamed text, so a client joining late (which first gets the saved text)
  drops what it already has and never sees a token twice;
* ``{"type": "sources", "message_id", "sources": [...]}`` — the passages given to the model;
* ``{"type": "message.status_updated", "message": {...}}``.

:data:`writer` saves the streamed text and then sends the token, always in that order, from a
background event loop of its own: the answer loop never waits for the database or the layer.
Saved-before-sent is what lets a late client combine "what is saved" with "what arrives" without a
gap. Under load, consecutive tokens of one message are merged into one save and one event.
The sources of an answer are saved (`metadata.context_sources`) and sent the same way.
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from typing import NamedTuple, Union

import psycopg
from channels.layers import get_channel_layer
from psycopg.types.json import Jsonb

from chat.contracts import LiveEvent, Source, SourcesEvent, StatusEvent, TokenEvent
from core.layers import conninfo_for

logger = logging.getLogger(__name__)

LAYER_MESSAGE_TYPE = "chat.event"
FINAL_STATUSES = ("done", "failed")


def group_name(conversation_id: int) -> str:
    return f"chat.conversation.{int(conversation_id)}"


def token_event(message_id: int, delta: str, offset: int) -> TokenEvent:
    return {"type": "token", "message_id": message_id, "delta": delta, "offset": offset}


def sources_event(message_id: int, sources: list[Source]) -> SourcesEvent:
    return {"type": "sources", "message_id": message_id, "sources": sources}


def status_event(message: dict) -> StatusEvent:
    return {"type": "message.status_updated", "message": message}


def snapshot_events(message: dict, tracker: "TextTracker") -> list[LiveEvent]:
    """What a client joining now gets for an answer in progress: its state, sources, text so far."""
    events: list[LiveEvent] = [status_event(message)]
    sources = (message.get("metadata") or {}).get("context_sources")
    if sources:
        events.append(sources_event(message["id"], sources))
        tracker.sourced.add(message["id"])
    text = tracker.snapshot(message["id"], message["content"])
    if text:
        events.append(text)
    return events


class TextTracker:
    """How much of each message's text a client already has; trims overlapping tokens.

    Used by the WebSocket consumer and the SSE view: they first send the saved text (a token at
    offset 0), then forward live tokens, cut so that nothing is sent twice.
    """

    def __init__(self) -> None:
        self.lengths: dict[int, int] = {}
        self.sourced: set[int] = set()  # messages whose sources the client has

    def snapshot(self, message_id: int, content: str) -> TokenEvent | None:
        self.lengths[message_id] = len(content)
        return token_event(message_id, content, 0) if content else None

    def snapshot_from(self, message_id: int, content: str, have: int) -> TokenEvent | None:
        """The saved text past `have` (filling a gap), as one token."""
        if len(content) <= have:
            return None
        self.lengths[message_id] = len(content)
        return token_event(message_id, content[have:], have)

    def trim(self, event: TokenEvent) -> tuple[TokenEvent | None, int | None]:
        """(the part of a token event that is new, or None; the offset of a gap to fill first, or None)."""
        message_id = event["message_id"]
        have = self.lengths.get(message_id, 0)
        offset, delta = event["offset"], event["delta"]
        if offset > have:
            return None, have  # something was missed: the caller fills it from the database
        end = offset + len(delta)
        if end <= have:
            return None, None
        self.lengths[message_id] = end
        return token_event(message_id, delta[have - offset:], have), None

    def reset(self, message_id: int) -> None:
        self.lengths.pop(message_id, None)
        self.sourced.discard(message_id)


class _Flush:
    def __init__(self) -> None:
        self.done = threading.Event()


# What the answer loop queues for the writer's background loop, in order.


class QueuedToken(NamedTuple):
    """Save `content` (the whole text so far) as the message's text, then send `delta` at `offset`."""

    conversation_id: int
    message_id: int
    delta: str
    offset: int
    content: str


class QueuedSources(NamedTuple):
    """Save the sources into the message's metadata (`context_sources`), then send them."""

    conversation_id: int
    message_id: int
    sources: list[Source]


class QueuedEvent(NamedTuple):
    """Send an event to the conversation's group."""

    conversation_id: int
    event: LiveEvent


Queued = Union[QueuedToken, QueuedSources, QueuedEvent, _Flush]


class StreamWriter:
    """Saves streamed text and sends events from one background event loop per process, in order."""

    def __init__(self) -> None:
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._conn: psycopg.AsyncConnection | None = None
        self._last_error_log = 0.0

    # -- the caller's side (any thread) ---------------------------------------------------------

    def token(self, conversation_id: int, message_id: int, delta: str, offset: int, content: str) -> None:
        """Queue: save `content` (the whole text so far) as the message's text, then send the token."""
        self._put(QueuedToken(conversation_id, message_id, delta, offset, content))

    def sources(self, conversation_id: int, message_id: int, sources: list[Source]) -> None:
        """Queue: save the sources into the message's metadata (`context_sources`), then send them."""
        self._put(QueuedSources(conversation_id, message_id, sources))

    def send(self, conversation_id: int, event: LiveEvent) -> None:
        """Queue an event for the conversation's group (after everything queued before it)."""
        self._put(QueuedEvent(conversation_id, event))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far is saved and sent."""
        marker = _Flush()
        self._put(marker)
        return marker.done.wait(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the background loop and close its connections (tests, process exit)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            if loop is None or self._pid != os.getpid():
                return
            self._loop = self._thread = self._queue = None
            self._pid = None
        asyncio.run_coroutine_threadsafe(self._aclose(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

    def _put(self, item: Queued) -> None:
        self._ensure()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _ensure(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            ready = threading.Event()
            loop = asyncio.new_event_loop()

            def run() -> None:
                asyncio.set_event_loop(loop)
                self._queue = asyncio.Queue()
                self._task = loop.create_task(self._run())
                ready.set()
                loop.run_forever()
                loop.close()

            # A forked worker inherits a copy of the parent's writer, but not its thread.
            self._conn = None
            self._loop = loop
            self._thread = threading.Thread(target=run, name="chat-stream-writer", daemon=True)
            self._thread.start()
            ready.wait(5)
            self._pid = os.getpid()

    # -- the background loop ------------------------------------------------------------------

    async def _run(self) -> None:
        queue = self._queue
        while True:
            items = [await queue.get()]
            while not queue.empty():
                items.append(queue.get_nowait())
            for item in _merge_tokens(items):
                if isinstance(item, _Flush):
                    item.done.set()
                    continue
                try:
                    await self._handle(item)
                except Exception:  # noqa: BLE001 - a lost event must never stop the answer
                    self._log_error()

    async def _handle(self, item: QueuedToken | QueuedSources | QueuedEvent) -> None:
        layer = get_channel_layer()
        event: LiveEvent
        if isinstance(item, QueuedToken):
            await self._save("content = %s", item.content, item.message_id)
            event = token_event(item.message_id, item.delta, item.offset)
        elif isinstance(item, QueuedSources):
            await self._save("metadata = metadata || %s", Jsonb({"context_sources": item.sources}), item.message_id)
            event = sources_event(item.message_id, item.sources)
        else:
            event = item.event
        if layer is not None:
            await layer.group_send(group_name(item.conversation_id), {"type": LAYER_MESSAGE_TYPE, "event": event})

    async def _save(self, assignment: str, value, message_id: int) -> None:
        sql = f"UPDATE chat_message SET {assignment}, updated_at = now() WHERE id = %s AND status = 'streaming'"
        layer = get_channel_layer()
        if hasattr(layer, "execute"):  # the PostgreSQL layer: its connection, one per process
            await layer.execute(sql, (value, message_id))
            return
        for attempt in (1, 2):
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = await psycopg.AsyncConnection.connect(conninfo_for(), autocommit=True)
                    # Streamed text is saved again at the end; losing the last moments of it to a
                    # database crash is fine, waiting for a disk flush per token is not.
                    await self._conn.execute("SET synchronous_commit TO off")
                await self._conn.execute(sql, (value, message_id))
                return
            except psycopg.OperationalError:
                self._conn = None
                if attempt == 2:
                    raise

    async def _aclose(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        layer = get_channel_layer()
        if layer is not None and hasattr(layer, "aclose"):
            await layer.aclose()

    def _log_error(self) -> None:
        now = time.monotonic()
        if now - self._last_error_log > 10:
            self._last_error_log = now
            logger.exception("a live chat event could not be saved or sent")


def _merge_tokens(items: list[Queued]) -> list[Queued]:
    """Merge runs of consecutive tokens of the same message into one (one save, one event)."""
    merged: list[Queued] = []
    for item in items:
        prev = merged[-1] if merged else None
        if (isinstance(item, QueuedToken) and isinstance(prev, QueuedToken) and prev.message_id == item.message_id
                and prev.offset + len(prev.delta) == item.offset):
            merged[-1] = prev._replace(delta=prev.delta + item.delta, content=item.content)
        else:
            merged.append(item)
    return merged


writer = StreamWriter()
atexit.register(writer.close)
