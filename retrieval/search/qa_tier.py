"""Tier 1: approved Q&A pairs within the embedding model's calibrated bound of the question.

A topic narrows first and never gates: the subcategory's pairs, then the category's, then every
topic's. Pairs are ranked by their distance less the model's calibrated shift for the two questions'
language relation (retrieval/knowledge/calibration.py), so the right pair in another language is not
pushed out by pairs that are merely in the user's language.

A pair within the bound is admitted by its meaning (retrieval/knowledge/agreement.py, `admission`): in
the question's language, within the direct-answer distance, or sharing a number, two content words, or
one content word while closer than unrelated questions of one language come; in another language, by
distance alone, closer than unrelated questions of two languages come (the calibration's 1st
percentiles). At most MAX_PAIRS of them. The pairs refused are in the tier's trace (`refused`: id,
ranked distance, reason).
"""
from __future__ import annotations

import time
from functools import lru_cache

from django.db import connection
from django.utils.translation import gettext

from documents.language import detect_question_language
from retrieval.contracts import Segment, TierTrace
from retrieval.knowledge.agreement import admission, function_stems
from retrieval.knowledge.calibrating import Bounds, distance_bounds
from retrieval.models import EmbeddingModel, KnowledgeEntry, RetrievalSettings
from retrieval.search import arms as search_arms
from retrieval.search.followup import STOP_WORDS
from retrieval.search.request import QuestionContext, Search
from retrieval.selectors import default_embedding_server, retrieval_settings_get

ALL_TOPICS = "all topics"  # the Q&A tier's last attempt: every topic's pairs
QA_CANDIDATES_MAX = 1000  # a guard on the pairs tier 1 ranks for one question (they are all within its bound)
MAX_PAIRS = 2  # approved pairs one question's context takes at most
REFUSED_TRACED = 5  # refused pairs named in the trace
FUNCTION_STEMS = function_stems(STOP_WORDS)  # cs/en/de/ru function and question words: never shared meaning


@lru_cache(maxsize=1)
def _model_and_pairs_sql() -> tuple[str, tuple]:
    """The default embedding model's row and whether any approved pair is live, in one plain statement: as
    two ORM queries they cost ~0.7 ms of CPU of every question to build, this ~0.2 ms. "Live" is
    `KnowledgeEntry.objects.live()`'s own SQL, compiled once per process (the rule is code, not data)."""
    live, params = KnowledgeEntry.objects.live().order_by().values("pk").query.sql_with_params()
    return (f"SELECT m.*, EXISTS ({live}) AS any_live_pair FROM retrieval_embeddingmodel m "
            "WHERE m.name = %s AND m.dim = %s", tuple(params))


def question_context(rs: RetrievalSettings | None = None) -> QuestionContext:
    """The default embedding model's distances (calibrated, overridden, or the settings' until calibrated),
    the model, and whether any approved pair is live: read for each question, never cached (a calibration,
    an override or a pair approved counts on the next question). The chat reads it before retrieve() (to
    know whether retrieval will embed the question) and hands it over, so the answer path reads it once."""
    rs = rs or retrieval_settings_get()
    server = default_embedding_server(rs)
    model = None
    if server is not None and server.embedding_model:
        sql, live_params = _model_and_pairs_sql()
        model = next(iter(EmbeddingModel.objects.raw(sql, [*live_params, server.embedding_model,
                                                           server.embedding_dim])), None)
    any_live_pair = bool(model.any_live_pair) if model is not None else KnowledgeEntry.objects.live().exists()
    return QuestionContext(distance_bounds(model, rs), model, any_live_pair)


@lru_cache(maxsize=4096)
def _pair_language(question: str) -> str:
    """An approved question's language (cached: the same pairs come up for many questions)."""
    return detect_question_language(question)


def _attempts(category: str, subcategory: str) -> list[tuple[str, object]]:
    """(label, pairs) to try in order: the subcategory's, the category's (whatever their subcategory),
    then every topic's."""
    live = KnowledgeEntry.objects.live()
    attempts: list[tuple[str, object]] = []
    if subcategory:
        attempts.append((f"{category} / {subcategory}" if category else subcategory,
                         live.filter(subcategory=subcategory, **({"category": category} if category else {}))))
    if category:
        attempts.append((category, live.filter(category=category)))
    # A topic narrows first; it never gates: when none of its pairs is close enough (or no topic was
    # given), every topic's pairs.
    attempts.append((ALL_TOPICS, live))
    return attempts


