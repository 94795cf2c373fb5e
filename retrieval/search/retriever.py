"""retrieve(): the one retrieval function behind the chat, the API, the admin test page and the evaluation.

Approved Q&A pairs first (tier 1, retrieval/search/qa_tier.py), then documents of the subcategory
(tier 2), then of its general subcategory (tier 3, only when tier 2 found nothing) — each within the
conversation's scope given. Documents are found by hybrid search (retrieval/search/document_tier.py):
HNSW cosine per embedding model and full text per language, fused by weighted reciprocal rank.
Thresholds apply to the vector arm's cosine distance, never to fused scores. When a rerank server is
chosen, a document tier's best fused candidates are then reordered by it (retrieval/search/rerank.py,
which documents the fields).

Stages: the request (retrieval/search/request.py) is resolved for the user (`_begin`: settings, scope,
bounds, trace), the tiers run (`_topical_tiers` with a topic, `_untopical_tiers` without), the list is
cut (`_final_cut`) and recorded.

Segments come ordered by tier, then in each tier's own order: Q&A by distance, documents by
the reranker when it answered, else by fused score. `score` is always the fused score (Q&A:
1 - cosine distance), never the reranker's (`rerank_score`).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Unpack

from documents.governance import retired_document_ids
from documents.language import detect_question_language
from retrieval.contracts import RetrievalTrace, Segment
from retrieval.models import SubcategoryMapping
from retrieval.search.document_tier import DocumentTier, document_tier
from retrieval.search.qa_tier import qa_tier, question_context
from retrieval.search.request import (ALL_ARMS, QueryVectors, QuestionContext, RetrievalOptions, RetrievalRequest,
                                      RetrievalResult, Search)
from retrieval.search.rerank import reranking_plan
from retrieval.search.scope import ALL as ALL_DOCUMENTS
from retrieval.search.scope import Scope, with_collections
from retrieval.selectors import retrieval_settings_get
from retrieval.telemetry import CHUNKS_RETRIEVED, RETRIEVE_TOTAL, log_retrieval

__all__ = ["ALL_ARMS", "QuestionContext", "RetrievalRequest", "RetrievalResult", "question_context", "retrieve",
           "retrieve_request"]


def retrieve(user, query: str, scope: Scope | None = None, category: str | None = None,
             subcategory: str | None = None, k: int | None = None,
             **options: Unpack[RetrievalOptions]) -> RetrievalResult:
    """Ordered segments for `query` within `scope` (default: everything the user reads: their own
    documents and the collections open to them), with a trace.

    The scope comes from `documents_scope(user, ids)`, `collection_scope(user, slug)` or, for a
    conversation, from the chat (`chat.selectors.conversation_scope`); `scope_for(user,
    conversation=id, collection=slug)` reaches them all. The options (arms, rerank, retrieval_settings,
    query_vectors, context) are RetrievalRequest's fields, which says what each does.
    """
    return retrieve_request(user, RetrievalRequest(
        query=query, scope=scope, category=(category or "").strip(), subcategory=(subcategory or "").strip(),
        k=k, **options))


def retrieve_request(user, request: RetrievalRequest) -> RetrievalResult:
    """retrieve() for a request built already."""
    started = time.perf_counter()
    search = _begin(user, request)
    segments = _topical_tiers(search) if request.topical else _untopical_tiers(search)
    segments = _final_cut(search, segments)
    trace = search.trace
    trace["answered_by_tier"] = segments[0]["tier"] if segments else None
    total = time.perf_counter() - started
    trace["timings_ms"]["total"] = round(total * 1000, 2)
    _record(user, search.scope, segments, trace, _k(search), total)
    return RetrievalResult(segments, trace)


def _k(search: Search) -> int:
    """The final top-N: the request's explicit k, else the settings'."""
    return int(search.request.k or search.rs.final_top_n)


def _begin(user, request: RetrievalRequest) -> Search:
    """The request resolved for the user: settings, scope (with the collections read now, from the user's
    groups, and again by row-level security; without the retired documents), bounds and the trace."""
    rs = request.retrieval_settings or retrieval_settings_get()
    scope = with_collections(user, request.scope or ALL_DOCUMENTS)
    # Expired documents of the policy "leave retrieval" are not searched, whichever path asks.
    scope = replace(scope, retired_ids=retired_document_ids(user=user))
    trace = _trace(request, scope)
    # The live settings' embedding server was loaded (or its row version checked) a moment ago: the
    # search reuses it instead of reading the row again (~1.5 ms of CPU per question). A copy of the
    # settings (an evaluation run's) may hold an older row: then the servers are read.
    fresh = rs.default_embedding_server if request.retrieval_settings is None else None
    known = {fresh.pk: fresh} if fresh is not None and fresh.is_active else {}
    context = request.context or question_context(rs)
    bounds = context.bounds
    trace["bounds"] = {"direct": bounds.direct, "qa": bounds.qa, "doc": bounds.doc, "source": bounds.source,
                       "qa_language_shift": bounds.qa_language_shift, "same_language_p1": bounds.same_language_p1,
                       "cross_language_p1": bounds.cross_language_p1}
    return Search(user=user, request=request, rs=rs, scope=scope, trace=trace,
                  vectors=QueryVectors(request.query, trace, request.query_vectors), known=known,
                  reranking=reranking_plan(rs, request.rerank), context=context)


def _trace(request: RetrievalRequest, scope: Scope) -> RetrievalTrace:
    language = detect_question_language(request.query) if "fts" in request.arms else ""
    return {"question_language": language, "scope": scope.kind, "conversation_id": scope.conversation_id,
            "attached_document_ids": scope.attached_ids, "not_indexed_document_ids": scope.not_indexed,
            "own_documents": scope.include_own and scope.kind != "attached",
            "collections": [] if scope.kind == "attached" else scope.collections,
            "category": request.category, "subcategory": request.subcategory, "arms": list(request.arms),
            "tiers": [], "answered_by_tier": None, "fallbacks": [], "candidates": {}, "timings_ms": {},
            "rerank": None}  # rerank: set by the rerank stage when it runs


def _topical_tiers(search: Search) -> list[Segment]:
    """With a topic: each tier has its own limit (qa_limit, doc_limit); the combined list is not cut to the
    final top-N, so approved answers cannot push every passage out (and the prompt gives the passages
    their room first: chat.prompts.select_context). Only an explicit `k` cuts it."""
    request, rs, trace = search.request, search.rs, search.trace
    category, subcategory = request.category, request.subcategory
    qa = qa_tier(search, category, subcategory)
    # Tier 2 filters by the subcategory alone (a document filed under another category but the same
    # subcategory still answers); by the category only when no subcategory is given.
    docs = document_tier(search, DocumentTier(tier=2, limit=rs.doc_limit, category="" if subcategory else category,
                                              subcategory=subcategory, threshold=search.bounds.doc))
    if not docs and subcategory:
        general = SubcategoryMapping.objects.filter(subcategory=subcategory).values_list(
            "general_subcategory", flat=True).first()
        if general:
            trace["fallbacks"].append(f"no documents of '{subcategory}' within the threshold; "
                                      f"tried the general subcategory '{general}'")
            docs = document_tier(search, DocumentTier(tier=3, limit=rs.doc_limit, subcategory=general,
                                                      threshold=search.bounds.doc))
        else:
            trace["fallbacks"].append(f"no documents of '{subcategory}' within the threshold and no "
                                      "general subcategory is mapped")
    trace["limits"] = {"qa_limit": rs.qa_limit, "doc_limit": rs.doc_limit, "k": _k(search) if request.k else None}
    return qa + docs


def _untopical_tiers(search: Search) -> list[Segment]:
    """Without a topic approved pairs are searched across all topics: most users never pick one, and
    the pairs are the one way approved knowledge reaches them. The pairs the question's meaning admits
    (at most two, qa_tier) come on top of the final top-N passages, never in their place. With no
    approved pair at all the tier is not tried (and not traced): nothing to embed the query for."""
    qa = qa_tier(search, "", "") if search.context.any_live_pair else []
    return qa + document_tier(search, DocumentTier(tier=2, limit=_k(search)))


def _final_cut(search: Search, segments: list[Segment]) -> list[Segment]:
    """Tier order (stable: each tier keeps its own order, fused or the reranker's); without a topic or with
    an explicit k the document passages are cut to the final top-N, the admitted pairs (at most two) kept
    on top of them: a pair never takes a passage's slot."""
    segments.sort(key=lambda s: s["tier"])
    k = _k(search)
    if search.request.k or not search.request.topical:
        pairs = [s for s in segments if s["source_type"] == "qa"]
        documents = [s for s in segments if s["source_type"] != "qa"]
        if len(documents) > k:
            search.trace.setdefault("cut", []).append({"reason": f"final top-{k}", "dropped": len(documents) - k})
        segments = pairs + documents[:k]
    return segments


def _record(user, scope: Scope, segments, trace: RetrievalTrace, k, total) -> None:
    RETRIEVE_TOTAL.labels(scope=scope.kind).inc()
    CHUNKS_RETRIEVED.observe(len(segments))
    scores = [s["score"] for s in segments]
    timings = trace["timings_ms"]
    log_retrieval(
        user_id=user.pk, conversation_id=scope.conversation_id, scope=scope.kind,
        candidate_docs=sum(t.get("candidate_documents", 0) for t in trace["tiers"]),
        candidate_chunks=sum(t.get("candidate_chunks", 0) for t in trace["tiers"]),
        top_k=k, max_score=max(scores) if scores else None, min_score=min(scores) if scores else None,
        tier=trace["answered_by_tier"], embed_latency_ms=timings.get("query_embedding", 0.0),
        search_latency_ms=round(total * 1000 - timings.get("query_embedding", 0.0), 2),
    )
