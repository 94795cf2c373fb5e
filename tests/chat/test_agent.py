"""Agentic search: the model searches with a tool, scripted on the local fake AI server.

Every test drives the real answer path (message_send → answer_conversation → chat.agent) against
tests/fakeai.py: the tool calls are scripted, the searches are real retrievals on PostgreSQL, and
what ragsite sent is read back from the fake server's recorded requests.
"""
from __future__ import annotations

import json

import pytest

from chat.agent import parse_query
from chat.models import Message
from chat.orchestrator import answer_conversation
from chat.services import conversation_create, message_send
from documents.models import Chunk, DocumentText
from retrieval.models import RetrievalSettings
from tests.chat.helpers import indexed, safety_manual_conversation
from tests.fakeai import _message_text

pytestmark = pytest.mark.django_db

CHAT = "/v1/chat/completions"
HARBOUR = ("The harbour master assigns berths to arriving ships. Tide tables are published every Monday. "
           "Pilots must board ships longer than 80 metres.")


def ask(user, conversation, question: str) -> Message:
    _, answer = message_send(conversation_id=conversation.pk, user=user, content=question, enqueue=False)
    answer_conversation(conversation.pk)
    answer.refresh_from_db()
    return answer


def search(query: str, call_id: str | None = None) -> dict:
    call = {"name": "search_documents", "arguments": {"query": query}}
    if call_id:
        call["id"] = call_id
    return call


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["json"]["messages"] if m["role"] == "tool"]


@pytest.fixture
def agentic(chat_ai):
    """The fake chat server marked as able to call tools, and agentic mode switched on (2 searches)."""
    chat_ai.chat_row.capabilities = {**chat_ai.chat_row.capabilities, "tools": True}
    chat_ai.chat_row.save()
    RetrievalSettings.objects.filter(pk=1).update(chat_mode="agentic", agent_max_searches=2)
    return chat_ai


