"""retrieve(): the one retrieval function behind the chat, the API, the admin test page and the evaluation.

Approved Q&A pairs first (tier 1), then documents of the subcategory (tier 2), then of its
general subcategory (tier 3, only when tier 2 found nothing) — each within the conversation's
scope given. Documents are found by hybrid search: HNSW cosine per embedding model and full text
per language, fused by weighted reciprocal rank. Thresholds apply to the vector arm's cosine
distance, never to fused scores. When a rerank server is chosen, a document tier's best fused
candidates are then reordered by it (retrieval/rerank_stage.py, which documents the fields).

Segments come ordered by tier, then in each tier's own order: Q&A by distance, documents by
the reranker when it answered, else by fused score. `score` is always the fused score (Q&A:
1 - cosine distance), never the reranker's (`rerank_score`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable, Mapping, NamedTuple, cast

import numpy as np
from django.db import connection

from documents.governance import retired_document_ids
from documents.models import Collection
from documents.language import detect_question_language, text_config_for
from documents.language import analysis_of
from retrieval.contracts import RetrievalTrace, Segment, TierTrace
from retrieval.knowledge.calibrating import Bounds, distance_bounds
from retrieval.search import arms as search_arms
from retrieval.search import neighbours
from retrieval.ai.clients import query_embedder_for
from retrieval.search.fusion import rrf
from retrieval.search.fusion_rule import FtsEvidence, skip_fts
from retrieval.search.fusion_rule import fts_weight as fusion_fts_weight
from retrieval.search.fusion_rule import vector_weight as fusion_vector_weight
from retrieval.models import AiServer, EmbeddingModel, KnowledgeEntry, RetrievalSettings, SubcategoryMapping
from retrieval.search.rerank import Reranking, pool_size, rerank_segments, reranking_plan
from retrieval.search.scope import ALL as ALL_DOCUMENTS
from retrieval.search.scope import ModelGroup, Scope, model_groups, reader_transaction, with_collections
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.telemetry import CHUNKS_RETRIEVED, EMBED_LATENCY, RETRIEVE_TOTAL, SEARCH_LATENCY, log_retrieval

ALL_ARMS = ("vector", "fts")
ALL_TOPICS = "all topics"  # the Q&A tier's last attempt: every topic's pairs
QA_CANDIDATES_MAX = 1000  # a guard on the pairs tier 1 ranks for one question (they are all within its bound)
EXCERPT_CHARS = 2000


@dataclass
class RetrievalResult:
    segments: list[Segment]
    trace: RetrievalTrace


class _QueryVectors:
    """Embeds the query once per embedding model, timing it."""

    def __init__(self, query: str, trace: RetrievalTrace, given: Mapping[int, np.ndarray] | None = None):
        self.query = query
        self.trace = trace
        # Vectors the caller embedded already (by server id): the evaluation embeds a set's questions in batches.
        self.cache: dict[tuple, np.ndarray] = {(pk,): np.asarray(v, dtype=np.float32) for pk, v in (given or {}).items()}

    def for_server(self, server: AiServer) -> np.ndarray:
        key = (server.pk,)
        if key not in self.cache:
            started = time.perf_counter()
            client = query_embedder_for(server)
            self.cache[key] = np.asarray(client.embed_queries([self.query])[0], dtype=np.float32)
            elapsed = time.perf_counter() - started
            EMBED_LATENCY.observe(elapsed)
            timings = self.trace["timings_ms"]
            timings["query_embedding"] = round(timings.get("query_embedding", 0) + elapsed * 1000, 2)
        return self.cache[key]


def retrieve(user, query: str, scope: Scope | None = None, category: str | None = None,
             subcategory: str | None = None, k: int | None = None, *, arms: tuple[str, ...] = ALL_ARMS,
             rerank: AiServer | bool = True, retrieval_settings: RetrievalSettings | None = None,
             query_vectors: Mapping[int, np.ndarray] | None = None,
             context: QuestionContext | None = None) -> RetrievalResult:
    """Ordered segments for `query` within `scope` (default: everything the user reads: their own
    documents and the collections open to them), with a trace.

    The scope comes from `documents_scope(user, ids)`, `collection_scope(user, slug)` or, for a
    conversation, from the chat (`chat.selectors.conversation_scope`); `scope_for(user,
    conversation=id, collection=slug)` reaches them all.

    `rerank`: True uses the settings' rerank server (if one is chosen), False never reranks, an
    AiServer reranks with that server (the evaluation compares arms this way).
    `retrieval_settings`: a copy to search with instead of the live settings (the evaluation's runs).
    `query_vectors`: the query's vectors embedded already, by embedding server id (a server missing
    here embeds the query as usual).
    `context`: `question_context(rs)` read by the caller for this question already (the chat's answer
    path), with the same live settings.
    """
    started = time.perf_counter()
    rs = retrieval_settings or retrieval_settings_get()
    explicit_k = bool(k)
    k = int(k or rs.final_top_n)
    category, subcategory = (category or "").strip(), (subcategory or "").strip()
    # The collections are read now, from the user's groups (and again by row-level security).
    scope = with_collections(user, scope or ALL_DOCUMENTS)
    # Expired documents of the policy "leave retrieval" are not searched, whichever path asks.
    scope = replace(scope, retired_ids=retired_document_ids(user=user))
    trace: RetrievalTrace = {"question_language": detect_question_language(query) if "fts" in arms else "", "scope": scope.kind, "conversation_id": scope.conversation_id,
                   "attached_document_ids": scope.attached_ids, "not_indexed_document_ids": scope.not_indexed,
                   "own_documents": scope.include_own and scope.kind != "attached",
                   "collections": [] if scope.kind == "attached" else scope.collections,
                   "category": category, "subcategory": subcategory, "arms": list(arms), "tiers": [],
                   "answered_by_tier": None, "fallbacks": [], "candidates": {}, "timings_ms": {},
                   "rerank": None}  # rerank: set by the rerank stage when it runs
    reranking = reranking_plan(rs, rerank)
    # The live settings' embedding server was loaded (or its row version checked) a moment ago: the
    # search reuses it instead of reading the row again (~1.5 ms of CPU per question). A copy of the
    # settings (an evaluation run's) may hold an older row: then the servers are read.
    fresh = rs.default_embedding_server if retrieval_settings is None else None
    known = {fresh.pk: fresh} if fresh is not None and fresh.is_active else {}
    vectors = _QueryVectors(query, trace, query_vectors)
    context = context or question_context(rs)
    bounds = context.bounds
    trace["bounds"] = {"direct": bounds.direct, "qa": bounds.qa, "doc": bounds.doc, "source": bounds.source,
                       "qa_language_shift": bounds.qa_language_shift}
    segments: list[Segment] = []
    if category or subcategory:
        # Each tier has its own limit (qa_limit, doc_limit); the combined list is not cut to the final
        # top-N, so approved answers cannot push every passage out (the prompt splits its budget, see
        # chat.prompts.select_context). Only an explicit `k` cuts it.
        qa = _qa_tier(query, category, subcategory, rs, vectors, trace, bounds, context.model)
        # Tier 2 filters by the subcategory alone (a document filed under another category but the same
        # subcategory still answers); by the category only when no subcategory is given.
        docs = _document_tier(user, query, scope, rs, vectors, trace, arms, known, tier=2,
                              category="" if subcategory else category,
                              subcategory=subcategory, threshold=bounds.doc, limit=rs.doc_limit,
                              rerank=reranking)
        if not docs and subcategory:
            general = SubcategoryMapping.objects.filter(subcategory=subcategory).values_list(
                "general_subcategory", flat=True).first()
            if general:
                trace["fallbacks"].append(f"no documents of '{subcategory}' within the threshold; "
                                          f"tried the general subcategory '{general}'")
                docs = _document_tier(user, query, scope, rs, vectors, trace, arms, known, tier=3,
                                      subcategory=general, threshold=bounds.doc, limit=rs.doc_limit,
                                      rerank=reranking)
            else:
                trace["fallbacks"].append(f"no documents of '{subcategory}' within the threshold and no "
                                          "general subcategory is mapped")
        segments = qa + docs
        trace["limits"] = {"qa_limit": rs.qa_limit, "doc_limit": rs.doc_limit, "k": k if explicit_k else None}
    else:
        # Without a topic approved pairs are searched across all topics: most users never pick one, and
        # the pairs are the one way approved knowledge reaches them. They take at most half of the
        # final top-N, so the passages keep room.
        # With no approved pair at all the tier is not tried (and not traced): nothing to embed the query for.
        qa = _qa_tier(query, "", "", rs, vectors, trace, bounds, context.model)[:max(1, k // 2)] \
            if context.any_live_pair else []
        segments = qa + _document_tier(user, query, scope, rs, vectors, trace, arms, known, tier=2, limit=k,
                                       rerank=reranking)
    segments.sort(key=lambda s: s["tier"])  # stable: each tier keeps its own order (fused, or the reranker's)
    if explicit_k or not (category or subcategory):
        if len(segments) > k:
            trace.setdefault("cut", []).append({"reason": f"final top-{k}", "dropped": len(segments) - k})
        segments = segments[:k]
    trace["answered_by_tier"] = segments[0]["tier"] if segments else None
    total = time.perf_counter() - started
    trace["timings_ms"]["total"] = round(total * 1000, 2)
    _record(user, scope, segments, trace, k, total)
    return RetrievalResult(segments, trace)


# --- tier 1: approved Q&A pairs --------------------------------------------------------------


@lru_cache(maxsize=1)
def _model_and_pairs_sql() -> tuple[str, tuple]:
    """The default embedding model's row and whether any approved pair is live, in one plain statement: as
    two ORM queries they cost ~0.7 ms of CPU of every question to build, this ~0.2 ms. "Live" is
    `KnowledgeEntry.objects.live()`'s own SQL, compiled once per process (the rule is code, not data)."""
    live, params = KnowledgeEntry.objects.live().order_by().values("pk").query.sql_with_params()
    return (f"SELECT m.*, EXISTS ({live}) AS any_live_pair FROM retrieval_embeddingmodel m "
            "WHERE m.name = %s AND m.dim = %s", tuple(params))


