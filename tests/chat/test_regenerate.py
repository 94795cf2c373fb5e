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


def test_an_edited_last_question_is_a_new_version_with_its_own_answer_and_history_keeps_the_newest(user, api):
    conversation = conversation_create(user=user)
    first_q, first_a = _answered(conversation, "Who assigns berths?", "The harbour master.")
    asked, said = _answered(conversation, "How long may a ship stay?", "Three days.")
    base = f"/api/conversations/{conversation.pk}/messages/"
    edited = api.post(base, {"content": "How long may a tanker stay?", "edit_of": asked.pk}, format="json")
    assert edited.status_code == 201, edited.content
    question = Message.objects.get(pk=edited.json()["user_message"]["id"])
    assert question.metadata["version_of"] == asked.pk
    assert Message.objects.filter(pk__in=[asked.pk, said.pk]).count() == 2  # the earlier version stays
    # The edited question's own history: the earlier turn, not the version it replaces.
    assert history_for(question) == [{"role": "user", "content": "Who assigns berths?"},
                                     {"role": "assistant", "content": "The harbour master."}]
    answer = Message.objects.get(pk=edited.json()["assistant_message"]["id"])
    Message.objects.filter(pk=answer.pk).update(status="done", content="Two days.")
    busy = api.post(base, {"content": "Again?", "edit_of": question.pk}, format="json")
    assert busy.status_code == 201  # an edit of the edit: a third version of the same question
    assert Message.objects.get(pk=busy.json()["user_message"]["id"]).metadata["version_of"] == asked.pk
    Message.objects.filter(pk=busy.json()["assistant_message"]["id"]).update(status="done", content="One day.")
    later = Message.objects.create(conversation=conversation, role="user", content="And pilots?")
    assert history_for(later) == [{"role": "user", "content": "Who assigns berths?"},
                                  {"role": "assistant", "content": "The harbour master."},
                                  {"role": "user", "content": "Again?"},
                                  {"role": "assistant", "content": "One day."}]
    # Choosing the answer of an earlier version of the question: the only chosen one of the turn.
    assert api.post(f"{base}{answer.pk}/choose/").status_code == 200
    assert api.post(f"{base}{said.pk}/choose/").status_code == 200
    assert list(Message.objects.filter(conversation=conversation, metadata__chosen=True).values_list("pk", flat=True)) == [said.pk]
    Message.objects.filter(pk=later.pk).delete()
    assert api.post(base, {"content": "Once more?", "edit_of": asked.pk}, format="json").status_code == 201
    assert not Message.objects.filter(conversation=conversation, metadata__chosen=True).exists()  # the new one shows


def test_editing_an_earlier_question_branches_the_conversation_there(user, api, client):
    """The edited first question becomes a new version of it; the conversation goes on from there, and
    choosing the earlier version's answer brings the earlier branch (its later turns) back."""
    from chat.threads import thread_path

    conversation = conversation_create(user=user)
    first_q, first_a = _answered(conversation, "Who assigns berths?", "The harbour master.")
    second_q, second_a = _answered(conversation, "How long may a ship stay?", "Three days.")
    base = f"/api/conversations/{conversation.pk}/messages/"
    edited = api.post(base, {"content": "Who assigns anchorages?", "edit_of": first_q.pk}, format="json")
    assert edited.status_code == 201, edited.content
    new_q = Message.objects.get(pk=edited.json()["user_message"]["id"])
    new_a = Message.objects.get(pk=edited.json()["assistant_message"]["id"])
    assert new_q.metadata["version_of"] == first_q.pk and new_q.metadata["after"] is None
    everything = lambda: list(Message.objects.filter(conversation=conversation).order_by("id"))  # noqa: E731
    assert [m.pk for m in thread_path(everything())] == [new_q.pk, new_a.pk]
    assert history_for(new_q) == []  # a first turn again: nothing of the other branch
    Message.objects.filter(pk=new_a.pk).update(status="done", content="The port authority.")
    asked = api.post(base, {"content": "And pilots?"}, format="json").json()["user_message"]
    assert Message.objects.get(pk=asked["id"]).metadata["after"] == new_q.pk
    assert history_for(Message.objects.get(pk=asked["id"])) == [
        {"role": "user", "content": "Who assigns anchorages?"}, {"role": "assistant", "content": "The port authority."}]
    Message.objects.filter(conversation=conversation, status="pending").update(status="done", content="Pilots board.")
    # The reader switches back to the first version's answer: the earlier branch, with its second turn.
    assert api.post(f"{base}{first_a.pk}/choose/").status_code == 200
    assert [m.pk for m in thread_path(everything())] == [first_q.pk, first_a.pk, second_q.pk, second_a.pk]
    client.force_login(user)
    text = client.get(f"/c/{conversation.pk}/export.md").content.decode()
    assert "How long may a ship stay?" in text and "And pilots?" not in text and "The port authority." not in text


