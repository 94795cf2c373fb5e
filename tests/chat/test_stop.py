"""Stop while streaming (issue #32): the reader's Stop reaches the answerer between streamed chunks, what
was written stays, and the answer ends as done and marked stopped."""
from __future__ import annotations

import time

import pytest

from chat.models import Message
from chat.orchestrator import answer_conversation
from chat.services import conversation_create, message_send
from tests.chat.helpers import indexed

BRIDGE = "The suspension bridge over the river was opened in 1932. It is 450 metres long."


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_stop_is_honoured_by_the_worker_and_keeps_what_was_streamed(user, api, chat_ai, chat_qcluster):
    document = indexed(user, BRIDGE, "bridge.txt")
    conversation = conversation_create(user=user, document_ids=[document.pk])
    pieces = [f"word{n} " for n in range(300)] + ["[S1]."]
    chat_ai.script_chat({"chunks": pieces, "piece_delay": 1.0})  # 5 minutes when not stopped
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="How long is the bridge?")
    url = f"/api/conversations/{conversation.pk}/messages/{answer.pk}/"
    deadline = time.monotonic() + 240
    while not Message.objects.get(pk=answer.pk).content and time.monotonic() < deadline:
        time.sleep(0.05)  # streaming, some of it saved
    assert Message.objects.get(pk=answer.pk).status == "streaming"
    stopped_at = time.monotonic()
    response = api.post(url + "stop/")
    assert response.status_code == 202, response.content
    while Message.objects.get(pk=answer.pk).status == "streaming" and time.monotonic() < deadline:
        time.sleep(0.05)
    took = time.monotonic() - stopped_at
    stored = api.get(url).json()
    full = "".join(pieces)
    assert stored["status"] == "done" and stored["metadata"]["stopped"] is True, stored
    assert stored["content"] and full.startswith(stored["content"]) and len(stored["content"]) < len(full) // 2
    assert took < 120, took  # ended between chunks, long before the model's 5-minute stream would have
    # A finished answer is returned as it is.
    again = api.post(url + "stop/")
    assert again.status_code == 202 and again.json()["content"] == stored["content"]


@pytest.mark.django_db
def test_a_queued_answer_stops_at_once_and_is_never_written(user, api, other_api):
    conversation = conversation_create(user=user)
    question, answer = message_send(conversation_id=conversation.pk, user=user, content="Anything?", enqueue=False)
    base = f"/api/conversations/{conversation.pk}/messages/"
    assert other_api.post(f"{base}{answer.pk}/stop/").status_code == 404
    refused = api.post(f"{base}{question.pk}/stop/")
    assert refused.status_code == 400 and refused.json()["code"] == "not_an_answer"
    response = api.post(f"{base}{answer.pk}/stop/")
    assert response.status_code == 202
    assert response.json()["status"] == "done" and response.json()["metadata"]["stopped"] is True
    assert answer_conversation(conversation.pk) == "answered 0"  # the answerer leaves it alone
    assert Message.objects.get(pk=answer.pk).content == ""


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_queued_answer_stopped_is_told_live_to_the_pages_following_the_conversation(user):
    from chat.services import message_stop
    from tests.chat.helpers import in_worker_thread, run, session_cookie, ws

    conversation = conversation_create(user=user)
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Anything?", enqueue=False)
    cookie = session_cookie(user)

    async def scenario():
        page = ws(f"/ws/conversations/{conversation.pk}/", cookie=cookie)
        assert (await page.connect())[0]
        first = await page.receive_json_from(timeout=120)  # what the page joined with: the waiting answer
        await in_worker_thread(lambda: message_stop(conversation_id=conversation.pk, message_id=answer.pk, user=user))
        told = await page.receive_json_from(timeout=120)
        await page.disconnect()
        return first, told

    first, told = run(scenario)
    assert first["type"] == "message.status_updated" and first["message"]["status"] == "pending"
    assert told["type"] == "message.status_updated" and told["message"]["id"] == answer.pk
    assert told["message"]["status"] == "done" and told["message"]["metadata"]["stopped"] is True