class QuestionContext(NamedTuple):
    """What one question's retrieval reads of the default embedding model (question_context)."""

    bounds: Bounds
    model: EmbeddingModel | None  # the default embedding server's model, None without one
    any_live_pair: bool


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


def _qa_tier(query, category, subcategory, rs, vectors: _QueryVectors, trace: RetrievalTrace,
             bounds: Bounds, model: EmbeddingModel | None) -> list[Segment]:
    """Approved pairs within the tier-1 bound, closest first, by their distance less the model's calibrated
    shift for the two questions' language relation (retrieval/knowledge/calibration.py): the right pair in
    another language is not pushed out by pairs that are merely in the user's language."""
    threshold = bounds.qa
    server = default_embedding_server(rs)
    tier: TierTrace = {"tier": 1, "kind": "qa", "category": category, "subcategory": subcategory, "kept": 0}
    trace["tiers"].append(tier)
    if server is None or not server.embedding_model:
        trace["fallbacks"].append("no embedding server for approved Q&A pairs")
        return []
    if model is None:
        return []
    live = KnowledgeEntry.objects.live()
    # The subcategory's pairs first; when none of them is within the threshold (or it has none), the
    # category's pairs (all of them, whatever their subcategory).
    attempts = []
    if subcategory:
        attempts.append((f"{category} / {subcategory}" if category else subcategory,
                         live.filter(subcategory=subcategory, **({"category": category} if category else {}))))
    if category:
        attempts.append((category, live.filter(category=category)))
    # A topic narrows first; it never gates: when none of its pairs is close enough (or no topic was
    # given), every topic's pairs.
    attempts.append((ALL_TOPICS, live))
    q = search_arms.vector_literal(vectors.for_server(server))
    started = time.perf_counter()  # after the query embedding, which has its own timing
    rows: list = []
    kept: list = []
    for n, (label, entries) in enumerate(attempts):
        ids = list(entries.values_list("id", flat=True))
        rows = []
        if ids:
            # The qa_limit closest, and with a language shift also every pair the loosest shifted bound
            # may keep: a pre-cut by distance alone would drop the pairs in another language again.
            loosest = threshold + max([0.0, *bounds.qa_language_shift.values()]) if bounds.qa_language_shift else -1.0
            with connection.cursor() as cursor:
                cursor.execute(
                    f"WITH d AS (SELECT entry_id, embedding <=> %s::vector AS distance FROM retrieval_knowledgeembedding "
                    f"WHERE model_id = {int(model.pk)} AND entry_id = ANY(%s)) "
                    f"SELECT entry_id, distance FROM d WHERE distance < %s OR entry_id IN "
                    f"(SELECT entry_id FROM d ORDER BY distance, entry_id LIMIT %s) ORDER BY distance, entry_id LIMIT %s",
                    [q, ids, loosest, rs.qa_limit, QA_CANDIDATES_MAX],
                )
                rows = cursor.fetchall()
            if len(rows) < len(ids):
                tier["without_vectors"] = len(ids) - len(rows)
        tier["searched"] = label
        kept = _within_bound(query, rows, bounds, trace)[:rs.qa_limit]
        if kept:
            break
        why = (f"approved Q&A pairs of '{label}' found, none within the distance threshold "
               f"{threshold:g} (closest {rows[0][1]:.3f})" if rows else f"no approved Q&A pairs of '{label}'")
        more = attempts[n + 1][0] if n + 1 < len(attempts) else None
        trace["fallbacks"].append(why + ("" if more is None else "; tried every topic" if more == ALL_TOPICS
                                         else "; tried the category alone"))
    trace["timings_ms"]["qa"] = round((time.perf_counter() - started) * 1000, 2)
    tier["candidates"] = len(rows)
    tier["kept"] = len(kept)
    return [_qa_segment(entry, distance, ranked) for entry, distance, ranked in kept]


