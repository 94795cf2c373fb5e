"""A follow-up question is searched as a standalone query (issue #31), through the real fake AI server:
the model's rewrite finds the passage the message as written does not, a failing model falls back to
the heuristic, and without a model the heuristic alone does it."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.orchestrator import answer_conversation
from tests.chat.helpers import indexed

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fused_by_reciprocal_rank")]


ROSES = "Roses are pruned in March. Roses are fertilised with 30 g of rose food per bush in April."
# Holds the follow-up's own words: searched as written, "And how much should I fertilise them?" finds this.
TOMATOES = "How much should I fertilise them, and how often? Tomatoes: 10 g of tomato food every week."


def _ask(api, conversation_id: int, question: str) -> Message:
    sent = api.post(f"/api/conversations/{conversation_id}/messages/", {"content": question}, format="json").json()
    answer_conversation(conversation_id)
    return Message.objects.get(pk=sent["assistant_message"]["id"])


def _first_document(answer: Message) -> int:
    return answer.metadata["retrieved_segments"][0]["document_id"]


@pytest.fixture
def garden(user):
    return indexed(user, ROSES, "roses.txt"), indexed(user, TOMATOES, "tomatoes.txt")


def test_the_models_standalone_rewrite_finds_the_passage_the_follow_up_as_written_misses(api, chat_ai, garden):
    roses, tomatoes = garden
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    chat_ai.script_chat("In March [S1].")
    first = _ask(api, conversation, "When should I prune my roses?")
    assert first.metadata["query_rewrite"]["method"] == "none"
    assert len(chat_ai.requests_to("/v1/chat/completions")) == 1  # no rewrite request for a first question

    chat_ai.script_chat("How much rose food per bush should I give my roses?", "30 g per bush in April [S1].")
    follow = _ask(api, conversation, "And how much should I fertilise them?")
    assert follow.status == "done", follow.error
    rewrite = follow.metadata["query_rewrite"]
    assert rewrite == {**rewrite, "method": "model", "original": "And how much should I fertilise them?",
                       "query": "How much rose food per bush should I give my roses?"}
    assert follow.metadata["retrieval"]["query_rewrite"] == rewrite
    assert _first_document(follow) == roses.pk
    condense, answer = chat_ai.requests_to("/v1/chat/completions")[1:]
    assert condense["json"]["stream"] is False and "When should I prune my roses?" in str(condense["json"]["messages"])
    # The answer still addresses the message as the user wrote it.
    assert answer["json"]["messages"][-1]["content"].count("And how much should I fertilise them?") == 1
    assert follow.content.startswith("30 g per bush")

    # The same follow-up searched as written finds the tomatoes: what the rewrite is for.
    from retrieval.search import retrieve
    assert retrieve(follow.conversation.owner, "And how much should I fertilise them?").segments[0][
        "document_id"] == tomatoes.pk


def test_a_failing_rewrite_request_falls_back_to_the_heuristic_and_the_answer_is_still_generated(
        api, chat_ai, garden):
    roses, _ = garden
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    chat_ai.script_chat("In March [S1].")
    _ask(api, conversation, "When should I prune my roses?")
    chat_ai.fail_next("/v1/chat/completions", {"status": 500}, times=1)  # the rewrite request: one attempt only
    chat_ai.script_chat("30 g per bush in April [S1].")
    follow = _ask(api, conversation, "And how much should I fertilise them?")
    assert follow.status == "done" and follow.metadata["mode"] == "documents", follow.error
    rewrite = follow.metadata["query_rewrite"]
    assert rewrite["method"] == "heuristic" and rewrite["query"] == "And how much should I fertilise them? prune roses"
    assert rewrite["model_error"] and chat_ai.url not in str(rewrite)
    assert _first_document(follow) == roses.pk
    assert follow.content.startswith("30 g per bush")


def test_without_a_chat_server_the_heuristic_rewrites_a_follow_up_and_leaves_a_complete_question(
        api, fake_embedder, garden):
    roses, tomatoes = garden
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    _ask(api, conversation, "When should I prune my roses?")
    follow = _ask(api, conversation, "And how much should I fertilise them?")
    assert follow.metadata["mode"] == "extractive"
    assert follow.metadata["query_rewrite"]["method"] == "heuristic"
    assert _first_document(follow) == roses.pk and "30 g" in follow.content
    alone = _ask(api, conversation, "How often do tomatoes need tomato food?")
    assert alone.metadata["query_rewrite"] == {**alone.metadata["query_rewrite"], "method": "none",
                                               "query": "How often do tomatoes need tomato food?"}
    assert _first_document(alone) == tomatoes.pk


def test_the_agent_searching_a_follow_up_word_for_word_searches_the_standalone_query(user, chat_ai, garden):
    from chat.services import conversation_create, message_send
    from retrieval.models import RetrievalSettings

    roses, _ = garden
    chat_ai.chat_row.capabilities = {**chat_ai.chat_row.capabilities, "tools": True}
    chat_ai.chat_row.save()
    RetrievalSettings.objects.filter(pk=1).update(chat_mode="agentic", agent_max_searches=1)
    conversation = conversation_create(user=user)
    search = {"name": "search_documents", "arguments": {"query": "And how much should I fertilise them?"}}
    chat_ai.script_chat({"content": "", "tool_calls": [{**search, "arguments": {"query": "prune roses"}}]},
                        "In March [S1].",
                        {"content": "", "tool_calls": [search]}, "30 g per bush in April [S1].")
    for question in ("When should I prune my roses?", "And how much should I fertilise them?"):
        _, answer = message_send(conversation_id=conversation.pk, user=user, content=question, enqueue=False)
        answer_conversation(conversation.pk)
    answer.refresh_from_db()
    assert answer.metadata["mode"] == "agent", answer.error
    searched = answer.metadata["agent"]["searches"][0]
    assert searched["query"] == "And how much should I fertilise them?"
    assert searched["searched_as"] == "And how much should I fertilise them? prune roses"
    assert answer.metadata["query_rewrite"]["method"] == "heuristic"  # no extra request: the model searches itself
    assert answer.metadata["retrieved_segments"][0]["document_id"] == roses.pk
    assert len(chat_ai.requests_to("/v1/chat/completions")) == 4
