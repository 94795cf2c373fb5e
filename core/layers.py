"""A Channels layer on PostgreSQL LISTEN/NOTIFY: live events cross processes with no Redis.

It uses the tables and the notify trigger of the `channels_postgres` app (its migrations), with
its own client code, because the package's layer (1.1.4), measured here:

* needs a second Django database alias named `channels_postgres` (its `group_discard` uses the
  ORM with `.using("channels_postgres")`) and a complete database settings dict, or
  `get_channel_layer()` quietly returns None;
* keeps one process-wide async pool tied to the first event loop that used it, and its sessions
  outlive that loop (the test database cannot be dropped afterwards);
* takes a session-level advisory lock per receiving channel that is never released (a daphne
  process would collect one lock per WebSocket ever opened, until the lock table is full);
* at listener start deletes the queued messages of *every* channel, other processes' included,
  and it does so before `LISTEN`, so a message sent in between is lost.

Here every event loop gets its own connections (a command connection and a listener), the
listener runs `LISTEN` first and then collects only this process's queued messages, group
sends are one `INSERT … SELECT`, and expired rows are deleted periodically.

Channel names are process-local (`specific.<client prefix>!<uuid>`), so exactly one listener
receives each message; small messages arrive inside the NOTIFY payload, larger ones are read
from the table by id.
"""
from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
import weakref
from dataclasses import dataclass, field

import msgpack
import psycopg
from channels.layers import BaseChannelLayer
from django.db import connections

logger = logging.getLogger(__name__)

MESSAGES = "channels_postgres_message"
GROUPS = "channels_postgres_groupchannel"
NOTIFY_CHANNEL = "channels_postgres_messages"
CLEANUP_INTERVAL = 30.0  # seconds between deletions of expired rows


def conninfo_for(alias: str = "default") -> str:
    """A libpq connection string for a Django database alias (its current settings: test names too)."""
    wrapper = connections[alias]
    params = wrapper.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.conninfo.make_conninfo("", **params)


@dataclass
class _LoopState:
    """The connections and queues of one event loop."""

    command: psycopg.AsyncConnection | None = None
    command_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    listener: asyncio.Task | None = None
    listening: asyncio.Event = field(default_factory=asyncio.Event)
    queues: dict[str, asyncio.Queue] = field(default_factory=dict)
    seen_ids: set[int] = field(default_factory=set)
    next_cleanup: float = 0.0


class PostgresChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(self, expiry: int = 60, group_expiry: int = 86400, capacity: int = 100,
                 channel_capacity=None, prefix: str = "asgi", database: str = "default", **_ignored):
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity)
        self.group_expiry = group_expiry
        self.prefix = prefix
        self.database = database
        self.client_prefix = uuid.uuid4().hex[:12]
        self._states: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # -- connections ----------------------------------------------------------------------------

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = _LoopState()
            self._states[loop] = state
        return state

    async def _connect(self) -> psycopg.AsyncConnection:
        conn = await psycopg.AsyncConnection.connect(conninfo_for(self.database), autocommit=True)
        # Events live a minute; one lost to a database crash does not matter, waiting for a disk
        # flush on every token does (~2 ms each here).
        await conn.execute("SET synchronous_commit TO off")
        return conn

    async def _execute(self, sql: str, params: tuple = (), *, fetch: bool = False):
        """Run one statement on this loop's command connection (reconnecting once if it dropped)."""
        state = self._state()
        async with state.command_lock:
            for attempt in (1, 2):
                try:
                    if state.command is None or state.command.closed:
                        state.command = await self._connect()
                    cursor = await state.command.execute(sql, params)
                    return await cursor.fetchall() if fetch else None
                except psycopg.OperationalError:
                    if state.command is not None:
                        await state.command.close()
                    state.command = None
                    if attempt == 2:
                        raise

    async def execute(self, sql: str, params: tuple = ()) -> None:
        """Run a statement on this loop's connection (the chat stream writer saves text through it,
        in order with its events, without a connection of its own)."""
        await self._execute(sql, params)

    async def aclose(self) -> None:
        """Close this event loop's connections (tests; daphne keeps them for its lifetime)."""
        state = self._states.pop(asyncio.get_running_loop(), None)
        if state is None:
            return
        if state.listener is not None:
            state.listener.cancel()
            try:
                await state.listener
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing anyway
                pass
        if state.command is not None:
            await state.command.close()

    # -- channels -------------------------------------------------------------------------------

    async def new_channel(self, prefix: str = "specific") -> str:
        return f"{prefix}.{self.client_prefix}!{uuid.uuid4().hex}"

    def _expires(self) -> float:
        return time.time() + self.expiry

    async def send(self, channel: str, message: dict) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        await self._execute(
            f"INSERT INTO {MESSAGES} (channel, message, expire) VALUES (%s, %s, to_timestamp(%s))",
            (channel, self.serialize(message), self._expires()),
        )

    async def receive(self, channel: str) -> dict:
        self.require_valid_channel_name(channel)
        state = self._state()
        queue = state.queues.setdefault(channel, asyncio.Queue())
        if state.listener is None or state.listener.done():
            state.listening.clear()
            state.listener = asyncio.create_task(self._listen(state))
        await state.listening.wait()
        while True:
            try:
                message_id, payload = await queue.get()
            except asyncio.CancelledError:
                if queue.empty():  # the receiver is gone (a consumer closing): forget its queue
                    state.queues.pop(channel, None)
                raise
            if payload is None:  # too large for the notification: read it from the table
                rows = await self._execute(f"DELETE FROM {MESSAGES} WHERE id = %s RETURNING message",
                                           (message_id,), fetch=True)
                if not rows:
                    continue  # expired and cleaned up
                payload = bytes(rows[0][0])
            return self.deserialize(payload)

    def _deliver(self, state: _LoopState, message_id: int, channel: str, payload: bytes | None) -> None:
        queue = state.queues.get(channel)
        if queue is None or message_id in state.seen_ids:
            return
        state.seen_ids.add(message_id)
        if len(state.seen_ids) > 100_000:  # only needed around the start-up sweep
            state.seen_ids.clear()
        queue.put_nowait((message_id, payload))

    async def _listen(self, state: _LoopState) -> None:
        """LISTEN, then collect this process's queued messages, then forward notifications.

        A lost connection is opened again; the sweep after it delivers what was sent meanwhile
        (messages stay in the table until they expire; ids already delivered are skipped).
        """
        own = f"%.{self.client_prefix}!%"
        while True:
            conn = None
            try:
                conn = await self._connect()
                await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                cursor = await conn.execute(
                    f"SELECT id, channel, message FROM {MESSAGES} WHERE channel LIKE %s AND expire > now() ORDER BY id",
                    (own,),
                )
                for message_id, channel, payload in await cursor.fetchall():
                    self._deliver(state, message_id, channel, bytes(payload))
                state.listening.set()
                while True:
                    async for notify in conn.notifies(timeout=CLEANUP_INTERVAL):
                        self._on_notify(state, notify.payload)
                    await self._cleanup(conn, state)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the database went away: listen again
                logger.warning("channel layer listener lost its connection; reconnecting", exc_info=True)
                await asyncio.sleep(1)
            finally:
                if conn is not None:
                    await conn.close()

    def _on_notify(self, state: _LoopState, payload: str) -> None:
        parts = payload.split(":")
        message_id, channel = int(parts[0]), parts[1]
        if channel not in state.queues:
            return
        if len(parts) == 4:
            if float(parts[3]) < time.time():
                return
            self._deliver(state, message_id, channel, base64.b64decode(parts[2]))
        else:
            self._deliver(state, message_id, channel, None)

    async def _cleanup(self, conn: psycopg.AsyncConnection, state: _LoopState) -> None:
        now = time.monotonic()
        if now < state.next_cleanup:
            return
        state.next_cleanup = now + CLEANUP_INTERVAL
        await conn.execute(f"DELETE FROM {MESSAGES} WHERE expire < now()")
        await conn.execute(f"DELETE FROM {GROUPS} WHERE expire < now()")

    # -- groups ---------------------------------------------------------------------------------

    def _group_key(self, group: str) -> str:
        return f"{self.prefix}:group:{group}"

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        await self._execute(
            f"INSERT INTO {GROUPS} (group_key, channel, expire) VALUES (%s, %s, to_timestamp(%s))",
            (self._group_key(group), channel, time.time() + self.group_expiry),
        )

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        await self._execute(f"DELETE FROM {GROUPS} WHERE group_key = %s AND channel = %s",
                            (self._group_key(group), channel))

    async def group_send(self, group: str, message: dict) -> None:
        self.require_valid_group_name(group)
        await self._execute(
            f"INSERT INTO {MESSAGES} (channel, message, expire) "
            f"SELECT DISTINCT channel, %s, to_timestamp(%s) FROM {GROUPS} WHERE group_key = %s AND expire > now()",
            (self.serialize(message), self._expires(), self._group_key(group)),
        )

    async def flush(self) -> None:
        await self._execute(f"TRUNCATE {MESSAGES}, {GROUPS}")

    # -- serialization --------------------------------------------------------------------------

    def serialize(self, message: dict) -> bytes:
        return msgpack.packb(message, use_bin_type=True)

    def deserialize(self, payload: bytes) -> dict:
        return msgpack.unpackb(payload, raw=False)