def _within_bound(query: str, rows: list, bounds: Bounds, trace: RetrievalTrace) -> list:
    """(entry, distance, ranked distance) of the candidate pairs within the bound, ranked; without a
    calibrated language shift the ranked distance is the distance itself."""
    entries = KnowledgeEntry.objects.in_bulk([entry_id for entry_id, _ in rows])
    language = ""
    if bounds.qa_language_shift:
        language = trace.get("question_language") or detect_question_language(query)
    ranked = []
    for entry_id, distance in rows:
        entry = entries.get(entry_id)
        if entry is None:
            continue
        shift = bounds.qa_shift(language, _pair_language(entry.question)) if language else 0.0
        ranked.append((entry, distance, distance - shift))
    ranked.sort(key=lambda row: (row[2], row[0].pk))
    return [row for row in ranked if row[2] < bounds.qa]


def _qa_segment(entry: KnowledgeEntry, distance: float, ranked: float | None = None) -> Segment:
    return {
        "source_type": "qa", "qa_id": entry.pk, "chunk_id": None, "document_id": None,
        "document_name": "Approved answer", "chunk_index": None, "page_number": None, "heading_path": [],
        "start_offset": None, "end_offset": None, "question": entry.question, "answer": entry.answer,
        "excerpt": f"Q: {entry.question}\nA: {entry.answer}", "score": round(1.0 - distance, 6),
        "distance": round(distance, 6), "vector_rank": None, "fts_rank": None, "tier": 1,
        "fused_rank": None, "rerank_rank": None, "rerank_score": None,  # Q&A pairs are neither fused nor reranked
        "category": entry.category, "subcategory": entry.subcategory,  # the topic the pair came from
        "ranked_distance": round(distance if ranked is None else ranked, 6),
    }


