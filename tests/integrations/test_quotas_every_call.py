"""Every way a chat model call is asked for is held to the group quotas by the one check
(usage.quotas.model_call_check): a table of the ways in against the questions-per-day and the
tokens-per-month limit, over a live daphne (REST with an API token, /v1 through the `openai` SDK,
MCP through the `mcp` SDK) and the agent's searches through the real answer path."""
from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest

from tests.integrations.test_mcp_server import _session_calls

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

HARBOUR = "The harbour master assigns berths to arriving ships. Tide tables are published every Monday."
QUESTION = "Who assigns the berths?"
PHRASE = {"questions_per_day": "2 questions per day", "tokens_per_month": "1000 chat model tokens per month"}
QUOTA = {"questions_per_day": {"questions_per_day": 2}, "tokens_per_month": {"tokens_per_month": 1000}}
# What each way in meets at each limit: "refused" (429 naming the limit), or "allowed" where the limit does
# not hold it (the agent's searches belong to a question already accepted and counted).
TABLE = {
    "ask": {"questions_per_day": "refused", "tokens_per_month": "refused"},
    "edit": {"questions_per_day": "refused", "tokens_per_month": "refused"},
    "regenerate": {"questions_per_day": "refused", "tokens_per_month": "refused"},
    "v1": {"questions_per_day": "refused", "tokens_per_month": "refused"},
    "mcp": {"questions_per_day": "refused", "tokens_per_month": "refused"},
    "agent_search": {"questions_per_day": "allowed", "tokens_per_month": "refused"},
}


def _rest(daphne, token: str, conversation: int, question: int, answer: int, path: str) -> tuple[str, str]:
    with httpx.Client(base_url=daphne.url, headers={"Authorization": f"Token {token}"}, timeout=30) as rest:
        if path == "regenerate":
            response = rest.post(f"/api/conversations/{conversation}/messages/{answer}/regenerate/")
        else:
            body = {"content": QUESTION, **({"edit_of": question} if path == "edit" else {})}
            response = rest.post(f"/api/conversations/{conversation}/messages/", json=body)
    if response.status_code != 429:
        return "allowed", response.text
    assert response.json()["code"] == "quota_exceeded" and int(response.headers["Retry-After"]) > 0
    return "refused", f'{response.json()["extra"]["limit"]}: {response.json()["message"]}'


def _v1(daphne, token: str) -> tuple[str, str]:
    client = openai.OpenAI(base_url=f"{daphne.url}/v1", api_key=token, max_retries=0, timeout=30)
    try:
        client.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])
    except openai.RateLimitError as exc:
        assert exc.body["type"] == "insufficient_quota" and exc.body["code"] == "quota_exceeded"
        return "refused", exc.body["message"]
    return "allowed", ""


def _mcp(daphne, token: str) -> tuple[str, str]:
    _, (result,) = asyncio.run(_session_calls(daphne.url, token, [("ask", {"question": QUESTION})]))
    return ("refused", result.content[0].text) if result.is_error else ("allowed", "")


def _agent_search(chat_ai, user, document) -> tuple[str, str]:
    """A question accepted before the limit was reached; its answer's model asks to search."""
    from chat.models import Message
    from chat.orchestrator import answer_conversation

    conversation = _agent_conversation.pop()
    chat_ai.script_chat({"content": "", "tool_calls": [{"name": "search_documents",
                                                        "arguments": {"query": "berths"}}]},
                        "The harbour master assigns berths [S1].")
    answer_conversation(conversation)
    answer = Message.objects.filter(conversation_id=conversation, role="assistant").get()
    agent = answer.metadata["agent"]
    assert answer.status == "done", answer.error
    if [c["reason"] for c in agent["rejected_calls"]] == ["quota"] and not agent["searches"]:
        assert agent["quota_reached"] is True
        return "refused", json.dumps(agent["rejected_calls"])
    assert [s["query"] for s in agent["searches"]] == ["berths"], agent
    return "allowed", ""


_agent_conversation: list[int] = []


def test_every_way_of_calling_the_model_meets_both_quotas(chat_ai, daphne, user, tokens):
    from django.contrib.auth.models import Group

    from chat.models import Message
    from chat.services import conversation_create, message_send
    from retrieval.models import RetrievalSettings
    from tests.chat.helpers import indexed
    from usage.models import GroupQuota, UsageDay
    from usage.recorder import usage_add

    chat_ai.chat_row.capabilities = {**chat_ai.chat_row.capabilities, "tools": True}
    chat_ai.chat_row.save()
    RetrievalSettings.objects.filter(pk=1).update(chat_mode="agentic", agent_max_searches=2)
    document = indexed(user, HARBOUR, "harbour.txt")
    group = Group.objects.create(name="interns")
    user.groups.add(group)
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for limit, quota in QUOTA.items():
        UsageDay.objects.filter(user=user).delete()
        GroupQuota.objects.update_or_create(group=group, defaults={
            "questions_per_day": None, "tokens_per_month": None, **quota})
        # A conversation with a finished answer (to edit and regenerate), and one whose question the agent
        # answers once the limit is reached; both questions are counted: 2 of 2.
        conversation = conversation_create(user=user)
        question, answer = message_send(conversation_id=conversation.pk, user=user, content=QUESTION, enqueue=False)
        Message.objects.filter(pk=answer.pk).update(status="done", content="The harbour master [S1].")
        agentic = conversation_create(user=user, document_ids=[document.pk])
        message_send(conversation_id=agentic.pk, user=user, content=QUESTION, enqueue=False)
        _agent_conversation.append(agentic.pk)
        if limit == "tokens_per_month":
            usage_add(user_id=user.pk, chat_model="m", tokens_in=700, tokens_out=300)
        for path in TABLE:
            if path in ("ask", "edit", "regenerate"):
                seen[path, limit] = _rest(daphne, tokens[0], conversation.pk, question.pk, answer.pk, path)
            elif path == "v1":
                seen[path, limit] = _v1(daphne, tokens[0])
            elif path == "mcp":
                seen[path, limit] = _mcp(daphne, tokens[0])
            else:
                seen[path, limit] = _agent_search(chat_ai, user, document)

    wrong = {key: outcome for key, outcome in seen.items() if outcome[0] != TABLE[key[0]][key[1]]}
    assert not wrong, wrong
    for (path, limit), (outcome, text) in seen.items():
        if outcome == "refused" and path != "agent_search":
            assert PHRASE[limit] in text, (path, limit, text)
    # Nothing refused was kept or counted: two questions per round, one answer each (the agent's written).
    assert Message.objects.filter(conversation__owner=user, role="user").count() == 4
    assert Message.objects.filter(conversation__owner=user, role="assistant").count() == 4
