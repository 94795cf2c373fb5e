"""Answers against the local fake AI server: citations by tag, failures and retry, extractive and plain modes."""
from __future__ import annotations

import json
from datetime import timedelta

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from django_q.models import OrmQ

from chat.answering import MODEL_UNAVAILABLE_NOTICE
from chat.extractive import NO_LLM_NOTE
from core.layers import conninfo_for
from chat.models import Message
from chat.orchestrator import LOCK_NAMESPACE, answer_conversation
from chat.tasks import recover_interrupted_answers
from chat.prompts import PLAIN_SYSTEM_PROMPT
from chat.services import conversation_create, message_retry, message_send
from documents.models import Chunk, DocumentText
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import KnowledgeEntry, RetrievalSettings
from tests.chat.helpers import indexed, safety_manual_conversation
from tests.processes import wait_for

pytestmark = pytest.mark.django_db

HARBOUR = ("The harbour master assigns berths to arriving ships. Tide tables are published every Monday. "
           "Pilots must board ships longer than 80 metres.")


def ask(user, conversation, question: str, **kwargs) -> Message:
    _, answer = message_send(conversation_id=conversation.pk, user=user, content=question, enqueue=False, **kwargs)
    answer_conversation(conversation.pk)
    answer.refresh_from_db()
    return answer


@pytest.fixture
def harbour(user, chat_ai):
    """A conversation with one indexed document attached: (conversation, the fake AI server)."""
    document = indexed(user, HARBOUR, "harbour.txt")
    return conversation_create(user=user, document_ids=[document.pk]), chat_ai


def test_cited_answer_keeps_real_tags_drops_made_up_ones_and_stores_its_evidence(user, chat_ai, tmp_path):
    conversation, document = safety_manual_conversation(user, tmp_path)
    chat_ai.script_chat("The scaffold is inspected every seven days [S1].\n\nIt must be done by a "
                        "competent person [S1][S42].")
    answer = ask(user, conversation, "How often is the scaffold inspected?")

    assert answer.status == "done", answer.error
    assert answer.content == ("The scaffold is inspected every seven days [S1].\n\n"
                              "It must be done by a competent person [S1].")
    meta = answer.metadata
    assert meta["invalid_citations"] == 1 and meta["invalid_tags"] == ["S42"]
    assert [s["source_ids"] for s in meta["sections"]] == [["S1"], ["S1"]]
    [citation] = meta["citations"]
    chunk = Chunk.objects.get(pk=citation["chunk_id"])
    text = DocumentText.objects.get(document=document).text
    assert citation["page_number"] == 2 == chunk.page_number
    # Both of the PDF's chunks are among the passages given and in one section: they are one passage
    # (retrieval/search/neighbours.py), cited by both ids, at the better-ranked chunk's page.
    joined = citation["joined_chunk_ids"]
    first, last = Chunk.objects.get(pk=joined[0]), Chunk.objects.get(pk=joined[-1])
    assert chunk.pk in joined and len(joined) == 2
    assert text[citation["start_offset"]:citation["end_offset"]] == text[first.start_offset:last.end_offset]
    assert chunk.content in text[citation["start_offset"]:citation["end_offset"]]
    assert "scaffold" in chunk.content.lower()
    assert citation["document_id"] == document.pk and citation["document_name"] == "safety.pdf"
    assert answer.sources == [{"source_id": "S1", "source_type": "document", "document_id": document.pk,
                               "document_name": "safety.pdf", "document_version": 1,
                               "chunk_index": chunk.chunk_index, "page_number": 2,
                               "page_label": None,  # the PDF prints no page numbers: the index is the label
                               "qa_id": None, "score": meta["retrieved_segments"][0]["score"],
                               "preview": citation["snippet_preview"], "tier": 2, "collection": None,
                               "distance": meta["retrieved_segments"][0]["distance"],
                               "similarity": round(1 - meta["retrieved_segments"][0]["distance"], 4)}]
    usage = meta["llm_usage"]
    assert usage["model"] == "fake-chat" and usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert meta["retrieval"]["scope"] == "attached" and meta["mode"] == "documents"
    assert meta["retrieved_segments"][0]["source_id"] == "S1"
    assert meta["context_sources"][0]["source_id"] == "S1"
    # The model saw the passages framed as data, tagged, with the question last.
    sent = chat_ai.requests_to("/v1/chat/completions")[-1]["json"]["messages"]
    assert sent[-1]["role"] == "user" and "[S1]" in sent[-1]["content"] and "<context>" in sent[-1]["content"]