# --- tiers 2 and 3: documents by hybrid search --------------------------------------------------


class _VectorSpace(NamedTuple):
    """A model group the vector arm can search: its vector space, and a server that embeds the query for it."""

    group: ModelGroup
    server: AiServer
    model_id: int
    dim: int


_ACTIVE_SERVER_SQL = 'SELECT "retrieval_aiserver".* FROM "retrieval_aiserver" WHERE id = %s AND is_active'


def _servers_for(groups: list[ModelGroup], trace: RetrievalTrace,
                 known: Mapping[int, AiServer]) -> list[_VectorSpace]:
    """Each model group with a server that can embed the query for it; say which cannot. `known`: active
    servers by id read in this question already."""
    found = []
    for group in groups:
        server = known.get(group.server_id) if group.server_id else None
        if server is None and group.server_id:  # a plain statement: the ORM query cost ~0.3 ms of CPU to build
            server = next(iter(AiServer.objects.raw(_ACTIVE_SERVER_SQL, [group.server_id])), None)
        if server is None or server.embedding_model != group.model_name or server.embedding_dim != group.dim:
            server = next((s for s in AiServer.objects.filter(is_active=True)
                           if s.embedding_model == group.model_name and s.embedding_dim == group.dim), None)
        if server is None or group.model_id is None or group.dim is None:  # a vector space has both
            trace["fallbacks"].append(
                f"{group.documents} documents use the embedding model '{group.model_name}', which no "
                "active server provides; they were searched by full text only")
            continue
        found.append(_VectorSpace(group, server, group.model_id, group.dim))
    return found