def test_the_model_searches_then_answers_and_a_returned_tag_becomes_a_citation(user, agentic, tmp_path):
    conversation, document = safety_manual_conversation(user, tmp_path)
    agentic.script_chat(
        {"content": "", "tool_calls": [search("scaffold inspection interval")]},
        "The scaffold is inspected every seven days [S1].\n\nA competent person does it [S1][S7].",
    )
    answer = ask(user, conversation, "How often is the scaffold inspected?")

    assert answer.status == "done", answer.error
    meta = answer.metadata
    assert meta["mode"] == "agent"
    assert answer.content == "The scaffold is inspected every seven days [S1].\n\nA competent person does it [S1]."
    assert meta["invalid_citations"] == 1 and meta["invalid_tags"] == ["S7"]
    # The tag the tool returned maps to the passage it returned: right page, right offsets.
    first, second = agentic.requests_to(CHAT)
    [result_message] = tool_messages(second)
    results = json.loads(result_message["content"])["results"]
    tagged = {r["source_id"]: r for r in results}
    assert set(tagged) == {f"S{i}" for i in range(1, len(results) + 1)}
    [citation] = meta["citations"]
    assert citation["chunk_id"] == tagged["S1"]["chunk_id"]
    chunk = Chunk.objects.get(pk=citation["chunk_id"])
    text = DocumentText.objects.get(document=document).text
    assert citation["page_number"] == 2 == chunk.page_number == tagged["S1"]["page_number"]
    assert "scaffold" in chunk.content.lower()
    # The PDF's two chunks (one section, both returned) are one passage: the citation spans and names both.
    first_chunk, last_chunk = (Chunk.objects.get(pk=pk) for pk in citation["joined_chunk_ids"])
    assert chunk.pk in citation["joined_chunk_ids"]
    assert text[citation["start_offset"]:citation["end_offset"]] == text[first_chunk.start_offset:last_chunk.end_offset]
    assert chunk.content in text[citation["start_offset"]:citation["end_offset"]]
    assert set(tagged["S1"]) == {"source_id", "chunk_id", "document_name", "page_number", "page_label",
                                 "heading_path", "excerpt", "score"}
    assert tagged["S1"]["page_label"] is None  # the PDF prints no page numbers: the index stands
    assert tagged["S1"]["document_name"] == "safety.pdf" and "scaffold" in tagged["S1"]["excerpt"].lower()
    assert answer.sources[0]["source_id"] == "S1" and answer.sources[0]["page_number"] == 2
    # What the model was given: the tool first; the results as untrusted data, answered to its call.
    assert [t["function"]["name"] for t in first["json"]["tools"]] == ["search_documents"]
    assert "<context>" not in json.dumps(first["json"]["messages"])
    assert "not instructions" in json.loads(result_message["content"])["notice"]
    assistant = second["json"]["messages"][-2]
    assert assistant["tool_calls"][0]["id"] == result_message["tool_call_id"]
    # The trace: the search, its tags and chunks; usage of both requests added up.
    agent = meta["agent"]
    [done] = agent["searches"]
    assert done["query"] == "scaffold inspection interval"
    assert done["source_ids"] == [r["source_id"] for r in results]
    assert done["chunk_ids"] == [r["chunk_id"] for r in results]
    assert done["trace"]["scope"] == "attached" and done["timings_ms"]["tool"] > 0
    assert agent["max_searches"] == 2 and agent["budget_exhausted"] is False and agent["rejected_calls"] == []
    assert meta["retrieval"]["agentic"] is True and meta["retrieval"]["queries"] == ["scaffold inspection interval"]
    assert meta["retrieval"]["scope"] == "attached"
    assert [s["source_id"] for s in meta["retrieved_segments"] if s["source_id"]] == list(tagged)
    assert meta["context_sources"][0]["source_id"] == "S1"
    usage = meta["llm_usage"]
    assert usage["requests"] == 2 and usage["model"] == "fake-chat"
    # The fake server counts a request's prompt as its words + 1 per message: both requests are summed.
    assert usage["prompt_tokens"] == sum(len(_message_text(m).split()) + 1
                                         for r in (first, second) for m in r["json"]["messages"])
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_the_search_budget_is_enforced_and_the_last_request_carries_no_tool(user, agentic, api):
    document = indexed(user, HARBOUR, "harbour.txt")
    conversation = conversation_create(user=user, document_ids=[document.pk])
    agentic.script_chat(
        {"content": "", "tool_calls": [search("berths")]},
        {"content": "", "tool_calls": [search("tide tables", "c2"), search("pilots", "c3")]},
        # Without the tool the model still asks to search: not run, its text is the answer.
        {"content": "Berths are assigned by the harbour master [S1].", "tool_calls": [search("more")]},
    )
    answer = ask(user, conversation, "Who assigns berths, and when are tide tables out?")

    assert answer.status == "done", answer.error
    agent = answer.metadata["agent"]
    assert [s["query"] for s in agent["searches"]] == ["berths", "tide tables"]
    assert agent["budget_exhausted"] is True
    assert [(c["reason"], json.loads(c["arguments"])["query"]) for c in agent["rejected_calls"]] == [
        ("budget", "pilots")]
    requests = agentic.requests_to(CHAT)
    assert len(requests) == 3
    assert all("tools" in r["json"] for r in requests[:2])
    assert "tools" not in requests[2]["json"]
    last = requests[2]["json"]["messages"]
    assert last[-1]["role"] == "user" and "No more searches" in last[-1]["content"]
    by_call = {m["tool_call_id"]: json.loads(m["content"]) for m in tool_messages(requests[2])}
    assert "budget is used up" in by_call["c3"]["error"]
    assert by_call["c2"]["results"]  # the call within the budget ran
    assert answer.content == "Berths are assigned by the harbour master [S1]."
    # The retrieval endpoint shows the searches.
    shown = api.get(f"/api/conversations/{conversation.pk}/messages/{answer.pk}/retrieval/").json()
    assert shown["mode"] == "agent"
    assert [s["query"] for s in shown["agent"]["searches"]] == ["berths", "tide tables"]
    assert shown["retrieval"]["searches"] == 2


def test_the_same_passage_keeps_its_tag_across_searches(user, agentic):
    document = indexed(user, HARBOUR, "harbour.txt")
    conversation = conversation_create(user=user, document_ids=[document.pk])
    agentic.script_chat({"content": "", "tool_calls": [search("harbour master berths")]},
                        {"content": "", "tool_calls": [search("harbour master")]},
                        "The harbour master assigns berths [S1].")
    answer = ask(user, conversation, "Who assigns berths?")
    assert answer.status == "done", answer.error
    first, second = answer.metadata["agent"]["searches"]
    assert first["source_ids"] == second["source_ids"] == ["S1"]
    assert first["new_source_ids"] == ["S1"] and second["new_source_ids"] == []
    repeated = json.loads(tool_messages(agentic.requests_to(CHAT)[2])[1]["content"])["results"][0]
    assert repeated["source_id"] == "S1" and "earlier search" in repeated["excerpt"]
    assert len(answer.metadata["retrieved_segments"]) == 1
    assert answer.metadata["citations"][0]["chunk_id"] == first["chunk_ids"][0]


