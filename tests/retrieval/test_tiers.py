"""The three tiers as specified: the Q&A threshold fallback, per-tier limits, tier 2 by subcategory alone,
and the prompt's budget split between approved Q&A pairs and passages (real PostgreSQL, fake AI server)."""
from __future__ import annotations

import pytest

from chat.prompts import select_context
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import KnowledgeEntry, RetrievalSettings
from retrieval.search import retrieve
from tests.chat.helpers import indexed

pytestmark = pytest.mark.django_db


def _qa(staff, question, answer, category, subcategory=""):
    entry = KnowledgeEntry.objects.create(question=question, answer=answer, category=category, subcategory=subcategory)
    knowledge_entry_approve(entry=entry, user=staff)
    assert knowledge_entry_embed(entry.pk) == "ready"
    return entry


def test_qa_falls_back_to_the_category_when_none_of_the_subcategory_is_within_the_threshold(user, staff_user,
                                                                                            fake_embedder):
    # The subcategory has a pair, but about something else: its distance is over the threshold.
    _qa(staff_user, "Which trellis suits summer raspberries?", "A two-wire trellis.", "fruit", "raspberry, summer")
    category_pair = _qa(staff_user, "When should fruit bushes be watered?", "Early in the morning.", "fruit", "general")
    result = retrieve(user, "When should fruit bushes be watered?", category="fruit", subcategory="raspberry, summer")
    qa = [s for s in result.segments if s["source_type"] == "qa"]
    assert [s["qa_id"] for s in qa] == [category_pair.pk]
    assert qa[0]["distance"] < 0.6
    assert any("raspberry, summer" in f and "none within the distance threshold" in f and "tried the category alone" in f
               for f in result.trace["fallbacks"]), result.trace["fallbacks"]
    assert result.trace["tiers"][0]["searched"] == "fruit"


def test_qa_of_the_subcategory_within_the_threshold_win_over_the_category(user, staff_user, fake_embedder):
    own = _qa(staff_user, "When should raspberries be watered?", "Twice a week.", "fruit", "raspberry, summer")
    _qa(staff_user, "When should raspberries be watered?", "Daily.", "fruit", "strawberry")
    result = retrieve(user, "When should raspberries be watered?", category="fruit", subcategory="raspberry, summer")
    assert [s["qa_id"] for s in result.segments if s["source_type"] == "qa"] == [own.pk]


def test_limits_apply_per_tier_and_the_final_top_n_does_not_cut_a_topic(user, staff_user, fake_embedder):
    RetrievalSettings.objects.filter(pk=1).update(qa_limit=3, doc_limit=4, final_top_n=2)
    for i in range(5):
        _qa(staff_user, f"How deep are pear trees planted {i}?", f"Answer {i}.", "fruit", "pear")
    for i in range(6):
        indexed(user, f"Pear trees are planted deep in spring, note {i}.", f"pear{i}.txt", category="fruit",
                subcategory="pear")
    result = retrieve(user, "How deep are pear trees planted?", category="fruit", subcategory="pear")
    kinds = [s["source_type"] for s in result.segments]
    # 6 > final_top_n 2: the limits are the tiers' own (pairs: at most two, within qa_limit 3)
    assert kinds == ["qa"] * 2 + ["document"] * 4
    assert result.trace["limits"] == {"qa_limit": 3, "doc_limit": 4, "k": None}
    # An explicit k (GET /api/search/?k=) still cuts the passages, and the trace says so; the pairs come on top.
    cut = retrieve(user, "How deep are pear trees planted?", category="fruit", subcategory="pear", k=3)
    assert [s["source_type"] for s in cut.segments] == ["qa"] * 2 + ["document"] * 3
    assert cut.trace["cut"] == [{"reason": "final top-3", "dropped": 1}]
    # Without a topic the final top-N applies to the passages as before, the admitted pairs on top.
    assert [s["source_type"] for s in retrieve(user, "How deep are pear trees planted?").segments] == \
        ["qa"] * 2 + ["document"] * 2


def test_tier_two_filters_by_subcategory_not_by_equal_category(user, fake_embedder):
    filed_elsewhere = indexed(user, "Pear trees need a pollinator planted nearby.", "pollen.txt", category="orchard",
                              subcategory="pear")
    indexed(user, "Pear trees need a pollinator planted nearby, says the other subcategory.", "apple.txt",
            category="fruit", subcategory="apple")
    result = retrieve(user, "Do pear trees need a pollinator?", category="fruit", subcategory="pear")
    assert {s["document_id"] for s in result.segments} == {filed_elsewhere.pk}
    assert {s["tier"] for s in result.segments} == {2}


# --- the prompt's budget split (pure) ------------------------------------------------------------


def _words(text: str) -> int:
    return len(text.split())


def _seg(kind: str, n: int, words: int) -> dict:
    text = " ".join(f"w{n}x{i}" for i in range(words))
    base = {"source_type": kind, "qa_id": n if kind == "qa" else None, "chunk_id": None if kind == "qa" else n,
            "document_name": "d.txt", "heading_path": [], "page_number": None, "excerpt": text,
            "tier": 1 if kind == "qa" else 2}
    return base


