"""Reranking, the optional second stage: retrieve() follows the reranker, falls back to the fused order, is off by default."""
from __future__ import annotations

import socket
import time

import pytest
from django.utils import timezone

from retrieval.ai.clients import ServerUnusable, reranker_for
from retrieval.knowledge.services import knowledge_entry_embed
from retrieval.models import AiServer, KnowledgeEntry, RetrievalSettings
from retrieval.search.rerank import passage_text
from retrieval.search import retrieve
from tests.retrieval.test_search import indexed

pytestmark = pytest.mark.django_db

QUERY = "When was the bridge over the river opened?"
TEXTS = {
    "bridge.txt": "The suspension bridge over the river was opened in 1932 after four years of construction.",
    "ferry.txt": "Before the bridge opened, a ferry crossed the river every hour.",
    "tower.txt": "The clock tower near the bridge was built in 1890 and restored in 1990.",
    "market.txt": "The market by the river sells fish every morning; the bridge is a short walk away.",
}
RERANK_PATHS = ("/rerank", "/v1/rerank")


def rerank_requests(ai) -> list[dict]:
    return [r for r in ai.requests if r["path"] in RERANK_PATHS]


@pytest.fixture
def corpus(user, fake_embedder):
    return {name: indexed(user, text, name) for name, text in TEXTS.items()}


@pytest.fixture
def rerank_server(fake_embedder):
    """The fake server, registered with the rerank capability and chosen in the settings."""
    server = AiServer.objects.create(name="fake reranker", kind="openai", base_url=fake_embedder.url,
                                     capabilities={"rerank": True})
    RetrievalSettings.objects.filter(pk=1).update(rerank_server=server)
    return server


def chunk_ids(result) -> list[int]:
    return [s["chunk_id"] for s in result.segments]


def test_off_by_default_no_call_and_fused_ranks_recorded(user, corpus, fake_embedder):
    assert RetrievalSettings.objects.get().rerank_server is None
    result = retrieve(user, QUERY)
    assert len(result.segments) == 4
    assert rerank_requests(fake_embedder) == []
    assert result.trace["rerank"] is None and "rerank" not in result.trace["timings_ms"]
    assert [s["fused_rank"] for s in result.segments] == [1, 2, 3, 4]
    assert all(s["rerank_rank"] is None and s["rerank_score"] is None for s in result.segments)
    scores = [s["score"] for s in result.segments]
    assert scores == sorted(scores, reverse=True)


def test_retrieve_follows_a_reranker_that_reverses_the_fused_order(user, corpus, rerank_server, fake_embedder):
    fused = retrieve(user, QUERY, rerank=False)
    assert rerank_requests(fake_embedder) == []  # rerank=False overrides the settings
    fake_embedder.fail_next("/rerank", {"rerank_reverse": True})
    result = retrieve(user, QUERY)
    assert chunk_ids(result) == chunk_ids(fused)[::-1]
    assert [s["rerank_rank"] for s in result.segments] == [1, 2, 3, 4]
    assert [s["fused_rank"] for s in result.segments] == [4, 3, 2, 1]
    assert [s["rerank_score"] for s in result.segments] == [1.0, 0.75, 0.5, 0.25]
    # `score` stays the fused score of each passage: the order follows the reranker, not `score`.
    fused_scores = {s["chunk_id"]: s["score"] for s in fused.segments}
    assert all(s["score"] == fused_scores[s["chunk_id"]] for s in result.segments)
    (request,) = rerank_requests(fake_embedder)
    assert request["path"] == "/rerank" and request["json"]["query"] == QUERY
    assert request["json"]["texts"] == [s["excerpt"] for s in fused.segments]  # in fused order
    rerank = result.trace["rerank"]
    assert rerank["server"] == "fake reranker" and rerank["status"] == "ok" and rerank["candidates"] == 4
    assert rerank["latency_ms"] > 0 and "error" not in rerank
    # The reranker was followed: no fallback names it (the fusion rule may note the fake vectors' ties).
    assert result.trace["timings_ms"]["rerank"] > 0
    assert not [f for f in result.trace["fallbacks"] if "rerank" in f.casefold()]