def _document_tier(user, query, scope: Scope, rs, vectors: _QueryVectors, trace: RetrievalTrace, arms,
                   known: Mapping[int, AiServer], *, tier: int,
                   category: str = "", subcategory: str = "", threshold: float | None = None,
                   limit: int, rerank: Reranking | None = None) -> list[Segment]:
    info: TierTrace = {"tier": tier, "kind": "documents", "subcategory": subcategory, "kept": 0}
    trace["tiers"].append(info)
    # Every document of the scope (own + collections): when they are all pinned to one model, no
    # document filter is needed (see vector_arm), so no ids either.
    whole_library = scope.attached_ids is None and not (category or subcategory) and not scope.retired_ids
    with reader_transaction(user):
        groups, configs, documents = model_groups(user, scope, category=category, subcategory=subcategory,
                                                  with_ids=not whole_library)
        if whole_library and len(groups) > 1:  # several models: each one's search needs its documents
            groups, configs, documents = model_groups(user, scope)
    info["candidate_documents"] = documents
    info["candidate_chunks"] = sum(g.chunks for g in groups)
    if not groups:
        return []
    searchable = _servers_for(groups, trace, known) if "vector" in arms else []
    # pgvector text of each model's query vector, formatted once for every statement that needs it
    query_vectors = {space.model_id: search_arms.vector_literal(vectors.for_server(space.server))
                     for space in searchable}
    stats = search_arms.lexeme_stats() if "fts" in arms else None  # outside the reader role: see there
    started = time.perf_counter()
    lists: dict[str, list[int]] = {}
    arm_distances: dict[str, list[float]] = {}  # each vector list's distances, best first (the fusion rule's evidence)
    distances: dict[int, float] = {}
    method: dict[str, str] = {}
    with reader_transaction(user):
        for space in searchable:
            group = space.group
            t0 = time.perf_counter()
            hits, how = search_arms.vector_arm(
                model_id=space.model_id, dim=space.dim, query_vector=query_vectors[space.model_id],
                owner_id=user.pk, document_ids=group.document_ids, scope_vectors=group.chunks, top_k=rs.vector_top_k,
                whole_scope=whole_library and len(groups) == 1, scope=scope)
            name = "vector" if len(searchable) == 1 else f"vector:{group.model_name}"
            lists[name] = [chunk_id for chunk_id, _ in hits]
            arm_distances[name] = [distance for _, distance in hits]
            distances.update(dict(hits))
            method[name] = how
            trace["timings_ms"][f"vector_arm_t{tier}"] = round(
                trace["timings_ms"].get(f"vector_arm_t{tier}", 0) + (time.perf_counter() - t0) * 1000, 2)
        fts_weight = rs.fts_weight
        language = trace.get("question_language", "")
        skipped = skip_fts(language=language, analysis=analysis_of(language, text_config_for(language))) \
            if "fts" in arms and searchable else ""
        if skipped:
            info["fts_skipped"] = skipped
            trace["fallbacks"].append(f"tier {tier}: {skipped}")
        elif "fts" in arms:
            t0 = time.perf_counter()
            doc_ids = None if whole_library else [d for g in groups for d in g.document_ids]
            # The question's own configuration too: a mixed document's chunks in that language carry it
            # while their document names another (documents/language/detection.py, detect_chunk_language).
            own = [text_config_for(language)] if language else []
            plans = search_arms.fts_plans(query=query, configs=_fts_configs(sorted(set(configs) | set(own)), trace, info),
                                          stats=stats,
                                          budget=rs.fts_match_budget, language=language)
            fts_hits = search_arms.fts_arm(plans=plans, owner_id=user.pk, document_ids=doc_ids, top_k=rs.fts_top_k,
                                           ranking=rs.fts_ranking, scope=scope)
            lists["fts"] = [chunk_id for chunk_id, _ in fts_hits]
            info["fts_terms"] = {p.config: {"matched": p.matched, "ranked_only": p.pruned} for p in plans}
            coverage = search_arms.fts_best_coverage(plans=plans, hits=fts_hits)
            info["fts_coverage"] = None if coverage is None else round(coverage, 4)
            info["fts_best_rank"] = round(fts_hits[0][1], 6) if fts_hits else None
            if searchable:  # with the vector arm to fall back on, a weak full-text match loses its weight
                fts_weight, why = fusion_fts_weight(
                    weight=rs.fts_weight, evidence=FtsEvidence(language, analysis_of(language, text_config_for(language)),
                                                               coverage))
                if why:
                    info["fts_weight_lowered"] = why
                    trace["fallbacks"].append(f"tier {tier}: {why}")
            info["fts_weight"] = fts_weight
            trace["timings_ms"][f"fts_arm_t{tier}"] = round((time.perf_counter() - t0) * 1000, 2)
        t0 = time.perf_counter()
        weights = {name: (fts_weight if name == "fts" else rs.vector_weight) for name in lists}
        if "fts" in lists and lists["fts"]:
            for name in arm_distances:  # a vector arm that cannot tell its best passages apart yields to full text
                weights[name], why = fusion_vector_weight(weight=rs.vector_weight, distances=arm_distances[name],
                                                          fts_weight=fts_weight)
                if why:
                    info["vector_weight_lowered"] = why
                    trace["fallbacks"].append(f"tier {tier}: {why}")
            info["vector_weight"] = min(weights[name] for name in arm_distances) if arm_distances else None
        fused = rrf(lists, k=rs.rrf_k, weights=weights)
        # A threshold needs every candidate's vector distance, full-text-only hits included. Without one
        # only the passages returned need theirs: with one model the passage query computes them.
        distance_with = None
        if threshold is None and len(searchable) == 1:
            distance_with = (searchable[0].model_id, query_vectors[searchable[0].model_id])
        else:
            missing = [f.key for f in fused if f.key not in distances]
            for space in searchable:
                distances.update(search_arms.distances_for(model_id=space.model_id, dim=space.dim,
                                                           query_vector=query_vectors[space.model_id],
                                                           chunk_ids=missing))
        trace["timings_ms"][f"fusion_t{tier}"] = round((time.perf_counter() - t0) * 1000, 2)
        info["vector_hits"] = {n: len(v) for n, v in lists.items() if n != "fts"}
        info["fts_hits"] = len(lists.get("fts", []))
        info["vector_method"], info["fused"] = method, len(fused)
        if threshold is not None and searchable:
            before = len(fused)
            fused = [f for f in fused if distances.get(f.key, 2.0) < threshold]
            if before and not fused:
                trace["fallbacks"].append(f"tier {tier}: {before} passages found, none within the distance "
                                          f"threshold {threshold}")
        fused, pairs = _pair_neighbours(fused, pool_size(rerank, limit), trace, tier)
        # The pairs' whole texts come with the passages' fields: no statement of their own.
        rows = chunk_rows([f.key for f in fused] + list(pairs.values()), distance_with=distance_with,
                          whole={*pairs, *pairs.values()})
        whole: dict[int, tuple[int, int, int, str]] = {}
        for key, row in rows.items():
            distance = row.pop("distance")
            if distance is not None:
                distances.setdefault(key, distance)
            if "content" in row:
                whole[key] = (row["chunk_index"], row["start_offset"], row["end_offset"], row.pop("content"))
        t0 = time.perf_counter()
        texts = neighbours.joined_texts(_same_document(pairs, rows), whole, limit=2 * EXCERPT_CHARS)
        if pairs:  # the pairing's time (neighbours_t<tier>) and the joined texts' read, together
            timing = f"neighbours_t{tier}"
            trace["timings_ms"][timing] = round(trace["timings_ms"].get(timing, 0.0)
                                                + (time.perf_counter() - t0) * 1000, 2)
    SEARCH_LATENCY.observe(time.perf_counter() - started)
    segments: list[Segment] = []
    for f in fused:
        passage = rows.get(f.key)
        if passage is None:
            continue
        vector_rank = next((r for n, r in f.ranks.items() if n.startswith("vector")), None)
        segments.append(cast(Segment, {  # the passage's fields come from chunk_rows' SQL
            "source_type": "document", "qa_id": None, "chunk_id": f.key, **passage,
            "score": round(f.score, 6), "distance": round(distances[f.key], 6) if f.key in distances else None,
            "vector_rank": vector_rank, "fts_rank": f.ranks.get("fts"), "tier": tier,
        }))
    joined = _join(segments, pairs, rows, texts, {f.key: f.score for f in fused})
    if joined:
        info["neighbours_joined"] = joined
    _name_collections(segments)
    segments = rerank_segments(query, segments, rerank, trace, tier=tier, limit=limit)
    info["kept"] = len(segments)
    return segments


