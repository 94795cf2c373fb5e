"""The live paths of the isolation matrix: an answer followed over the WebSocket and over SSE holds a
shared document's text only for a reader of its collection; a member removed from the group a
moment ago gets nothing of it, and nobody else can follow someone's conversation."""
from __future__ import annotations

import json

import pytest
from django.test import AsyncClient

from chat.orchestrator import answer_conversation
from chat.services import conversation_create, message_send
from tests.chat.helpers import events_until_final, in_worker_thread, run, session_cookie, ws

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SECRET_WORDS = "quince orchard is pruned in late February"
QUESTION = "When is the quince orchard pruned?"


def _ask(user, conversation) -> int:
    _, answer = message_send(conversation_id=conversation.pk, user=user, content=QUESTION, enqueue=False)
    return answer.pk


def _over_websocket(user, conversation) -> str:
    cookie = session_cookie(user)

    async def scenario():
        communicator = ws(f"/ws/conversations/{conversation.pk}/", cookie=cookie)
        assert (await communicator.connect())[0]
        message_id = await in_worker_thread(_ask, user, conversation)
        answering = in_worker_thread(answer_conversation, conversation.pk)
        events = await events_until_final(communicator, message_id)
        await answering
        await communicator.disconnect()
        return events

    return json.dumps(run(scenario)).replace("**", "")


def _over_sse(user, conversation, *, as_user=None) -> tuple[int, str]:
    message_id = _ask(user, conversation)

    async def scenario():
        client = AsyncClient()
        await client.aforce_login(as_user or user)
        response = await client.get(f"/api/conversations/{conversation.pk}/messages/{message_id}/stream/")
        if response.status_code != 200:
            return response.status_code, response.content.decode()
        answering = in_worker_thread(answer_conversation, conversation.pk)
        body = b"".join([chunk async for chunk in response.streaming_content])
        await answering
        return 200, body.decode()

    status, body = run(scenario)
    return status, body.replace("**", "")


@pytest.mark.parametrize("case,allowed", [("member", True), ("non-member", False),
                                          ("removed from the group", False)])
def test_answers_followed_live_hold_the_text_only_for_readers(kb, case, allowed):
    user = kb.outsider if case == "non-member" else kb.member
    if case == "removed from the group":
        user.groups.remove(kb.readers)
    # The document's words, not the question's: the answer's metadata names the question it searched.
    events = _over_websocket(user, conversation_create(user=user))
    assert ("pruned in late February" in events) == allowed, events[:500]
    status, body = _over_sse(user, conversation_create(user=user))
    assert status == 200
    assert ("pruned in late February" in body) == allowed, body[:500]


def test_nobody_follows_a_readers_conversation(kb):
    conversation = conversation_create(user=kb.member)
    status, body = _over_sse(kb.member, conversation, as_user=kb.outsider)
    assert status == 404 and SECRET_WORDS not in body

    cookie = session_cookie(kb.outsider)

    async def scenario():
        communicator = ws(f"/ws/conversations/{conversation.pk}/", cookie=cookie)
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    assert run(scenario) is False