def test_candidates_beyond_the_final_top_n_are_reranked_then_cut(user, corpus, rerank_server, fake_embedder):
    fused = chunk_ids(retrieve(user, QUERY, rerank=False))
    fake_embedder.fail_next("/rerank", {"rerank_reverse": True})
    top2 = retrieve(user, QUERY, k=2)
    # All 4 candidates went to the reranker (default 30 candidates), so the fused 4th and 3rd win.
    assert len(rerank_requests(fake_embedder)[0]["json"]["texts"]) == 4
    assert chunk_ids(top2) == [fused[3], fused[2]]
    assert [s["fused_rank"] for s in top2.segments] == [4, 3]


def test_only_the_candidates_are_reranked_the_rest_follow_in_fused_order(user, corpus, rerank_server, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(rerank_candidates=2)
    fused = chunk_ids(retrieve(user, QUERY, rerank=False))
    fake_embedder.fail_next("/rerank", {"rerank_reverse": True})
    result = retrieve(user, QUERY)
    assert len(rerank_requests(fake_embedder)[0]["json"]["texts"]) == 2
    assert chunk_ids(result) == [fused[1], fused[0], fused[2], fused[3]]
    assert [s["rerank_rank"] for s in result.segments] == [1, 2, None, None]
    assert result.trace["rerank"]["candidates"] == 2


def test_word_overlap_reranker_through_the_v1_shape(user, fake_embedder, rerank_server):
    # A Jina/Cohere-shaped server: the TEI route answers 404, the client uses /v1/rerank.
    rerank_server.capabilities = {"rerank": True, "rerank_model": "fake-rerank"}
    rerank_server.save()
    indexed(user, "Tulips are planted in autumn; the bulbs need cold weeks to flower.", "tulips.txt")
    indexed(user, "Roses are pruned in early spring, before the buds open.", "roses.txt")
    fake_embedder.fail_next("/rerank", {"status": 404})
    result = retrieve(user, "when are roses pruned")
    assert result.segments[0]["document_name"] == "roses.txt" and result.segments[0]["rerank_rank"] == 1
    assert [r["path"] for r in rerank_requests(fake_embedder)] == ["/rerank", "/v1/rerank"]
    assert rerank_requests(fake_embedder)[-1]["json"]["model"] == "fake-rerank"
    assert result.trace["rerank"]["status"] == "ok"


def test_a_timeout_keeps_the_fused_order_within_the_timeout(user, corpus, rerank_server, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(rerank_timeout=0.5)
    fused = chunk_ids(retrieve(user, QUERY, rerank=False))
    fake_embedder.fail_next("/rerank", {"delay_first_byte": 3600}, times=5)
    started = time.monotonic()
    result = retrieve(user, QUERY)
    elapsed = time.monotonic() - started
    assert chunk_ids(result) == fused
    assert all(s["rerank_rank"] is None for s in result.segments)
    # One attempt: not 1 + max_retries timeouts, and no second API shape tried.
    assert len(rerank_requests(fake_embedder)) == 1
    assert elapsed < 600, elapsed  # the 0.5 s timeout, not the server's hour
    rerank = result.trace["rerank"]
    assert rerank["status"] == "timeout" and rerank["candidates"] == 4
    assert "did not answer within 0.5 s" in rerank["error"]
    assert 450 <= rerank["latency_ms"] < 600_000
    assert any(f.startswith("tier 2: reranking skipped, the fused order was kept") for f in result.trace["fallbacks"])


@pytest.mark.parametrize("fault, expected", [
    ({"status": 500}, "answered HTTP 500"),
    ({"malformed": True}, "invalid response"),
])
def test_a_failing_reranker_keeps_the_fused_order(user, corpus, rerank_server, fake_embedder, fault, expected):
    fused = chunk_ids(retrieve(user, QUERY, rerank=False))
    fake_embedder.fail_next("/rerank", fault, times=5)
    result = retrieve(user, QUERY)
    assert chunk_ids(result) == fused
    assert len(rerank_requests(fake_embedder)) == 1  # no retry of an optional stage
    rerank = result.trace["rerank"]
    assert rerank["status"] == "error" and expected in rerank["error"]
    assert any(expected in f for f in result.trace["fallbacks"])


def test_a_refused_connection_keeps_the_fused_order(user, corpus, rerank_server):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    rerank_server.base_url = f"http://127.0.0.1:{port}"
    rerank_server.save()
    fused = chunk_ids(retrieve(user, QUERY, rerank=False))
    result = retrieve(user, QUERY)
    assert chunk_ids(result) == fused
    assert result.trace["rerank"]["status"] == "error"
    assert "connection refused" in result.trace["rerank"]["error"]


def test_an_external_reranker_is_refused_while_external_ai_is_disabled(user, corpus, rerank_server, fake_embedder):
    rerank_server.is_external = True
    rerank_server.save()
    RetrievalSettings.objects.filter(pk=1).update(external_ai_disabled=True)
    fused = chunk_ids(retrieve(user, QUERY, rerank=False))
    result = retrieve(user, QUERY)
    assert chunk_ids(result) == fused  # the question is answered, from the fusion
    assert rerank_requests(fake_embedder) == []  # no text left for the external server
    assert result.trace["rerank"]["status"] == "error"
    assert "external AI is disabled" in result.trace["rerank"]["error"]


def test_approved_qa_is_not_reranked_and_stays_first(user, staff_user, rerank_server, fake_embedder):
    entry = KnowledgeEntry.objects.create(question="When did the bridge open?", answer="In 1932.", category="town",
                                          approved_by=staff_user, approved_at=timezone.now())
    assert knowledge_entry_embed(entry.pk) == "ready"
    for name in ("bridge.txt", "ferry.txt"):
        indexed(user, TEXTS[name], name, category="town")
    fused = retrieve(user, "When did the bridge open?", category="town", rerank=False)
    fake_embedder.fail_next("/rerank", {"rerank_reverse": True})
    result = retrieve(user, "When did the bridge open?", category="town")
    qa, docs = result.segments[0], result.segments[1:]
    assert qa["source_type"] == "qa" and qa["fused_rank"] is None and qa["rerank_rank"] is None
    assert [s["chunk_id"] for s in docs] == [s["chunk_id"] for s in fused.segments[1:]][::-1]
    texts = rerank_requests(fake_embedder)[0]["json"]["texts"]
    assert len(texts) == 2 and not any("In 1932." == t for t in texts)
    assert result.trace["rerank"]["tier"] == 2


def test_the_reranker_reads_the_heading_path_with_the_passage(user, rerank_server, fake_embedder):
    indexed(user, "# Opening hours\n\nThe museum opens at nine on weekdays.\n", "museum.md")
    retrieve(user, "museum opening")
    (text,) = rerank_requests(fake_embedder)[0]["json"]["texts"]
    assert text.startswith("Opening hours\n") and "opens at nine" in text
    assert passage_text({"heading_path": ["A", "B"], "excerpt": "x"}) == "A › B\nx"
    assert passage_text({"heading_path": [], "excerpt": "x"}) == "x"


def test_search_api_returns_the_rerank_fields(api, user, corpus, rerank_server, fake_embedder):
    fake_embedder.fail_next("/rerank", {"rerank_reverse": True})
    body = api.get("/api/search/", {"q": QUERY}).json()
    segments = body["segments"]
    assert [s["rerank_rank"] for s in segments] == [1, 2, 3, 4]
    assert [s["fused_rank"] for s in segments] == [4, 3, 2, 1]
    assert all(isinstance(s["rerank_score"], float) and isinstance(s["score"], float) for s in segments)
    assert body["trace"]["rerank"]["status"] == "ok" and body["trace"]["rerank"]["server"] == "fake reranker"


def test_the_process_reuses_one_client_per_rerank_configuration(rerank_server):
    first = reranker_for(rerank_server, timeout=1.0)
    assert reranker_for(rerank_server, timeout=1.0) is first  # no new HTTP client per question
    assert first.cfg.max_retries == 0 and first.cfg.read_timeout == 1.0
    assert reranker_for(rerank_server, timeout=2.0) is not first  # a settings change takes effect
    rerank_server.capabilities = {}
    rerank_server.save()
    with pytest.raises(ServerUnusable, match="not set up for reranking"):
        reranker_for(rerank_server, timeout=1.0)