def _pair_neighbours(fused: list, pool: int, trace: RetrievalTrace, tier: int) -> tuple[list, dict[int, int]]:
    """The fused candidates after neighbour joining (retrieval/search/neighbours.py), cut to `pool`, and
    {leader chunk id: partner chunk id} of the pairs among them. Call inside the reader transaction."""
    if neighbours.MODE == "off" or len(fused) < 2:
        return fused[:pool], {}
    t0 = time.perf_counter()
    order = [f.key for f in fused]
    # "join_shown" pairs only within the pool: the positions of the candidates below it are never looked at.
    looked_at = order[:pool] if neighbours.MODE == "join_shown" else order
    pairs = neighbours.pair_neighbours(order, neighbours.chunk_positions(looked_at), shown=pool)
    by_key = {f.key: f for f in fused}
    kept = [by_key[key] for key in neighbours.reorder(order, {f.key: f.score for f in fused}, pairs)][:pool]
    trace["timings_ms"][f"neighbours_t{tier}"] = round((time.perf_counter() - t0) * 1000, 2)
    return kept, {f.key: pairs[f.key] for f in kept if f.key in pairs}


def _same_document(pairs: dict[int, int], rows: dict[int, dict]) -> dict[int, int]:
    """The pairs whose two passages were read and belong to one document."""
    return {lead: partner for lead, partner in pairs.items() if lead in rows and partner in rows
            and rows[lead]["document_id"] == rows[partner]["document_id"]}


