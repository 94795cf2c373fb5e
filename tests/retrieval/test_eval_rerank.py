"""eval_retrieval --rerank: the hybrid+rerank arm, and a clear refusal without a rerank-capable server."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from documents.models import Document
from retrieval.models import AiServer, RetrievalSettings

pytestmark = pytest.mark.django_db


def squad_file(tmp_path):
    def paragraph(context: str, question: str, answer: str) -> dict:
        return {"context": context, "qas": [{"id": question, "question": question,
                                             "answers": [{"text": answer, "answer_start": context.index(answer)}]}]}

    data = {"data": [
        {"title": "Bridges", "paragraphs": [
            paragraph("The suspension bridge over the river opened in 1932.", "When did the suspension bridge open?",
                      "1932"),
            paragraph("A ferry crossed the river every hour before that.", "How often did the ferry cross?",
                      "every hour")]},
        {"title": "Gardens", "paragraphs": [
            paragraph("Roses are pruned in early spring before the buds open.", "When are roses pruned?",
                      "early spring")]},
    ]}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run(*args) -> dict:
    out = io.StringIO()
    call_command("eval_retrieval", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_rerank_without_a_capable_server_fails_clearly_before_ingesting(tmp_path, fake_embedder):
    path = squad_file(tmp_path)
    with pytest.raises(CommandError) as refused:
        run("--squad", str(path), "--rerank")
    message = str(refused.value)
    assert "No rerank server is chosen in the retrieval settings" in message
    assert "No active AI server has the rerank capability" in message
    assert not Document.objects.exists()
    AiServer.objects.create(name="chat only", kind="openai", base_url=fake_embedder.url,
                            capabilities={"chat": True, "chat_model": "m"})
    with pytest.raises(CommandError, match="'chat only' is not an active OpenAI-compatible server with the rerank"):
        run("--squad", str(path), "--rerank", "chat only")
    with pytest.raises(CommandError, match="No AI server is named 'nope'"):
        run("--squad", str(path), "--rerank", "nope")


def test_a_rerank_server_that_does_not_answer_is_refused_up_front(tmp_path, fake_embedder):
    AiServer.objects.create(name="reranker", kind="openai", base_url=fake_embedder.url, capabilities={"rerank": True})
    fake_embedder.fail_next("/rerank", {"status": 503}, times=2)
    with pytest.raises(CommandError, match="The rerank server 'reranker' cannot be used: .*HTTP 503"):
        run("--squad", str(squad_file(tmp_path)), "--rerank", "reranker")


def test_rerank_adds_the_hybrid_rerank_arm_and_plain_arms_never_rerank(tmp_path, fake_embedder):
    server = AiServer.objects.create(name="reranker", kind="openai", base_url=fake_embedder.url,
                                     capabilities={"rerank": True})
    # Chosen in the settings too: the plain arms must still measure the fusion alone.
    RetrievalSettings.objects.filter(pk=1).update(rerank_server=server)
    results = run("--squad", str(squad_file(tmp_path)), "--rerank", "--arms", "vector,hybrid")
    assert set(results) == {"vector", "hybrid", "hybrid+rerank", "_run"}
    arm = results["hybrid+rerank"]
    assert arm["n"] == 3 and arm["rerank_server"] == "reranker" and arm["rerank_status"] == {"ok": 3}
    assert {"hit@1", "hit@5", "mrr@10"} <= set(arm)
    assert 0 < arm["hit@1"] <= 1
    # One probe, then exactly one rerank call per question of the rerank arm.
    texts = [r["json"]["query"] for r in fake_embedder.requests if r["path"] == "/rerank"]
    assert texts[0] == "probe" and len(texts) == 1 + 3