def qa_tier(search: Search, category: str, subcategory: str) -> list[Segment]:
    """Approved pairs within the tier-1 bound, closest first by their language-shifted distance."""
    rs, trace, bounds, model = search.rs, search.trace, search.bounds, search.context.model
    server = default_embedding_server(rs)
    tier: TierTrace = {"tier": 1, "kind": "qa", "category": category, "subcategory": subcategory, "kept": 0}
    trace["tiers"].append(tier)
    if server is None or not server.embedding_model:
        trace["fallbacks"].append("no embedding server for approved Q&A pairs")
        return []
    if model is None:
        return []
    attempts = _attempts(category, subcategory)
    q = search_arms.vector_literal(search.vectors.for_server(server))
    started = time.perf_counter()  # after the query embedding, which has its own timing
    rows: list = []
    kept: list = []
    for n, (label, entries) in enumerate(attempts):
        ids = list(entries.values_list("id", flat=True))  # type: ignore[attr-defined]
        rows = _candidates(q, ids, model=model, bounds=bounds, limit=rs.qa_limit) if ids else []
        if ids and len(rows) < len(ids):
            tier["without_vectors"] = len(ids) - len(rows)
        tier["searched"] = label
        within = _within_bound(search, rows)
        kept = _admitted(search, within, tier)[:min(rs.qa_limit, MAX_PAIRS)]
        if kept:
            break
        why = ("approved Q&A pairs of '{label}' within the distance threshold, none sharing a word with the "
               "question".format(label=label) if within else
               f"approved Q&A pairs of '{label}' found, none within the distance threshold "
               f"{bounds.qa:g} (closest {rows[0][1]:.3f})" if rows else f"no approved Q&A pairs of '{label}'")
        more = attempts[n + 1][0] if n + 1 < len(attempts) else None
        trace["fallbacks"].append(why + ("" if more is None else "; tried every topic" if more == ALL_TOPICS
                                         else "; tried the category alone"))
    trace["timings_ms"]["qa"] = round((time.perf_counter() - started) * 1000, 2)
    tier["candidates"] = len(rows)
    tier["kept"] = len(kept)
    return [qa_segment(entry, distance, ranked) for entry, distance, ranked in kept]


def _candidates(q: str, ids: list[int], *, model: EmbeddingModel, bounds: Bounds, limit: int) -> list:
    """(entry id, distance) of the pairs `ids`: the `limit` closest, and with a language shift also every
    pair the loosest shifted bound may keep (a pre-cut by distance alone would drop the pairs in another
    language again)."""
    loosest = bounds.qa + max([0.0, *bounds.qa_language_shift.values()]) if bounds.qa_language_shift else -1.0
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH d AS (SELECT entry_id, embedding <=> %s::vector AS distance FROM retrieval_knowledgeembedding "
            f"WHERE model_id = {int(model.pk)} AND entry_id = ANY(%s)) "
            f"SELECT entry_id, distance FROM d WHERE distance < %s OR entry_id IN "
            f"(SELECT entry_id FROM d ORDER BY distance, entry_id LIMIT %s) ORDER BY distance, entry_id LIMIT %s",
            [q, ids, loosest, limit, QA_CANDIDATES_MAX],
        )
        return cursor.fetchall()


def _within_bound(search: Search, rows: list) -> list:
    """(entry, distance, ranked distance, same language) of the candidate pairs within the bound, ranked;
    without a calibrated language shift the ranked distance is the distance itself. "Same language": the
    two questions' detected languages agree, or either is unknown."""
    bounds = search.bounds
    entries = KnowledgeEntry.objects.in_bulk([entry_id for entry_id, _ in rows])
    language = search.trace.get("question_language") or detect_question_language(search.query)
    ranked = []
    for entry_id, distance in rows:
        entry = entries.get(entry_id)
        if entry is None:
            continue
        pair_language = _pair_language(entry.question)
        shift = bounds.qa_shift(language, pair_language) if bounds.qa_language_shift else 0.0
        same = not language or not pair_language or language == pair_language
        ranked.append((entry, distance, distance - shift, same))
    ranked.sort(key=lambda row: (row[2], row[0].pk))
    return [row for row in ranked if row[2] < bounds.qa]


def _admitted(search: Search, within: list, tier: TierTrace) -> list:
    """The pairs within the bound that the question's meaning admits (agreement.admission), in order, as
    (entry, distance, ranked distance); the refused ones go into the tier's trace."""
    admitted = []
    refused = tier.get("refused", [])
    limits = search.bounds.admission()
    for entry, distance, ranked, same in within:
        decision = admission(question=search.query, pair_text=f"{entry.question} {entry.answer}", distance=distance,
                             same_language=same, bounds=limits, function_words=FUNCTION_STEMS)
        if decision.direct:
            admitted.append((entry, distance, ranked))
        elif len(refused) < REFUSED_TRACED and all(r["qa_id"] != entry.pk for r in refused):
            refused.append({"qa_id": entry.pk, "ranked_distance": round(ranked, 6), "reason": decision.reason})
    if refused:
        tier["refused"] = refused
    return admitted


def qa_segment(entry: KnowledgeEntry, distance: float, ranked: float | None = None) -> Segment:
    """An approved pair as a retrieved segment (tier 1), named in the reader's language."""
    return {
        "source_type": "qa", "qa_id": entry.pk, "chunk_id": None, "document_id": None,
        "document_name": gettext("Approved answer"), "chunk_index": None, "page_number": None, "heading_path": [],
        "start_offset": None, "end_offset": None, "question": entry.question, "answer": entry.answer,
        "excerpt": f"Q: {entry.question}\nA: {entry.answer}", "score": round(1.0 - distance, 6),
        "distance": round(distance, 6), "vector_rank": None, "fts_rank": None, "tier": 1,
        "fused_rank": None, "rerank_rank": None, "rerank_score": None,  # Q&A pairs are neither fused nor reranked
        "category": entry.category, "subcategory": entry.subcategory,  # the topic the pair came from
        "ranked_distance": round(distance if ranked is None else ranked, 6),
    }