def test_json_answers_are_parsed_into_sections(user, harbour):
    conversation, ai = harbour
    ai.chat_row.capabilities = {**ai.chat_row.capabilities, "json_answers": True}
    ai.chat_row.save()
    ai.script_chat(json.dumps({"sections": [{"text": "Berths are assigned by the harbour master.",
                                             "source_ids": ["S1", "S7"]}]}))
    answer = ask(user, conversation, "Who assigns berths?")
    assert answer.status == "done", answer.error
    assert answer.metadata["answer_format"] == "json"
    assert answer.content == "Berths are assigned by the harbour master."
    assert answer.metadata["sections"][0]["source_ids"] == ["S1"]
    assert answer.metadata["invalid_citations"] == 1
    assert ai.requests_to("/v1/chat/completions")[-1]["json"]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("fault, times, expected", [
    ({"status": 500}, 4, "500"),
    ({"stall_after": 2, "stall_seconds": 3}, 1, "stopped sending data mid-answer"),
    ({"malformed": True}, 1, "invalid response"),
])
def test_server_failures_give_the_marked_extractive_answer_and_retry_asks_the_model(user, harbour, fault, times,
                                                                                    expected):
    # Issue #30: a failing chat server is no dead end; the passages are quoted under a notice (it was a failed
    # answer with the error before).
    conversation, ai = harbour
    ai.script_chat("Pilots board ships longer than 80 metres [S1].", "Pilots board long ships [S1].")
    ai.fail_next("/v1/chat/completions", fault, times=times)
    down = ask(user, conversation, "When must a pilot board?")
    assert down.status == "done" and down.metadata["mode"] == "extractive"
    assert down.metadata["model_unavailable"] in ("error", "timeout")
    assert down.content.startswith(str(MODEL_UNAVAILABLE_NOTICE)) and down.sources  # cited passages
    failure = down.metadata["retrieval"]["model_failure"]["error"]
    assert expected in failure and "fake chat" in failure and "Traceback" not in failure, failure
    assert "Pilots board " not in down.content  # what had streamed is replaced by the quoted answer
    ai.reset()
    ai.script_chat("Pilots board ships longer than 80 metres [S1].")
    message_retry(conversation_id=conversation.pk, message_id=down.pk, user=user)
    answer_conversation(conversation.pk)
    down.refresh_from_db()
    assert down.status == "done" and down.error == "" and down.metadata["mode"] == "documents"
    assert down.content == "Pilots board ships longer than 80 metres [S1]."
    assert down.metadata["retries"] == 1


def test_chat_server_down_gives_the_extractive_answer_without_its_address_and_retry_works(user, harbour):
    conversation, ai = harbour
    ai.chat_row.base_url = "http://127.0.0.1:9"  # nothing listens on the discard port
    ai.chat_row.save()
    down = ask(user, conversation, "Who assigns berths?")
    assert down.status == "done" and down.metadata["mode"] == "extractive"
    failure = down.metadata["retrieval"]["model_failure"]["error"]
    assert "not reachable" in failure and "127.0.0.1" not in failure and "127.0.0.1" not in down.content, failure
    ai.chat_row.base_url = ai.url
    ai.chat_row.save()
    ai.script_chat("The harbour master [S1].")
    message_retry(conversation_id=conversation.pk, message_id=down.pk, user=user)
    answer_conversation(conversation.pk)
    down.refresh_from_db()
    assert down.status == "done" and down.metadata["mode"] == "documents"


def test_without_a_chat_server_the_answer_is_extractive_and_cited(user, fake_embedder):
    document = indexed(user, HARBOUR, "harbour.txt")
    conversation = conversation_create(user=user)
    answer = ask(user, conversation, "Who assigns berths to ships?")
    assert answer.status == "done", answer.error
    assert answer.content.startswith(NO_LLM_NOTE)
    assert "assigns berths to arriving ships" in answer.content
    meta = answer.metadata
    assert meta["mode"] == "extractive" and meta["llm_usage"]["model"] == "extractive"
    assert meta["sections"][0]["source_ids"] == []  # the note
    assert meta["sections"][1]["source_ids"] == ["S1"]
    assert meta["citations"][0]["document_id"] == document.pk
    assert answer.sources[0]["document_id"] == document.pk
    assert not fake_embedder.requests_to("/v1/chat/completions")


def test_with_retrieval_off_it_is_a_plain_chat(user, harbour):
    conversation, ai = harbour
    RetrievalSettings.objects.filter(pk=1).update(rag_enabled=False)
    ai.script_chat("Hello! How can I help? [S1]")
    answer = ask(user, conversation, "Hello there")
    assert answer.status == "done"
    assert answer.content == "Hello! How can I help?"
    assert answer.metadata["mode"] == "general" and answer.sources == [] and answer.metadata["citations"] == []
    assert not ai.requests_to("/v1/embeddings")[1:]  # only the indexing's, no query embedding
    sent = ai.requests_to("/v1/chat/completions")[-1]["json"]["messages"]
    assert sent[0]["content"] == PLAIN_SYSTEM_PROMPT and sent[-1]["content"] == "Hello there"