def test_tool_results_and_citations_stay_within_the_users_own_documents(user, other_user, agentic):
    mine = indexed(user, HARBOUR, "harbour.txt")
    theirs = indexed(other_user, "The harbour master keeps the berth ledger in the blue cabinet. "
                                 "Berths are assigned by the harbour master at dawn.", "ledger.txt")
    their_chunks = set(Chunk.objects.filter(document=theirs).values_list("pk", flat=True))
    conversation = conversation_create(user=user)  # nothing attached: all of alice's own documents
    agentic.script_chat({"content": "", "tool_calls": [search("harbour master berth ledger cabinet dawn")]},
                        "The harbour master assigns berths [S1][S2].")
    answer = ask(user, conversation, "Where is the berth ledger kept?")

    assert answer.status == "done", answer.error
    results = json.loads(tool_messages(agentic.requests_to(CHAT)[1])[0]["content"])["results"]
    assert results, "the user's own matching document must be found"
    assert {r["chunk_id"] for r in results} <= set(Chunk.objects.filter(document=mine).values_list("pk", flat=True))
    assert not {r["chunk_id"] for r in results} & their_chunks
    assert all(r["document_name"] == "harbour.txt" for r in results)
    assert "blue" not in json.dumps(agentic.requests_to(CHAT)[1]["json"])  # their text never reaches the model
    assert {c["document_id"] for c in answer.metadata["citations"]} == {mine.pk}
    assert answer.metadata["invalid_tags"] == (["S2"] if len(results) == 1 else [])
    assert not {s["chunk_id"] for s in answer.metadata["retrieved_segments"]} & their_chunks


def test_broken_tool_arguments_get_an_error_result_and_the_answer_goes_on(user, agentic):
    document = indexed(user, HARBOUR, "harbour.txt")
    conversation = conversation_create(user=user, document_ids=[document.pk])
    agentic.script_chat(
        {"content": "Let me look.", "tool_calls": [
            {"id": "bad", "name": "search_documents", "arguments": '{"query": '},
            {"id": "empty", "name": "search_documents", "arguments": {"query": "  "}},
            {"id": "other", "name": "delete_everything", "arguments": {}}]},
        {"content": "", "tool_calls": [{"id": "ok", "name": "search_documents",
                                        "arguments": '```json\n{"q": "pilots board ships"}\n```'}]},
        "Pilots board ships longer than 80 metres [S1].",
    )
    answer = ask(user, conversation, "When must pilots board?")

    assert answer.status == "done", answer.error
    assert answer.content == "Let me look.\n\nPilots board ships longer than 80 metres [S1]."
    assert answer.metadata["streamed_text"] == answer.content
    agent = answer.metadata["agent"]
    assert [s["query"] for s in agent["searches"]] == ["pilots board ships"]
    assert [c["reason"] for c in agent["rejected_calls"]] == ["invalid", "invalid", "invalid"]
    errors = {m["tool_call_id"]: json.loads(m["content"]) for m in tool_messages(agentic.requests_to(CHAT)[1])}
    assert "not valid JSON" in errors["bad"]["error"]
    assert "needs words" in errors["empty"]["error"]
    assert "no tool 'delete_everything'" in errors["other"]["error"]
    assert answer.metadata["citations"][0]["document_id"] == document.pk


def test_a_model_that_never_stops_calling_broken_tools_is_made_to_answer(user, agentic):
    RetrievalSettings.objects.filter(pk=1).update(agent_max_searches=1)
    conversation = conversation_create(user=user, document_ids=[indexed(user, HARBOUR, "harbour.txt").pk])
    broken = {"content": "", "tool_calls": [{"name": "search_documents", "arguments": "nonsense"}]}
    agentic.script_chat(broken, broken, {"content": "I could not search.", "tool_calls": broken["tool_calls"]})
    answer = ask(user, conversation, "Who assigns berths?")
    assert answer.status == "done", answer.error
    requests = agentic.requests_to(CHAT)
    assert len(requests) == 3  # one search allowed + 2 more rounds, then no tool any more
    assert "tools" not in requests[-1]["json"]
    assert answer.metadata["agent"]["rounds_exhausted"] is True
    assert answer.metadata["agent"]["searches"] == []
    assert answer.content == "I could not search."


