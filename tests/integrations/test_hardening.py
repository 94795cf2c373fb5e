"""/v1 and MCP against a live daphne (issue #29): they search the collections the user reads (they said
"Collections are not available yet"), earlier turns keep the question-length limit (a 2 MB turn was
stored), and a deeply nested JSON body is a 400, not a 500."""
from __future__ import annotations

import json

import httpx
import openai
import pytest

from chat.models import Conversation, Message
from documents.models import Collection
from tests.chat.helpers import indexed
from tests.integrations.test_mcp_server import data, mcp_calls
from tests.integrations.test_openai_api import client

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

HANDBOOK_TEXT = "Crane handbook. The crane's load limit is twelve tonnes; the banksman signals every lift."


@pytest.fixture
def collections(stack, user, other_user):
    """`handbook` open to everyone (Bob curates its document), `board` open to nobody but its curators."""
    handbook = Collection.objects.create(name="Handbook", slug="handbook", visibility="everyone")
    board = Collection.objects.create(name="Board", slug="board", visibility="groups")
    stack.handbook_doc = indexed(other_user, HANDBOOK_TEXT, "crane.txt", collection=handbook)
    stack.board_doc = indexed(other_user, "Board minutes: the crane budget is secret.", "board.txt", collection=board)
    return handbook, board


def test_v1_models_and_answers_use_the_collections_the_user_reads(stack, collections):
    handbook, _board = collections
    ai = client(stack, stack.tokens[0])
    assert [m.id for m in ai.models.list()] == ["ragsite", "ragsite/handbook"]
    stack.script_chat("Twelve tonnes [S1].")
    answer = ai.chat.completions.create(model="ragsite/handbook",
                                        messages=[{"role": "user", "content": "What is the crane's load limit?"}])
    conversation = Conversation.objects.get(pk=answer.conversation_id)
    assert conversation.collection_id == handbook.pk
    assert "twelve tonnes" in json.dumps(stack.requests_to("/v1/chat/completions")[-1]["json"]["messages"])
    with pytest.raises(openai.NotFoundError) as caught:  # a collection the user does not read: unknown
        ai.chat.completions.create(model="ragsite/board", messages=[{"role": "user", "content": "Budget?"}])
    assert caught.value.code == "model_not_found"


def test_mcp_search_and_list_one_collection_the_user_reads(stack, collections):
    _, (search, listing, hidden) = mcp_calls(
        stack, stack.tokens[0],
        ("search_documents", {"query": "crane load limit", "collection": "handbook"}),
        ("list_documents", {"collection": "handbook"}),
        ("search_documents", {"query": "crane budget", "collection": "board"}))
    results = data(search)["results"]
    assert results and {r["document_id"] for r in results} == {stack.handbook_doc.pk}
    assert [d["id"] for d in data(listing)["documents"]] == [stack.handbook_doc.pk]
    assert hidden.is_error and "Unknown collection 'board'" in hidden.content[0].text
    assert "not available yet" not in hidden.content[0].text


def test_v1_history_turns_keep_the_length_limit_and_nested_json_is_400(stack, settings):
    before = Message.objects.count()
    long_turn = "x" * 2_000_000
    response = httpx.post(f"{stack.daphne.url}/v1/chat/completions", timeout=120,
                          headers={"Authorization": f"Bearer {stack.tokens[0]}"},
                          json={"model": "ragsite", "messages": [{"role": "user", "content": long_turn},
                                                                 {"role": "assistant", "content": "Yes."},
                                                                 {"role": "user", "content": "And then?"}]})
    assert response.status_code == 400, response.text[:300]
    assert "longer than" in response.json()["error"]["message"]
    assert Message.objects.count() == before  # nothing stored
    nested = "[" * 100_000 + "]" * 100_000
    response = httpx.post(f"{stack.daphne.url}/v1/chat/completions", content=nested, timeout=120,
                          headers={"Authorization": f"Bearer {stack.tokens[0]}", "Content-Type": "application/json"})
    assert response.status_code == 400, response.text[:300]
    assert "nested too deeply" in response.json()["error"]["message"]
