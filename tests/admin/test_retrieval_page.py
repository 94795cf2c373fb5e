"""The retrieval test page calls retrieve() and agrees with /api/search/; it shows ranks, distances, tiers, fallbacks, timings."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, ConversationDocument
from retrieval.knowledge.services import knowledge_entry_embed
from retrieval.models import KnowledgeEntry, SubcategoryMapping
from tests.admin.conftest import indexed

pytestmark = pytest.mark.django_db

URL = reverse("admin:retrieval_test")
TEXTS = {
    "bridge.txt": "The suspension bridge over the river was opened in 1932 after four years of construction.",
    "ferry.txt": "Before the bridge opened, a ferry crossed the river every hour.",
    "canes.txt": "Raspberries grow on canes. Everbearing raspberries fruit twice a year.",
    "tower.txt": "The clock tower near the bridge was built in 1890 and restored in 1990.",
}


def page_chunk_ids(html: str) -> list[int]:
    return [int(m) for m in re.findall(r'data-chunk-id="(\d+)"', html)]


def test_the_page_shows_exactly_what_the_search_api_returns(admin_client, api, user, other_user, fake_embedder):
    for name, text in TEXTS.items():
        indexed(user, text, name)
    indexed(other_user, "The bridge of another user, opened in 1932 as well.", "other.txt")
    query = "When was the bridge over the river opened?"
    response = admin_client.get(URL, {"q": query, "user": "alice"})
    assert response.status_code == 200
    from_api = api.get("/api/search/", {"q": query}).json()["segments"]
    assert len(from_api) >= 3
    expected = [s["chunk_id"] for s in from_api]
    assert [row["segment"]["chunk_id"] for row in response.context["segments"]] == expected
    assert page_chunk_ids(response.content.decode()) == expected
    # Same ranks per arm and distances as the API gives.
    for row, segment in zip(response.context["segments"], from_api):
        for key in ("vector_rank", "fts_rank", "distance", "score", "tier"):
            assert row["segment"][key] == segment[key], key
    page = response.content.decode()
    top = from_api[0]
    assert f"<td class=\"num\">{top['distance']}</td>" in page
    assert "bridge.txt" in page and "other.txt" not in page
    for timing in ("query_embedding", "vector_arm_t2", "fts_arm_t2", "fusion_t2", "total"):
        assert f"<td>{timing}</td>" in page, timing
    # By user id too, with a top-N as the API's k.
    by_id = admin_client.get(URL, {"q": query, "user": str(user.pk), "k": 2})
    assert [r["segment"]["chunk_id"] for r in by_id.context["segments"]] == \
        [s["chunk_id"] for s in api.get("/api/search/", {"q": query, "k": 2}).json()["segments"]]


def test_tiers_and_fallbacks_match_the_api(admin_client, api, user, staff_user, fake_embedder):
    qa = KnowledgeEntry.objects.create(question="When do everbearing raspberries fruit?", answer="Twice a year.",
                                       category="fruit", subcategory="raspberry, everbearing",
                                       approved_by=staff_user, approved_at=timezone.now())
    assert knowledge_entry_embed(qa.pk) == "ready"
    SubcategoryMapping.objects.create(subcategory="raspberry, everbearing", general_subcategory="raspberry")
    indexed(user, TEXTS["canes.txt"], "canes.txt", category="fruit", subcategory="raspberry")
    params = {"q": "When do everbearing raspberries fruit?", "category": "fruit",
              "subcategory": "raspberry, everbearing"}
    response = admin_client.get(URL, {**params, "user": "alice"})
    from_api = api.get("/api/search/", params).json()
    segments = [row["segment"] for row in response.context["segments"]]
    assert [(s["qa_id"], s["chunk_id"], s["tier"]) for s in segments] == \
        [(s["qa_id"], s["chunk_id"], s["tier"]) for s in from_api["segments"]]
    assert [s["tier"] for s in segments] == [1, 3]
    trace = response.context["trace"]
    assert trace["fallbacks"] == from_api["trace"]["fallbacks"]
    assert any("tried the general subcategory 'raspberry'" in f for f in trace["fallbacks"])
    page = response.content.decode()
    assert "tried the general subcategory &#x27;raspberry&#x27;" in page
    assert f'data-qa-id="{qa.pk}"' in page and ">Q&amp;A</span>" in page
    assert "answered by tier 1" in page


def test_a_conversation_limits_the_scope_and_a_foreign_one_is_refused(admin_client, user, other_user, fake_embedder):
    bridge = indexed(user, TEXTS["bridge.txt"], "bridge.txt")
    indexed(user, TEXTS["ferry.txt"], "ferry.txt")
    conversation = Conversation.objects.create(owner=user)
    ConversationDocument.objects.create(conversation=conversation, document=bridge)
    response = admin_client.get(URL, {"q": "river", "user": "alice", "conversation": conversation.pk})
    assert response.context["trace"]["scope"] == "attached"
    assert {row["segment"]["document_id"] for row in response.context["segments"]} == {bridge.pk}
    foreign = admin_client.get(URL, {"q": "river", "user": "bob", "conversation": conversation.pk})
    assert foreign.context["error"] == "No such conversation."
    assert "segments" not in foreign.context


def test_the_form_names_an_unknown_user(admin_client):
    response = admin_client.get(URL, {"q": "anything", "user": "nobody"})
    assert response.context["form"].errors == {"user": ["No active user 'nobody'."]}
    assert admin_client.get(URL).context["form"].is_bound is False  # an empty form first


def test_the_page_shows_fused_and_rerank_ranks_and_the_rerank_status(admin_client, api, user, fake_embedder):
    from retrieval.models import AiServer, RetrievalSettings

    for name, text in TEXTS.items():
        indexed(user, text, name)
    query = "When was the bridge over the river opened?"
    off = admin_client.get(URL, {"q": query, "user": "alice"}).content.decode()
    assert re.search(r'id="rs-rerank-status">not used<', off) and "no rerank server chosen" in off
    server = AiServer.objects.create(name="fake reranker", kind="openai", base_url=fake_embedder.url,
                                     capabilities={"rerank": True})
    RetrievalSettings.objects.filter(pk=1).update(rerank_server=server)
    fake_embedder.fail_next("/rerank", {"rerank_reverse": True})
    response = admin_client.get(URL, {"q": query, "user": "alice"})
    page = response.content.decode()
    segments = [row["segment"] for row in response.context["segments"]]
    n = len(segments)
    assert n >= 3
    fused = [int(x) for x in re.findall(r'<td class="num rs-fused-rank">(\d+)</td>', page)]
    reranked = [int(x) for x in re.findall(r'<td class="num rs-rerank-rank">(\d+)</td>', page)]
    assert reranked == list(range(1, n + 1)) and fused == list(range(n, 0, -1))
    assert '<span class="rs-badge ok" id="rs-rerank-status">ok</span>' in page
    assert f"fake reranker: {n} candidates of tier 2" in page
    assert "<td>rerank</td>" in page  # its timing
    # The API gives the same order and ranks.
    fake_embedder.fail_next("/rerank", {"rerank_reverse": True})
    from_api = api.get("/api/search/", {"q": query}).json()["segments"]
    assert [(s["chunk_id"], s["fused_rank"], s["rerank_rank"]) for s in from_api] == \
        [(s["chunk_id"], s["fused_rank"], s["rerank_rank"]) for s in segments]
    # A failing reranker: the page says so and shows the fused order.
    fake_embedder.fail_next("/rerank", {"status": 500})
    failed = admin_client.get(URL, {"q": query, "user": "alice"}).content.decode()
    assert '<span class="rs-badge warn" id="rs-rerank-status">error</span>' in failed
    assert re.findall(r'<td class="num rs-fused-rank">(\d+)</td>', failed) == [str(i) for i in range(1, n + 1)]
    assert "reranking skipped, the fused order was kept" in failed