def _join(segments: list[Segment], pairs: dict[int, int], rows: dict[int, dict], texts: dict[int, str],
          scores: dict[int, float]) -> list[list[int]]:
    """Each leader's segment extended over its partner (offsets, pages, excerpt, both ids); the pairs joined."""
    joined = []
    for segment in segments:
        lead = segment["chunk_id"]
        if lead not in pairs or lead not in texts:
            continue
        partner = rows[pairs[lead]]
        ids = neighbours.in_index_order([(rows[lead]["chunk_index"], lead), (partner["chunk_index"], pairs[lead])])
        segment["joined_chunk_ids"] = ids
        segment["start_offset"] = min(segment["start_offset"], partner["start_offset"])
        segment["end_offset"] = max(segment["end_offset"], partner["end_offset"])
        segment["excerpt"] = texts[lead]
        if neighbours.MODE == "join_scored":
            segment["score"] = round(scores[lead] + scores.get(pairs[lead], 0.0), 6)
        joined.append(ids)
    return joined


def _name_collections(segments: list[Segment]) -> None:
    """Add `collection` (the knowledge base's name, None for the user's own documents) for the chat's
    source labels ("from the knowledge base <name>"); read outside the reader role, one query."""
    ids = {s["collection_id"] for s in segments if s.get("collection_id")}
    names = dict(Collection.objects.filter(pk__in=ids).values_list("pk", "name")) if ids else {}
    for segment in segments:
        segment["collection"] = names.get(segment.get("collection_id"))


