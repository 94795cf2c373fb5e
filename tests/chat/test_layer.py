"""The PostgreSQL channel layer, and the pieces that keep live text whole (merging, trimming)."""
from __future__ import annotations

import asyncio

import pytest

from chat.events import QueuedEvent, QueuedToken, TextTracker, _merge_tokens, token_event
from core.layers import PostgresChannelLayer
from tests.chat.helpers import run

# The layer's own connections see committed rows only.
committed = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _layers(n: int) -> list[PostgresChannelLayer]:
    """Independent layer objects: like separate processes (own client prefix, connections, listener)."""
    return [PostgresChannelLayer() for _ in range(n)]


@committed
def test_group_messages_arrive_in_order_across_layers_and_only_to_members():
    sender, first, second = _layers(3)

    async def scenario():
        try:
            a, b, gone = await first.new_channel(), await second.new_channel(), await second.new_channel()
            for channel in (a, b, gone):
                await (first if channel == a else second).group_add("room", channel)
            await second.group_discard("room", gone)
            for n in range(50):
                await sender.group_send("room", {"type": "chat.event", "n": n})
            got_a = [(await asyncio.wait_for(first.receive(a), 5))["n"] for _ in range(50)]
            got_b = [(await asyncio.wait_for(second.receive(b), 5))["n"] for _ in range(50)]
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(second.receive(gone), 0.3)
            return got_a, got_b
        finally:
            for layer in (sender, first, second):
                await layer.aclose()

    got_a, got_b = run(scenario)
    assert got_a == got_b == list(range(50))


@committed
def test_large_messages_and_messages_sent_before_anyone_listened_arrive():
    sender, receiver = _layers(2)
    big = "x" * 50_000  # far over PostgreSQL's 8000-byte NOTIFY payload

    async def scenario():
        try:
            channel = await receiver.new_channel()
            await sender.send(channel, {"type": "early", "n": 1})  # before the receiver's listener exists
            await sender.send(channel, {"type": "big", "text": big})
            first = await asyncio.wait_for(receiver.receive(channel), 5)
            second = await asyncio.wait_for(receiver.receive(channel), 5)
            await sender.send(channel, {"type": "big", "text": big + "y"})  # while listening
            third = await asyncio.wait_for(receiver.receive(channel), 5)
            return first, second, third
        finally:
            await sender.aclose()
            await receiver.aclose()

    first, second, third = run(scenario)
    assert first == {"type": "early", "n": 1}
    assert second["text"] == big and third["text"] == big + "y"


def test_consecutive_tokens_of_one_message_are_merged_and_nothing_else():
    t = lambda m, delta, offset: QueuedToken(1, m, delta, offset, f"text up to {offset + len(delta)}")  # noqa: E731
    items = [t(7, "a", 0), t(7, "b", 1), t(8, "x", 0), QueuedEvent(1, {}), t(7, "c", 2), t(7, "e", 9)]
    merged = _merge_tokens(items)
    assert [(type(i).__name__, getattr(i, "message_id", None), getattr(i, "delta", None)) for i in merged] == [
        ("QueuedToken", 7, "ab"), ("QueuedToken", 8, "x"), ("QueuedEvent", None, None), ("QueuedToken", 7, "c"),
        ("QueuedToken", 7, "e")]
    assert merged[0] == QueuedToken(1, 7, "ab", 0, "text up to 2")  # the later text is the one saved


def test_text_tracker_cuts_overlaps_and_reports_gaps():
    tracker = TextTracker()
    assert tracker.snapshot(5, "Hello wor") == token_event(5, "Hello wor", 0)
    assert tracker.trim(token_event(5, "Hello ", 0)) == (None, None)  # already had it
    assert tracker.trim(token_event(5, "world", 6)) == (token_event(5, "ld", 9), None)
    assert tracker.trim(token_event(5, "!", 11)) == (token_event(5, "!", 11), None)
    assert tracker.trim(token_event(5, "?", 20)) == (None, 12)  # a gap from 12 to 20
    assert tracker.snapshot_from(5, "Hello world! How are", 12) == token_event(5, " How are", 12)
    assert tracker.trim(token_event(6, "New", 0)) == (token_event(6, "New", 0), None)
