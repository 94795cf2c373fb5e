"""Regenerate (issue #32): a new version of the last answer, kept beside the earlier one, written by the
answerer with the same question; the history of later questions holds only the newest version."""
from __future__ import annotations

import pytest

from chat.generation import history_for
from chat.models import Message
from chat.orchestrator import answer_conversation
from chat.services import conversation_create, message_send
from tests.chat.helpers import indexed

pytestmark = pytest.mark.django_db

HARBOUR = "The harbour master assigns berths to arriving ships. Pilots must board ships longer than 80 metres."


def _answered(conversation, question: str, answer: str) -> tuple[Message, Message]:
    asked = Message.objects.create(conversation=conversation, role="user", content=question)
    said = Message.objects.create(conversation=conversation, role="assistant", content=answer,
                                  metadata={"question_id": asked.pk, "mode": "documents"})
    return asked, said


def test_the_last_answer_gets_a_new_version_written_by_the_answerer(user, api, chat_ai):
    document = indexed(user, HARBOUR, "harbour.txt")
    conversation = conversation_create(user=user, document_ids=[document.pk])
    chat_ai.script_chat("The harbour master assigns berths [S1].")
    question, first = message_send(conversation_id=conversation.pk, user=user, content="Who assigns berths?",
                                   enqueue=False)
    answer_conversation(conversation.pk)
    chat_ai.script_chat("Berths are assigned by the harbour master [S1].")
    response = api.post(f"/api/conversations/{conversation.pk}/messages/{first.pk}/regenerate/")
    assert response.status_code == 202, response.content
    fresh = response.json()
    assert fresh["status"] == "pending" and fresh["id"] != first.pk
    assert fresh["metadata"] == {"question_id": question.pk, "version_of": first.pk}
    busy = api.post(f"/api/conversations/{conversation.pk}/messages/{first.pk}/regenerate/")
    assert busy.status_code == 409 and busy.json()["code"] == "answer_in_progress"
    answer_conversation(conversation.pk)
    versions = list(Message.objects.filter(conversation=conversation, role="assistant").order_by("id"))
    assert [v.content for v in versions] == ["The harbour master assigns berths [S1].",
                                             "Berths are assigned by the harbour master [S1]."]
    assert versions[1].status == "done" and versions[1].metadata["version_of"] == first.pk
    assert versions[1].metadata["question_id"] == question.pk and versions[1].sources[0]["source_id"] == "S1"


def test_only_the_last_questions_answer_of_ones_own_can_be_regenerated(user, api, other_api):
    conversation = conversation_create(user=user)
    first_question, first = _answered(conversation, "One?", "One.")
    _, second = _answered(conversation, "Two?", "Two.")
    base = f"/api/conversations/{conversation.pk}/messages/"
    late = api.post(f"{base}{first.pk}/regenerate/")
    assert late.status_code == 409 and late.json()["code"] == "not_last_answer"
    assert api.post(f"{base}{first_question.pk}/regenerate/").json()["code"] == "not_an_answer"
    assert other_api.post(f"{base}{second.pk}/regenerate/").status_code == 404
    assert api.post(f"{base}{second.pk}/regenerate/").status_code == 202
    assert Message.objects.filter(conversation=conversation).count() == 5  # nothing replaced


def test_later_questions_see_only_the_newest_version_of_an_answer(user):
    conversation = conversation_create(user=user)
    asked, _old = _answered(conversation, "Who assigns berths?", "Old version.")
    Message.objects.create(conversation=conversation, role="assistant", content="New version.",
                           metadata={"question_id": asked.pk, "version_of": _old.pk})
    later = Message.objects.create(conversation=conversation, role="user", content="And pilots?")
    assert history_for(later) == [{"role": "user", "content": "Who assigns berths?"},
                                  {"role": "assistant", "content": "New version."}]


def test_the_chosen_version_is_remembered_on_the_server_and_a_new_version_is_shown_next(user, api, other_api):
    conversation = conversation_create(user=user)
    asked, old = _answered(conversation, "Who assigns berths?", "Old version.")
    new = Message.objects.create(conversation=conversation, role="assistant", content="New version.", status="done",
                                 metadata={"question_id": asked.pk, "version_of": old.pk})
    base = f"/api/conversations/{conversation.pk}/messages/"
    chose = api.post(f"{base}{old.pk}/choose/")
    assert chose.status_code == 200 and chose.json()["metadata"]["chosen"] is True
    assert api.post(f"{base}{new.pk}/choose/").status_code == 200
    shown = {m["id"]: m["metadata"].get("chosen") for m in api.get(base).json()["results"] if m["role"] == "assistant"}
    assert shown == {old.pk: None, new.pk: True}  # one chosen version per question, read with the history
    assert api.post(f"{base}{asked.pk}/choose/").json()["code"] == "not_an_answer"
    assert other_api.post(f"{base}{old.pk}/choose/").status_code == 404
    assert api.post(f"{base}{new.pk}/regenerate/").status_code == 202  # a new version: shown, nothing chosen
    assert not Message.objects.filter(conversation=conversation, metadata__has_key="chosen").exists()
