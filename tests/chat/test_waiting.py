"""A question naming an attached document that is not indexed yet is answered with where indexing stands."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.orchestrator import answer_conversation
from chat.services import conversation_create, message_retry, message_send
from chat.waiting import names_document
from documents.models import Document
from core.errors import Conflict
from retrieval.tasks import index_document
from retrieval.models import RetrievalSettings
from tests.chat.helpers import indexed
from tests.documents.factories import upload_bytes

CHAT = "/v1/chat/completions"
HARBOUR = "The harbour master assigns berths to arriving ships. Tide tables are published every Monday."
MANUAL = "The crane manual says the boom must be lowered when the wind exceeds 60 km/h."


def ask(user, conversation, question: str) -> Message:
    _, answer = message_send(conversation_id=conversation.pk, user=user, content=question, enqueue=False)
    answer_conversation(conversation.pk)
    answer.refresh_from_db()
    return answer


def not_indexed(user, **fields) -> Document:
    """The crane manual, uploaded but not indexed (its indexing task never runs in these tests)."""
    document = upload_bytes(user, MANUAL.encode(), "Crane_Manual.txt", title="Crane manual 2024")
    Document.objects.filter(pk=document.pk).update(**fields)
    document.refresh_from_db()
    return document


@pytest.mark.parametrize("question, named", [
    ("What does crane_manual.txt say about wind?", True),
    ("What does the CRANE MANUAL say about wind?", True),  # file name without extension, any case
    ("In crane manual 2024, when is the boom lowered?", True),  # the title
    ("what about Crane-Manual?", True),
    ("What does the crane say about wind?", False),
    ("What does the crane manuals index say?", False),  # whole words only
])
def test_a_document_is_named_by_title_or_file_name_with_or_without_extension(question, named):
    document = Document(title="Crane manual 2024", original_filename="Crane_Manual.txt")
    assert names_document(question, document) is named


def test_very_short_names_never_match():
    assert not names_document("is it in a document?", Document(title="it", original_filename="a.txt"))


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["context", "agentic"])
def test_a_question_naming_a_document_still_indexing_says_so_with_its_progress(user, chat_ai, mode):
    chat_ai.chat_row.capabilities = {**chat_ai.chat_row.capabilities, "tools": True}
    chat_ai.chat_row.save()
    RetrievalSettings.objects.filter(pk=1).update(chat_mode=mode)
    harbour = indexed(user, HARBOUR, "harbour.txt")
    manual = not_indexed(user, status="processing", pages_total=120, pages_done=37)
    conversation = conversation_create(user=user, document_ids=[harbour.pk, manual.pk])

    answer = ask(user, conversation, "What does the crane manual say about wind?")

    assert answer.status == "done", answer.error
    meta = answer.metadata
    assert meta["mode"] == "waiting"
    assert "“Crane_Manual.txt” is still being indexed (37 of 120 pages)" in answer.content
    assert "This question will be answered here automatically when it is ready" in answer.content
    assert meta["waiting_for_documents"] == [{"document_id": manual.pk, "name": "Crane_Manual.txt",
                                              "status": "processing", "progress": "37 of 120 pages"}]
    assert answer.sources == [] and meta["citations"] == []
    assert chat_ai.requests_to(CHAT) == []  # nothing answered from nothing

    # A question that does not name it is answered from what is indexed.
    chat_ai.script_chat({"content": "The harbour master [S1].", "tool_calls": []} if mode == "context" else
                        {"content": "", "tool_calls": [{"name": "search_documents", "arguments": {"query": "berths"}}]},
                        "The harbour master [S1].")
    other = ask(user, conversation, "Who assigns berths?")
    assert other.status == "done" and other.metadata["mode"] == ("documents" if mode == "context" else "agent")
    assert other.metadata["citations"][0]["document_id"] == harbour.pk


@pytest.mark.django_db
def test_the_waiting_answer_can_be_asked_again_once_the_document_is_indexed(user, chat_ai, api):
    manual = not_indexed(user, status="uploaded")
    conversation = conversation_create(user=user, document_ids=[manual.pk])
    answer = ask(user, conversation, "When does crane_manual.txt say to lower the boom?")
    assert answer.metadata["mode"] == "waiting"
    assert "“Crane_Manual.txt” is waiting to be indexed" in answer.content
    assert answer.metadata["waiting_for_documents"][0]["status"] == "uploaded"
    shown = api.get(f"/api/conversations/{conversation.pk}/messages/{answer.pk}/retrieval/").json()
    assert shown["mode"] == "waiting" and shown["waiting_for_documents"][0]["document_id"] == manual.pk

    index_document(manual.pk)
    chat_ai.script_chat("Lower the boom when the wind exceeds 60 km/h [S1].")
    response = api.post(f"/api/conversations/{conversation.pk}/messages/{answer.pk}/retry/")
    assert response.status_code == 202 and response.json()["status"] == "pending"
    answer_conversation(conversation.pk)
    answer.refresh_from_db()
    assert answer.status == "done" and answer.metadata["mode"] == "documents"
    assert answer.metadata["retries"] == 1
    assert answer.metadata["citations"][0]["document_id"] == manual.pk
    assert "waiting_for_documents" not in answer.metadata
    # A finished answer that did not wait cannot be retried.
    with pytest.raises(Conflict):
        message_retry(conversation_id=conversation.pk, message_id=answer.pk, user=user)


@pytest.mark.django_db
def test_a_named_document_that_failed_is_reported_with_its_error(user, chat_ai):
    manual = not_indexed(user, status="failed", index_error="The PDF is encrypted and has no password.")
    conversation = conversation_create(user=user, document_ids=[manual.pk])
    answer = ask(user, conversation, "What does the crane manual say?")
    assert answer.metadata["mode"] == "waiting"
    assert answer.content == ("“Crane_Manual.txt” could not be indexed: The PDF is encrypted and has no password. "
                              "Re-index it from your library, then ask again.")
    assert answer.metadata["waiting_for_documents"] == [{
        "document_id": manual.pk, "name": "Crane_Manual.txt", "status": "failed",
        "index_error": "The PDF is encrypted and has no password."}]
    assert chat_ai.requests_to(CHAT) == []


@pytest.mark.django_db
def test_a_document_being_reindexed_still_answers(user, chat_ai):
    manual = indexed(user, MANUAL, "Crane_Manual.txt")
    Document.objects.filter(pk=manual.pk).update(status="reindexing")
    conversation = conversation_create(user=user, document_ids=[manual.pk])
    chat_ai.script_chat("Lower the boom above 60 km/h [S1].")
    answer = ask(user, conversation, "What does the crane manual say?")
    assert answer.metadata["mode"] == "documents" and answer.metadata["citations"]


@pytest.mark.django_db
def test_a_question_naming_nothing_waits_when_the_indexed_part_does_not_answer_it(user, chat_ai):
    harbour = indexed(user, HARBOUR, "harbour.txt")
    manual = not_indexed(user, status="processing", pages_total=4, pages_done=1)
    conversation = conversation_create(user=user, document_ids=[harbour.pk, manual.pk])
    # "Summarise it" right after the upload: the harbour notes do not answer it, so it waits.
    answer = ask(user, conversation, "When must the boom be lowered because of wind?")
    assert answer.metadata["mode"] == "waiting"
    assert [d["document_id"] for d in answer.metadata["waiting_for_documents"]] == [manual.pk]
    assert "“Crane_Manual.txt” is still being indexed (1 of 4 pages)" in answer.content
    assert chat_ai.requests_to(CHAT) == []
    # A failed document is not waited for unless named: the indexed part answers what it can.
    Document.objects.filter(pk=manual.pk).update(status="failed", index_error="Broken file.")
    chat_ai.script_chat("The documents do not say [S1].")
    again = ask(user, conversation, "When must the boom be lowered because of wind?")
    assert again.metadata["mode"] == "documents"


@pytest.mark.django_db
def test_the_waiting_answer_is_answered_by_itself_when_the_document_is_indexed(user, chat_ai,
                                                                              django_capture_on_commit_callbacks):
    manual = not_indexed(user, status="uploaded")
    conversation = conversation_create(user=user, document_ids=[manual.pk])
    answer = ask(user, conversation, "Summarise this document.")
    assert answer.metadata["mode"] == "waiting"
    assert "will be answered here automatically when it is ready" in answer.content

    chat_ai.script_chat("Lower the boom when the wind exceeds 60 km/h [S1].")
    with django_capture_on_commit_callbacks(execute=True):  # the indexing's commit announces it
        index_document(manual.pk)
    answer.refresh_from_db()
    assert answer.status == "pending" and answer.metadata["retries"] == 1
    answer_conversation(conversation.pk)  # what the chat worker does with the queued task
    answer.refresh_from_db()
    assert answer.status == "done" and answer.metadata["mode"] == "documents"
    assert answer.metadata["citations"][0]["document_id"] == manual.pk


@pytest.mark.django_db
def test_retrying_an_answer_already_queued_again_returns_it_unchanged(user, chat_ai):
    manual = not_indexed(user, status="uploaded")
    conversation = conversation_create(user=user, document_ids=[manual.pk])
    answer = ask(user, conversation, "Summarise this document.")
    from chat.services import waiting_answers_requeue

    assert waiting_answers_requeue(document_id=manual.pk) == 1
    again = message_retry(conversation_id=conversation.pk, message_id=answer.pk, user=user)
    assert again.status == "pending" and again.metadata["retries"] == 1  # not counted twice