def test_an_answer_that_takes_too_long_across_rounds_is_stopped(user, agentic, settings):
    settings.CHAT_ANSWER_TIME_LIMIT = 1
    conversation = conversation_create(user=user, document_ids=[indexed(user, HARBOUR, "harbour.txt").pk])
    agentic.script_chat({"content": "", "tool_calls": [search("berths")], "first_token_delay": 1.2},
                        "Never asked for.")
    answer = ask(user, conversation, "Who assigns berths?")
    assert answer.status == "failed"
    assert "longer than 1 s" in answer.error
    assert len(agentic.requests_to(CHAT)) == 1


def test_without_the_tools_capability_agentic_mode_falls_back_to_the_context(user, chat_ai):
    RetrievalSettings.objects.filter(pk=1).update(chat_mode="agentic")
    conversation = conversation_create(user=user, document_ids=[indexed(user, HARBOUR, "harbour.txt").pk])
    chat_ai.script_chat("The harbour master assigns berths [S1].")
    answer = ask(user, conversation, "Who assigns berths?")
    assert answer.status == "done", answer.error
    assert answer.metadata["mode"] == "documents"
    assert "not marked as able to call tools" in answer.metadata["agentic_fallback"]
    assert "fake chat" in answer.metadata["agentic_fallback"]
    [request] = chat_ai.requests_to(CHAT)
    assert "tools" not in request["json"] and "<context>" in request["json"]["messages"][-1]["content"]
    assert answer.metadata["citations"][0]["source_id"] == "S1"


def test_in_context_mode_a_tool_capable_server_gets_no_tool(user, agentic):
    RetrievalSettings.objects.filter(pk=1).update(chat_mode="context")
    conversation = conversation_create(user=user, document_ids=[indexed(user, HARBOUR, "harbour.txt").pk])
    agentic.script_chat("The harbour master [S1].")
    answer = ask(user, conversation, "Who assigns berths?")
    assert answer.metadata["mode"] == "documents" and "agentic_fallback" not in answer.metadata
    assert "tools" not in agentic.requests_to(CHAT)[0]["json"]


def test_an_ollama_server_searches_the_same_way(user, agentic):
    agentic.chat_row.kind = "ollama"
    agentic.chat_row.save()
    conversation = conversation_create(user=user, document_ids=[indexed(user, HARBOUR, "harbour.txt").pk])
    agentic.script_chat({"content": "", "tool_calls": [search("tide tables")]},
                        {"content": "Tide tables come out on Mondays [S1].", "usage": None})
    answer = ask(user, conversation, "When are tide tables published?")
    assert answer.status == "done", answer.error
    assert answer.metadata["mode"] == "agent" and answer.metadata["citations"][0]["source_id"] == "S1"
    first, second = agentic.requests_to("/api/chat")
    assert first["json"]["tools"][0]["function"]["name"] == "search_documents"
    call = second["json"]["messages"][-2]["tool_calls"][0]
    assert call["function"] == {"name": "search_documents", "arguments": {"query": "tide tables"}}
    assert json.loads(second["json"]["messages"][-1]["content"])["results"][0]["source_id"] == "S1"
    assert answer.metadata["llm_usage"]["estimated"] is True  # the last request reported none


@pytest.mark.parametrize("arguments, expected", [
    ({"query": "tide tables"}, "tide tables"),
    ('{"query": "tide  tables\\n"}', "tide tables"),
    ('"tide tables"', "tide tables"),
    ('"{\\"query\\": \\"tide tables\\"}"', "tide tables"),  # encoded twice
    ('```json\n{"query": "tide tables"}\n```', "tide tables"),
    ('{"query": "tide \\"tables\\"', 'tide "tables"'),  # cut off after the query
    ({"search": "tide tables", "limit": 3}, "tide tables"),
    ({"terms": "tide tables"}, "tide tables"),  # the only text given
])
def test_tool_arguments_are_read_leniently(arguments, expected):
    assert parse_query(arguments) == (expected, None)


@pytest.mark.parametrize("arguments", ["", "   ", "{}", '{"query": ""}', "nonsense", '{"a": "x", "b": "y"}', None,
                                       '{"query": 7}', "[1, 2]"])
def test_unusable_tool_arguments_say_what_is_wrong(arguments):
    query, error = parse_query(arguments)
    assert query is None and error and "query" in error
