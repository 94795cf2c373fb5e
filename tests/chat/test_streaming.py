"""Live events over the WebSocket and SSE, with a real channel layer on PostgreSQL and the fake AI server."""
from __future__ import annotations

import asyncio
import json

import pytest
from django.test import AsyncClient

from chat.models import Message
from chat.orchestrator import answer_conversation
from chat.services import conversation_create, message_send
from identity.tokens import token_create
from tests.chat.helpers import events_until_final, in_worker_thread, indexed, run, session_cookie, streamed_text, ws

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BRIDGE = ("The suspension bridge over the river was opened in 1932 after four years of construction. "
          "It is 450 metres long.")


def _ask_in_background(user, conversation, question: str):
    def ask():
        _, answer = message_send(conversation_id=conversation.pk, user=user, content=question, enqueue=False)
        answer_conversation(conversation.pk)
        return answer.pk

    return in_worker_thread(ask)


async def _sse_events(response, *, stop_after_tokens: int | None = None) -> list[dict]:


    events, buffer, tokens = [], b"", 0
    async for chunk in response.streaming_content:
        buffer += chunk
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            for line in block.decode().splitlines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
                    tokens += events[-1]["type"] == "token"
        if stop_after_tokens is not None and tokens >= stop_after_tokens:
            await response.streaming_content.aclose()  # the client goes away mid-answer
            break
    return events


@pytest.fixture
def bridge(user, chat_ai):
    document = indexed(user, BRIDGE, "bridge.txt")
    return conversation_create(user=user, document_ids=[document.pk]), chat_ai


def test_tokens_arrive_in_order_over_the_websocket(user, bridge):
    conversation, ai = bridge
    pieces = ["The bridge ", "opened ", "in 1932 ", "[S1]", ".\n\n", "It is ", "450 m ", "long ", "[S1]."]
    ai.script_chat({"chunks": pieces, "piece_delay": 0.01})
    cookie = session_cookie(user)

    async def scenario():
        communicator = ws(f"/ws/conversations/{conversation.pk}/", cookie=cookie)
        assert (await communicator.connect())[0]
        message_id = await _ask_in_background(user, conversation, "When did the bridge open?")
        events = await events_until_final(communicator, message_id)
        await communicator.disconnect()
        return message_id, events

    message_id, events = run(scenario)
    assert streamed_text(events, message_id) == "".join(pieces)
    assert sum(e["type"] == "token" for e in events) > 1  # streamed, not sent at the end
    types = [e["type"] for e in events]
    assert types[0] == "message.status_updated" and events[0]["message"]["status"] == "streaming"
    assert types.index("sources") < types.index("token")
    [sources] = [e for e in events if e["type"] == "sources"]
    assert sources["sources"][0]["source_id"] == "S1" and sources["sources"][0]["document_name"] == "bridge.txt"
    final = events[-1]["message"]
    assert final["status"] == "done"
    assert final["content"] == "The bridge opened in 1932 [S1].\n\nIt is 450 m long [S1]."
    assert final["metadata"]["citations"][0]["document_name"] == "bridge.txt"


def _pending_answer(user, conversation) -> int:
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="How long is the bridge?",
                             enqueue=False)
    return answer.pk


def test_tokens_arrive_in_order_over_sse(user, bridge):
    conversation, ai = bridge
    pieces = [f"piece{n} " for n in range(30)] + ["[S1]."]
    ai.script_chat({"chunks": pieces, "piece_delay": 0.005})
    message_id = _pending_answer(user, conversation)

    async def scenario():
        client = AsyncClient()
        await client.aforce_login(user)
        response = await client.get(f"/api/conversations/{conversation.pk}/messages/{message_id}/stream/")
        assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
        answering = in_worker_thread(answer_conversation, conversation.pk)
        events = await _sse_events(response)
        await answering
        return events

    events = run(scenario)
    assert events[0] == {"type": "message.status_updated", "message": events[0]["message"]}
    assert events[0]["message"]["status"] == "pending"
    assert streamed_text(events, message_id) == "".join(pieces)
    assert sum(e["type"] == "token" for e in events) > 1
    assert events[-1]["message"]["status"] == "done"
    assert events[-1]["message"]["content"] == "".join(pieces[:-1]) + "[S1]."
    assert sum(e["type"] == "sources" for e in events) == 1