def test_the_answer_ending_either_branch_of_an_edited_question_can_be_regenerated_and_its_branch_stays(user, api):
    from chat.threads import thread_path

    conversation = conversation_create(user=user)
    first_q, first_a = _answered(conversation, "Who assigns berths?", "The harbour master.")
    second_q = Message.objects.create(conversation=conversation, role="user", content="How long may a ship stay?",
                                      metadata={"after": first_q.pk})
    second_a = Message.objects.create(conversation=conversation, role="assistant", content="Three days.",
                                      metadata={"question_id": second_q.pk})
    edited_q = Message.objects.create(conversation=conversation, role="user", content="Who assigns anchorages?",
                                      metadata={"version_of": first_q.pk, "after": None})
    edited_a = Message.objects.create(conversation=conversation, role="assistant", content="The port office.",
                                      metadata={"question_id": edited_q.pk, "chosen": True})
    base = f"/api/conversations/{conversation.pk}/messages/"
    # The reader went back to the first version's branch (its answer chosen): its last answer ends a branch.
    assert api.post(f"{base}{first_a.pk}/choose/").status_code == 200
    assert api.post(f"{base}{first_a.pk}/regenerate/").json()["code"] == "not_last_answer"  # a question followed it
    response = api.post(f"{base}{second_a.pk}/regenerate/")
    assert response.status_code == 202, response.content
    fresh = Message.objects.get(pk=response.json()["id"])
    assert fresh.metadata == {"question_id": second_q.pk, "version_of": second_a.pk}
    rows = list(Message.objects.filter(conversation=conversation))
    assert [m.pk for m in thread_path(rows)] == [first_q.pk, first_a.pk, second_q.pk, fresh.pk]  # the branch stays
    Message.objects.filter(pk=fresh.pk).update(status="done")
    # The edited version's branch: its answer ends it too; regenerated, that branch is the one shown.
    again = api.post(f"{base}{edited_a.pk}/regenerate/")
    assert again.status_code == 202, again.content
    rows = list(Message.objects.filter(conversation=conversation))
    assert [m.pk for m in thread_path(rows)] == [edited_q.pk, again.json()["id"]]
    assert not Message.objects.filter(conversation=conversation, metadata__has_key="chosen").exists()


def test_regenerating_on_an_earlier_versions_branch_chooses_the_new_answer(user, api):
    """An earlier version of an edited question is shown only by a chosen answer: the new one is chosen."""
    from chat.threads import thread_path

    conversation = conversation_create(user=user)
    first_q, first_a = _answered(conversation, "Who assigns berths?", "The harbour master.")
    edited_q = Message.objects.create(conversation=conversation, role="user", content="Who assigns anchorages?",
                                      metadata={"version_of": first_q.pk, "after": None})
    Message.objects.create(conversation=conversation, role="assistant", content="The port office.",
                           metadata={"question_id": edited_q.pk})
    base = f"/api/conversations/{conversation.pk}/messages/"
    assert api.post(f"{base}{first_a.pk}/choose/").status_code == 200
    response = api.post(f"{base}{first_a.pk}/regenerate/")
    assert response.status_code == 202, response.content
    assert response.json()["metadata"]["chosen"] is True
    rows = list(Message.objects.filter(conversation=conversation))
    assert [m.pk for m in thread_path(rows)] == [first_q.pk, response.json()["id"]]
    assert Message.objects.filter(conversation=conversation, metadata__has_key="chosen").count() == 1
