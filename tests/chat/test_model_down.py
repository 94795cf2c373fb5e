"""The chat server down mid-conversation (issue #30): the next question gets the extractive answer from
the same passages, marked, with citations, the failure in the trace and the metrics and no server
address anywhere a user sees; with the server back, answers are generated again (real servers)."""
from __future__ import annotations

import pytest

from chat.generation import without_addresses
from chat.models import Message
from chat.orchestrator import answer_conversation
from retrieval.models import AiServer, RetrievalSettings
from retrieval.telemetry import render_metrics
from tests.chat.helpers import indexed
from tests.fakeai import FakeAIServer

pytestmark = pytest.mark.django_db

NOTICE = "The language model is unavailable; here are the passages that answer your question."


@pytest.fixture
def chat_server(fake_embedder):
    """A chat server of its own (the embeddings stay on fake_embedder), so it can be stopped alone."""
    with FakeAIServer(dim=384) as server:
        row = AiServer.objects.create(name="own chat", kind="openai", base_url=server.url, read_timeout=1.5,
                                      connect_timeout=1, capabilities={"chat": True, "chat_model": "fake-chat"})
        RetrievalSettings.objects.filter(pk=1).update(default_chat_server=row)
        yield server


def _ask(api, conversation_id, question):
    sent = api.post(f"/api/conversations/{conversation_id}/messages/", {"content": question}, format="json").json()
    answer_conversation(conversation_id)
    return Message.objects.get(pk=sent["assistant_message"]["id"])


def _unavailable_count() -> float:
    for line in render_metrics().decode().splitlines():
        if line.startswith('ai_chat_model_unavailable_total{reason="error"}'):
            return float(line.split()[-1])
    return 0.0


def test_a_stopped_chat_server_gives_the_marked_extractive_answer_then_generation_resumes(api, user, chat_server):
    document = indexed(user, "Quince trees are pruned in late February, before the buds swell.", "quince.txt")
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    chat_server.script_chat("In late February [S1].")
    first = _ask(api, conversation, "When are quince trees pruned?")
    assert first.status == "done" and first.metadata["mode"] == "documents"

    before = _unavailable_count()
    chat_server.stop()
    down = _ask(api, conversation, "When are quince trees pruned?")
    assert down.status == "done", down.error
    assert down.metadata["mode"] == "extractive" and down.content.startswith(NOTICE)
    assert down.metadata["notice"] == NOTICE and down.metadata["model_unavailable"] == "error"
    assert "late February" in down.content and "No language model is configured" not in down.content
    assert [c["document_id"] for c in down.sources] == [document.pk]  # cited, from the same passages
    failure = down.metadata["retrieval"]["model_failure"]
    assert failure["reason"] == "error" and failure["error"]
    shown = down.content + failure["error"] + str(down.metadata.get("notice"))
    assert chat_server.url not in shown and f":{chat_server.port}" not in shown
    assert _unavailable_count() == before + 1

    chat_server.start()  # the same port again
    chat_server.script_chat("Late February, before the buds swell [S1].")
    back = _ask(api, conversation, "When are quince trees pruned?")
    assert back.status == "done" and back.metadata["mode"] == "documents"
    assert back.content.startswith("Late February")


def test_server_addresses_are_scrubbed_from_error_texts():
    text = ("The chat server 'x' at http://10.0.0.7:8000/v1/chat/completions refused; "
            "also 127.0.0.1:45575 and llm.internal.example:11434 and https://api.example.com.")
    scrubbed = without_addresses(text)
    for address in ("10.0.0.7", "127.0.0.1", "45575", "llm.internal.example", "api.example.com", "http"):
        assert address not in scrubbed
    assert scrubbed.startswith("The chat server 'x' at (server address hidden) refused")


def test_in_agentic_mode_a_stopped_chat_server_gives_the_same_marked_extractive_answer(api, user, chat_server):
    document = indexed(user, "Quince trees are pruned in late February, before the buds swell.", "quince.txt")
    row = AiServer.objects.get(name="own chat")
    row.capabilities = {**row.capabilities, "tools": True}
    row.save()
    RetrievalSettings.objects.filter(pk=1).update(chat_mode="agentic", agent_max_searches=2)
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    before = _unavailable_count()
    chat_server.stop()
    down = _ask(api, conversation, "When are quince trees pruned?")
    assert down.status == "done", down.error
    assert down.metadata["mode"] == "extractive" and down.content.startswith(NOTICE)
    assert down.metadata["model_unavailable"] == "error" and "agentic_fallback" in down.metadata
    assert "late February" in down.content
    assert [c["document_id"] for c in down.sources] == [document.pk]
    assert down.metadata["retrieval"]["model_failure"]["reason"] == "error"
    assert chat_server.url not in down.content + str(down.metadata) and f":{chat_server.port}" not in down.content
    assert _unavailable_count() == before + 1