def _fts_configs(configs: list[str], trace: RetrievalTrace, info: TierTrace) -> list[str]:
    """The text-search configurations whose documents the full-text arm searches.

    Words match only within a language: a German question's words against English passages
    match names and noise, and fused in they made German-to-English retrieval worse than the
    vector arm alone (XQuAD hit@1 0.64 against 0.76). So when the question's language is clear,
    documents of other known languages are left to the vector arm; `simple` (language unknown)
    documents are always searched.
    """
    language = trace.get("question_language")
    if not language:
        return configs
    own = text_config_for(language)
    kept = [c for c in configs if c in (own, "simple")]
    if len(kept) < len(configs):
        info["fts_skipped_configs"] = [c for c in configs if c not in kept]
    return kept


def chunk_rows(chunk_ids: list[int], *, distance_with: tuple[int, str] | None = None,
               whole: Iterable[int] = ()) -> dict[int, dict]:
    """The passages' fields, by chunk id; with `distance_with` (model id, query vector literal) also each
    one's cosine distance under that model ("distance", None without a vector of it); the chunks in `whole`
    also with their whole text ("content": neighbour joining needs more than the excerpt)."""
    if not chunk_ids:
        return {}
    distance, params = "NULL::float8", []
    if distance_with is not None:
        distance = ("(SELECT e.embedding <=> %s::vector FROM retrieval_chunkembedding e "
                    "WHERE e.chunk_id = c.id AND e.model_id = %s)")
        params = [distance_with[1], int(distance_with[0])]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.document_id, d.original_filename, d.title, c.chunk_index, c.page_number, c.heading_path,
                   c.start_offset, c.end_offset, left(c.content, %s), {distance}, d.collection_id, d.version,
                   c.metadata->>'page_label', CASE WHEN c.id = ANY(%s) THEN c.content END
            FROM documents_chunk c JOIN documents_document d ON d.id = c.document_id
            WHERE c.id = ANY(%s)
            """,
            [EXCERPT_CHARS, *params, list(whole), chunk_ids],
        )
        return {
            r[0]: {"document_id": r[1], "document_name": r[2], "document_title": r[3], "chunk_index": r[4],
                   "page_number": r[5], "heading_path": list(r[6] or []), "start_offset": r[7], "end_offset": r[8],
                   "excerpt": r[9], "distance": None if r[10] is None else float(r[10]), "collection_id": r[11],
                   "document_version": r[12], "page_label": r[13] or None, **({"content": r[14]} if r[14] is not None else {})}
            for r in cursor.fetchall()
        }


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