def test_a_client_that_leaves_mid_answer_does_not_stop_it_and_a_late_one_gets_all_of_it(user, bridge):
    conversation, ai = bridge
    pieces = [f"word{n} " for n in range(40)] + ["[S1]."]
    ai.script_chat({"chunks": pieces, "piece_delay": 0.02})
    cookie = session_cookie(user)

    async def scenario():
        early = ws(f"/ws/conversations/{conversation.pk}/", cookie=cookie)
        assert (await early.connect())[0]
        answering = _ask_in_background(user, conversation, "How long is the bridge?")
        first = await early.receive_json_from(timeout=120)  # status: streaming
        message_id = first["message"]["id"]
        early_events = [first]
        while sum(e["type"] == "token" for e in early_events) < 10:
            early_events.append(await early.receive_json_from(timeout=120))
        # A second WebSocket and an SSE client join mid-answer; the SSE client leaves again early.
        late = ws(f"/ws/conversations/{conversation.pk}/", cookie=cookie)
        assert (await late.connect())[0]
        client = AsyncClient()
        await client.aforce_login(user)
        leaving = await client.get(f"/api/conversations/{conversation.pk}/messages/{message_id}/stream/")
        left = await _sse_events(leaving, stop_after_tokens=2)
        late_sse = await client.get(f"/api/conversations/{conversation.pk}/messages/{message_id}/stream/")
        late_sse_events = await _sse_events(late_sse)
        late_events = await events_until_final(late, message_id)
        early_events += await events_until_final(early, message_id)
        await answering
        await early.disconnect()
        await late.disconnect()
        return message_id, early_events, late_events, left, late_sse_events

    message_id, early_events, late_events, left, late_sse_events = run(scenario)
    full = "".join(pieces)
    assert streamed_text(early_events, message_id) == full
    assert streamed_text(late_events, message_id) == full  # saved text first (offset 0), then the rest
    assert late_events[0]["type"] == "message.status_updated" and late_events[0]["message"]["status"] == "streaming"
    assert late_events[1]["type"] == "sources" and late_events[1]["sources"][0]["source_id"] == "S1"
    assert late_events[2]["type"] == "token" and late_events[2]["offset"] == 0 and len(late_events[2]["delta"]) > 0
    assert sum(e["type"] == "sources" for e in late_events) == 1
    assert sum(e["type"] == "sources" for e in late_sse_events) == 1
    assert streamed_text(late_sse_events, message_id) == full
    assert 0 < len(streamed_text(left, message_id)) < len(full)
    answer = Message.objects.get(pk=message_id)
    assert answer.status == "done" and answer.content == full


def test_the_websocket_admits_the_owner_only(user, other_user):
    conversation = conversation_create(user=user)
    mine, theirs = token_create(user=user, name="test").key, token_create(user=other_user, name="test").key
    path = f"/ws/conversations/{conversation.pk}/"
    cookies = {user.pk: session_cookie(user), other_user.pk: session_cookie(other_user)}

    async def scenario():
        results = {}
        for name, communicator in {
            "anonymous": ws(path),
            "other user's session": ws(path, cookie=cookies[other_user.pk]),
            "other user's token": ws(path, headers=[(b"authorization", f"Token {theirs}".encode())]),
            "other user's token as subprotocol": ws(path, subprotocols=["ragsite.bearer", theirs]),
            "unknown conversation": ws("/ws/conversations/999999/", cookie=cookies[user.pk]),
            "owner's session": ws(path, cookie=cookies[user.pk]),
            "owner's token": ws(path, headers=[(b"authorization", f"Token {mine}".encode())]),
            "owner's token as subprotocol": ws(path, subprotocols=["ragsite.bearer", mine]),
        }.items():
            connected, subprotocol = await communicator.connect()
            results[name] = connected
            if connected:
                # The server names the subprotocol, never echoes the token.
                assert subprotocol == ("ragsite.bearer" if "subprotocol" in name else None)
                await communicator.send_json_to({"type": "ping"})
                assert await communicator.receive_json_from() == {"type": "pong"}
            await communicator.disconnect()
        return results

    results = run(scenario)
    assert results == {
        "anonymous": False, "other user's session": False, "other user's token": False,
        "other user's token as subprotocol": False, "unknown conversation": False,
        "owner's session": True, "owner's token": True, "owner's token as subprotocol": True,
    }


@pytest.mark.parametrize("how", ["token revoked", "session logged out"])
def test_an_open_sse_stream_ends_when_its_token_or_session_does(user, bridge, settings, how):
    from asgiref.sync import sync_to_async
    from django.test import Client

    from identity.tokens import token_revoke

    settings.WEBSOCKET_AUTH_RECHECK = 0.2
    conversation, _ = bridge
    message_id = _pending_answer(user, conversation)  # nobody answers it: the stream waits
    token = token_create(user=user, name="sse")
    browser = Client()
    browser.force_login(user)

    async def scenario():
        client = AsyncClient()
        headers = {"Authorization": f"Token {token.key}"} if how == "token revoked" else {}
        if how == "session logged out":
            client.cookies = browser.cookies
        response = await client.get(f"/api/conversations/{conversation.pk}/messages/{message_id}/stream/",
                                    headers=headers)
        assert response.status_code == 200
        stream = response.streaming_content.__aiter__()
        first = await stream.__anext__()
        assert b"message.status_updated" in first
        if how == "token revoked":
            await sync_to_async(token_revoke)(user=user, token_id=token.pk)
        else:
            await sync_to_async(browser.post)("/accounts/logout/")
        rest = b""
        async with asyncio.timeout(5):  # before: the stream waited for the answer, for ever
            async for chunk in stream:
                rest += chunk
        return rest

    rest = run(scenario)
    event = json.loads(rest.split(b"data: ", 1)[1].split(b"\n\n")[0])
    assert event["type"] == "error" and event["code"] == "signed_out"