def test_with_retrieval_off_and_no_chat_server_it_says_so(user, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(rag_enabled=False)
    answer = ask(user, conversation_create(user=user), "Hello?")
    assert answer.status == "failed" and "no chat server is configured" in answer.error


def test_a_very_close_approved_answer_is_given_directly(user, staff_user, harbour):
    conversation, ai = harbour
    entry = KnowledgeEntry.objects.create(question="Who assigns berths to ships?", answer="The harbour master.",
                                          category="port")
    knowledge_entry_approve(entry=entry, user=staff_user)
    assert knowledge_entry_embed(entry.pk) == "ready"
    answer = ask(user, conversation, "Who assigns berths to ships?", category="port")
    assert answer.status == "done", answer.error
    assert answer.content == "The harbour master. [S1]"
    assert answer.metadata["mode"] == "qa_direct"
    assert answer.metadata["citations"][0]["qa_id"] == entry.pk
    assert not ai.requests_to("/v1/chat/completions")


def test_questions_of_a_conversation_are_answered_in_order_with_history(user, harbour):
    conversation, ai = harbour
    # The follow-up is made standalone first (one condense request, chat.followups), then answered.
    ai.script_chat("Berths come from the harbour master [S1].", "Who publishes the tide tables of the harbour?",
                   "On Mondays [S1].")
    message_send(conversation_id=conversation.pk, user=user, content="Who assigns berths?", enqueue=False)
    message_send(conversation_id=conversation.pk, user=user, content="And the tide tables?", enqueue=False)
    assert answer_conversation(conversation.pk) == "answered 2"
    first, second = Message.objects.filter(conversation=conversation, role="assistant").order_by("id")
    assert first.content == "Berths come from the harbour master [S1]." and second.content == "On Mondays [S1]."
    assert second.metadata["query_rewrite"]["query"] == "Who publishes the tide tables of the harbour?"
    history = ai.requests_to("/v1/chat/completions")[2]["json"]["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "user"]
    assert history[2]["content"] == "Berths come from the harbour master."  # tags of old answers removed
    assert answer_conversation(conversation.pk) == "answered 0"  # a second delivery does nothing


def test_a_conversation_being_answered_elsewhere_is_left_alone_and_a_dead_answerer_is_replaced(
        user, harbour):
    conversation, ai = harbour
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Who assigns berths?",
                             enqueue=False)
    with psycopg.connect(conninfo_for(), autocommit=True) as other:  # another worker's session
        other.execute("SELECT pg_advisory_lock(%s::int, %s::int)", [LOCK_NAMESPACE, conversation.pk])
        assert answer_conversation(conversation.pk).startswith("answered 0; the rest is being answered")
    # That worker died mid-answer (its session, and so its lock, are gone): the next run takes over.
    wait_for(lambda: not _advisory_locks(), timeout=5, what="the closed session's lock to go")
    Message.objects.filter(pk=answer.pk).update(status="streaming", content="half an ans",
                                                metadata={"question_id": answer.metadata["question_id"],
                                                          "attempts": 1})
    ai.script_chat("The harbour master [S1].")
    assert answer_conversation(conversation.pk) == "answered 1"
    answer.refresh_from_db()
    assert answer.status == "done" and answer.content == "The harbour master [S1]."
    assert answer.metadata["attempts"] == 2


def _advisory_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s",
                       [LOCK_NAMESPACE])
        return cursor.fetchone()[0]


def test_an_answer_interrupted_too_often_fails(user, harbour):
    conversation, _ = harbour
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Who?", enqueue=False)
    Message.objects.filter(pk=answer.pk).update(status="streaming", metadata={"attempts": 3})
    answer_conversation(conversation.pk)
    answer.refresh_from_db()
    assert answer.status == "failed" and "3 times" in answer.error


def test_stale_answers_are_queued_again(user, harbour, django_capture_on_commit_callbacks):
    conversation, _ = harbour
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Who?", enqueue=False)
    assert recover_interrupted_answers() == 0
    Message.objects.filter(pk=answer.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    with django_capture_on_commit_callbacks(execute=True):  # queued after the commit (core.tasks)
        assert recover_interrupted_answers() == 1
    assert OrmQ.objects.filter(key="chat").count() == 1


def test_ask_command_prints_the_finished_answer(user, harbour, capsys):
    conversation, ai = harbour
    ai.script_chat("Pilots board ships over 80 metres [S1].")
    call_command("ask", "--user", user.username, "--conversation", str(conversation.pk),
                 "When must a pilot board?")
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"] == "done" and printed["role"] == "assistant"
    assert printed["content"] == "Pilots board ships over 80 metres [S1]."
    assert printed["metadata"]["citations"][0]["document_name"] == "harbour.txt"
    assert printed["metadata"]["retrieved_segments"]


def test_an_ollama_chat_server_works_the_same(user, harbour):
    conversation, ai = harbour
    ai.chat_row.kind = "ollama"
    ai.chat_row.save()
    ai.script_chat({"content": "Tide tables come out on Mondays [S1].", "usage": None})
    answer = ask(user, conversation, "When are tide tables published?")
    assert answer.status == "done", answer.error
    assert answer.content == "Tide tables come out on Mondays [S1]."
    assert ai.requests_to("/api/chat")
    usage = answer.metadata["llm_usage"]  # the server reported none: counted, and said so
    assert usage["estimated"] is True and usage["completion_tokens"] > 0
