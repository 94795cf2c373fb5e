"""The MCP server at /mcp through the SDK's own Streamable HTTP client against a live daphne."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


async def _session_calls(url: str, token: str, calls: list[tuple[str, dict]]):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                results = [await session.call_tool(name, args) for name, args in calls]
                return [t.name for t in tools.tools], results


def mcp_calls(stack, token: str, *calls: tuple[str, dict]):
    return asyncio.run(_session_calls(stack.daphne.url, token, list(calls)))


def data(result) -> dict:
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content  # text for older clients
    return result.structured_content


def test_tools_search_read_list_and_ask_as_the_tokens_user(stack):
    stack.script_chat("The scaffold is inspected every seven days [S1].")
    names, (search, listed, answer) = mcp_calls(
        stack, stack.tokens[0],
        ("search_documents", {"query": "scaffold inspection seven days", "k": 3}),
        ("list_documents", {}),
        ("ask", {"question": "How often is the scaffold inspected?"}))
    assert set(names) == {"search_documents", "list_documents", "get_passage", "ask"}

    results = data(search)["results"]
    assert results and {r["document_id"] for r in results} == {stack.alice_doc.pk}
    top = results[0]
    assert "seven days" in top["excerpt"] and top["relevance"] > 0 and top["chunk_id"]
    assert top["end_offset"] > top["start_offset"] and top["document_name"] == "safety.txt"
    assert [d["id"] for d in data(listed)["documents"]] == [stack.alice_doc.pk]

    asked = data(answer)
    assert asked["answer"] == "The scaffold is inspected every seven days [S1]."
    assert asked["citations"][0]["document_id"] == stack.alice_doc.pk and asked["mode"] == "documents"
    from chat.models import Conversation

    assert Conversation.objects.get(pk=asked["conversation_id"]).owner_id == stack.alice_doc.owner_id

    _, (passage, wide) = mcp_calls(stack, stack.tokens[0], ("get_passage", {"chunk_id": top["chunk_id"]}),
                                   ("get_passage", {"chunk_id": top["chunk_id"], "context_chars": 20}))
    assert data(passage)["text"].startswith("Scaffolding.") and data(passage)["before"] == ""
    assert data(wide)["text"] == data(passage)["text"]

    # The audit log (issue #36): the passages the MCP search returned, the passages read by id and
    # those the answer was made from, each a line naming Alice, the document and the chunk.
    from identity.models import AuditEvent

    lines = AuditEvent.objects.filter(user_id=stack.alice_doc.owner_id, document_id=stack.alice_doc.pk)
    searched = set(lines.filter(action="search", via="mcp").values_list("chunk_id", flat=True))
    assert {r["chunk_id"] for r in results} <= searched and top["chunk_id"] in searched
    assert lines.filter(action="answer", via="mcp", message_id__isnull=False, chunk_id__isnull=False).exists()


def test_two_tokens_never_see_each_others_documents(stack):
    _, (alice_search,) = mcp_calls(stack, stack.tokens[0], ("search_documents", {"query": "raspberries pruned"}))
    alice_chunk = data(mcp_calls(stack, stack.tokens[0], ("search_documents", {"query": "scaffold"}))[1][0])[
        "results"][0]["chunk_id"]
    assert all(r["document_id"] == stack.alice_doc.pk for r in data(alice_search)["results"])

    _, (search, listed, passage) = mcp_calls(
        stack, stack.tokens[1], ("search_documents", {"query": "scaffold inspection seven days"}),
        ("list_documents", {}), ("get_passage", {"chunk_id": alice_chunk}))
    assert {r["document_id"] for r in data(search)["results"]} <= {stack.bob_doc.pk}
    assert [d["id"] for d in data(listed)["documents"]] == [stack.bob_doc.pk]
    assert passage.is_error and f"No passage {alice_chunk}" in passage.content[0].text


def test_bad_arguments_unknown_collection_and_missing_token(stack):
    from chat.models import Conversation, Message
    from documents.models import Collection

    Collection.objects.create(name="Rules", slug="rules", visibility="everyone")
    stack.script_chat("Nothing about that in the rules.")
    _, (collection, listing, k, context, nul, empty, asked_elsewhere, asked_in) = mcp_calls(
        stack, stack.tokens[0], ("search_documents", {"query": "scaffold", "collection": "handbook"}),
        ("list_documents", {"collection": "handbook"}), ("search_documents", {"query": "scaffold", "k": 500}),
        ("get_passage", {"chunk_id": 1, "context_chars": -1}), ("search_documents", {"query": "a\u0000b"}),
        ("ask", {"question": "  "}), ("ask", {"question": "Scaffold?", "collection": "handbook"}),
        ("ask", {"question": "Scaffold?", "collection": "rules"}))
    # `ask` takes `collection` like the other tools: an unknown one is refused and nothing is asked; a
    # collection the user reads is the new conversation's.
    assert asked_elsewhere.is_error and "Unknown collection 'handbook'" in asked_elsewhere.content[0].text
    assert Message.objects.filter(conversation__owner__username="alice", role="user").count() == 1
    conversation = Conversation.objects.get(pk=data(asked_in)["conversation_id"])
    assert conversation.collection.slug == "rules" and conversation.origin == "mcp"
    assert nul.is_error and "NUL" in nul.content[0].text
    assert empty.is_error and "The question is empty" in empty.content[0].text
    for result in (collection, listing):
        assert result.is_error and "Unknown collection 'handbook'" in result.content[0].text
    assert k.is_error and "k must be between 1 and 50" in k.content[0].text
    assert context.is_error and "context_chars" in context.content[0].text

    for headers in ({}, {"Authorization": "Bearer nope"}):
        response = httpx.post(f"{stack.daphne.url}/mcp", headers=headers, timeout=120,
                              json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert response.status_code == 401 and response.json()["code"] == "not_authenticated"
        assert response.headers["www-authenticate"].startswith("Bearer")