def test_admitted_pairs_never_leave_an_answer_with_fewer_passages():
    passages = [_seg("document", 100 + i, 40) for i in range(10)]
    pairs = [_seg("qa", i, 40) for i in range(2)]
    # Each entry costs ~47 tokens with its header: 6 fit in 300.
    _order, alone, _report = select_context(passages, 300, _words)
    order, chosen, report = select_context(pairs + passages, 300, _words)
    assert [s["chunk_id"] for s in chosen] == [s["chunk_id"] for s in alone] and len(alone) == 6
    assert report["kept_passages"] == 6 and report["kept_qa"] == 0 and report["used"] <= 300
    assert {c["qa_id"] for c in report["cut"] if c["source_type"] == "qa"} == {0, 1}
    assert {c["reason"] for c in report["cut"]} == {"budget"}
    # With room left by the passages, the pairs come in, first in the retrieval order.
    order, chosen, report = select_context(pairs + passages[:3], 300, _words)
    assert [s["source_type"] for s in chosen] == ["qa", "qa", "document", "document", "document"]
    assert order == sorted(order) and report["cut"] == []


def test_pairs_take_the_room_passages_leave_and_budget_cuts_say_so():
    segments = [_seg("qa", i, 40) for i in range(4)] + [_seg("document", 100, 40)]
    _order, chosen, report = select_context(segments, 300, _words)
    assert [s["source_type"] for s in chosen] == ["qa"] * 4 + ["document"]  # one passage leaves room for all pairs
    _order, chosen, report = select_context(segments, 150, _words)
    assert [s["source_type"] for s in chosen] == ["qa", "qa", "document"]  # the passage first, then the best pairs
    assert [c["qa_id"] for c in report["cut"]] == [2, 3] and {c["reason"] for c in report["cut"]} == {"budget"}


# --- tier 1 without a topic (issue #30) -------------------------------------------------------------


def test_without_a_topic_approved_pairs_of_every_topic_are_searched(user, staff_user, fake_embedder):
    pair = _qa(staff_user, "How often do everbearing raspberries fruit?", "Twice a year.", "fruit",
               "raspberry, everbearing")
    indexed(user, "Everbearing raspberries fruit in summer and again in autumn.", "rasp.txt")
    result = retrieve(user, "How often do everbearing raspberries fruit?")
    assert result.segments[0]["source_type"] == "qa" and result.segments[0]["qa_id"] == pair.pk
    assert (result.segments[0]["category"], result.segments[0]["subcategory"]) == ("fruit", "raspberry, everbearing")
    assert result.trace["tiers"][0]["searched"] == "all topics"
    assert any(s["source_type"] == "document" for s in result.segments)  # the passages keep their room


def test_a_topic_narrows_but_never_gates_approved_pairs(user, staff_user, fake_embedder):
    pair = _qa(staff_user, "How often do everbearing raspberries fruit?", "Twice a year.", "fruit",
               "raspberry, everbearing")
    result = retrieve(user, "How often do everbearing raspberries fruit?", category="vegetables", subcategory="leek")
    assert [s["qa_id"] for s in result.segments if s["source_type"] == "qa"] == [pair.pk]
    assert result.trace["tiers"][0]["searched"] == "all topics"
    assert any("tried every topic" in f for f in result.trace["fallbacks"]), result.trace["fallbacks"]


def test_the_model_and_whether_any_pair_is_live_are_one_statement_read_anew_for_every_question(
        user, staff_user, fake_embedder):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from retrieval.models import EmbeddingModel

    indexed(user, "Everbearing raspberries fruit in summer and again in autumn.", "rasp.txt")
    question = "How often do everbearing raspberries fruit?"
    assert retrieve(user, question).trace["tiers"][0]["kind"] != "qa"  # no live pair: tier 1 not tried
    pair = _qa(staff_user, question, "Twice a year.", "fruit", "raspberry, everbearing")
    server = fake_embedder.server_row
    model = EmbeddingModel.objects.get(name=server.embedding_model, dim=server.embedding_dim)
    EmbeddingModel.objects.filter(pk=model.pk).update(qa_distance_override=0.5)
    with CaptureQueriesContext(connection) as queries:
        result = retrieve(user, question)
    # The pair approved and the override set a moment ago count at once: nothing is kept between questions.
    assert result.segments[0]["qa_id"] == pair.pk
    assert result.trace["bounds"]["qa"] == 0.5 and result.trace["bounds"]["source"]["qa"] == "override"
    # ... and cost one statement (the ORM's two, and a third for tier 1, cost ~1 ms of every question).
    reads = [q["sql"] for q in queries.captured_queries  # (the search joins the models to the documents)
             if "retrieval_embeddingmodel" in q["sql"] and "documents_document" not in q["sql"]]
    assert len(reads) == 1 and "retrieval_knowledgeentry" in reads[0]
    assert not [q["sql"] for q in queries.captured_queries
                if "retrieval_knowledgeentry" in q["sql"] and "LIMIT 1" in q["sql"]]
