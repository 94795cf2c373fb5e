"""Tiers 2 and 3: documents by hybrid search.

Stages, in order: the candidates (the scope's documents by embedding model, `model_groups`), the vector
arm per model (HNSW cosine), the full-text arm per language (unless the fusion rule skips it), their
weights (retrieval/search/fusion_rule.py) and their fusion (by scores, or by reciprocal rank: the `fusion`
setting; retrieval/search/fusion.py), the distance threshold,
the passages with their neighbours joined (retrieval/search/passages.py), then the optional rerank stage
(retrieval/search/rerank.py). Thresholds apply to the vector arm's cosine distance, never to fused scores.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

from documents.language import analysis_of, text_config_for
from retrieval.contracts import RetrievalTrace, Segment, TierTrace
from retrieval.models import AiServer
from retrieval.search import arms as search_arms
from retrieval.search.fusion import rrf, score_fusion
from retrieval.search.fusion_rule import FtsEvidence, skip_fts
from retrieval.search.fusion_rule import fts_weight as fusion_fts_weight
from retrieval.search.fusion_rule import vector_weight as fusion_vector_weight
from retrieval.search.named import NAMED_FACTOR, named_passages
from retrieval.search.passages import document_segments, join_neighbours, name_collections, passages_read
from retrieval.search.request import Search
from retrieval.search.rerank import pool_size, rerank_segments
from retrieval.search.scope import ModelGroup, model_groups, reader_transaction
from retrieval.telemetry import SEARCH_LATENCY


class DocumentTier(NamedTuple):
    """Which documents one tier searches (a topic narrows them), within what distance, and how many it keeps."""

    tier: int  # 2 the topic's (or every) document, 3 the general subcategory's
    limit: int
    category: str = ""
    subcategory: str = ""
    threshold: float | None = None


class _VectorSpace(NamedTuple):
    """A model group the vector arm can search: its vector space, and a server that embeds the query for it."""

    group: ModelGroup
    server: AiServer
    model_id: int
    dim: int


@dataclass
class _Run:
    """One document tier under way: what it searches and what its arms found."""

    search: Search
    ask: DocumentTier
    info: TierTrace
    groups: list[ModelGroup]
    configs: list[str]
    whole_library: bool  # every document of the scope: no document filter (see vector_arm)
    spaces: list[_VectorSpace] = field(default_factory=list)
    literals: dict[int, str] = field(default_factory=dict)  # each model's query vector, as pgvector text
    lists: dict[str, list[int]] = field(default_factory=dict)  # each arm's chunk ids, best first
    arm_distances: dict[str, list[float]] = field(default_factory=dict)  # each vector list's distances
    fts_scores: list[float] = field(default_factory=list)  # the full-text list's rank values (ts_rank)
    distances: dict[int, float] = field(default_factory=dict)
    method: dict[str, str] = field(default_factory=dict)
    named: set[int] = field(default_factory=set)  # passages of the document the question names (`_named`)

    @property
    def trace(self) -> RetrievalTrace:
        return self.search.trace


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


def document_tier(search: Search, ask: DocumentTier) -> list[Segment]:
    """The tier's passages: candidates → arms → fusion → threshold → passages → rerank."""
    run = _candidates(search, ask)
    if run is None:
        return []
    arms = search.request.arms
    if "vector" in arms:
        run.spaces = _servers_for(run.groups, search.trace, search.known)
    # pgvector text of each model's query vector, formatted once for every statement that needs it
    run.literals = {space.model_id: search_arms.vector_literal(search.vectors.for_server(space.server))
                    for space in run.spaces}
    stats = search_arms.lexeme_stats() if "fts" in arms else None  # outside the reader role: see there
    started = time.perf_counter()
    with reader_transaction(search.user):
        _vector_arms(run)
        fts_weight = _fts_arm(run, stats)
        _named(run)
        fused, distance_with = _fuse(run, fts_weight)
        fused = _within_threshold(run, fused)
        passages = passages_read(fused, pool=pool_size(search.reranking, ask.limit), distances=run.distances,
                                 distance_with=distance_with, trace=search.trace, tier=ask.tier)
    SEARCH_LATENCY.observe(time.perf_counter() - started)
    segments = document_segments(passages, run.distances, ask.tier)
    joined = join_neighbours(segments, passages)
    if joined:
        run.info["neighbours_joined"] = joined
    name_collections(segments)
    segments = rerank_segments(search.query, segments, search.reranking, search.trace, tier=ask.tier,
                               limit=ask.limit)
    run.info["kept"] = len(segments)
    return segments


def _candidates(search: Search, ask: DocumentTier) -> _Run | None:
    """The scope's documents of the tier by embedding model (None when there are none), traced."""
    info: TierTrace = {"tier": ask.tier, "kind": "documents", "subcategory": ask.subcategory, "kept": 0}
    search.trace["tiers"].append(info)
    scope = search.scope
    # Every document of the scope (own + collections): when they are all pinned to one model, no
    # document filter is needed (see vector_arm), so no ids either.
    whole_library = scope.attached_ids is None and not (ask.category or ask.subcategory) and not scope.retired_ids
    with reader_transaction(search.user):
        groups, configs, documents = model_groups(search.user, scope, category=ask.category,
                                                  subcategory=ask.subcategory, with_ids=not whole_library)
        if whole_library and len(groups) > 1:  # several models: each one's search needs its documents
            groups, configs, documents = model_groups(search.user, scope)
    info["candidate_documents"] = documents
    info["candidate_chunks"] = sum(g.chunks for g in groups)
    if not groups:
        return None
    return _Run(search, ask, info, groups, configs, whole_library)


def _vector_arms(run: _Run) -> None:
    """The vector arm of each model space (call inside the reader transaction)."""
    search, tier = run.search, run.ask.tier
    timings = search.trace["timings_ms"]
    for space in run.spaces:
        group = space.group
        t0 = time.perf_counter()
        hits, how = search_arms.vector_arm(
            model_id=space.model_id, dim=space.dim, query_vector=run.literals[space.model_id],
            owner_id=search.user.pk, document_ids=group.document_ids, scope_vectors=group.chunks,
            top_k=search.rs.vector_top_k, whole_scope=run.whole_library and len(run.groups) == 1, scope=search.scope)
        name = "vector" if len(run.spaces) == 1 else f"vector:{group.model_name}"
        run.lists[name] = [chunk_id for chunk_id, _ in hits]
        run.arm_distances[name] = [distance for _, distance in hits]
        run.distances.update(dict(hits))
        run.method[name] = how
        timings[f"vector_arm_t{tier}"] = round(timings.get(f"vector_arm_t{tier}", 0) + (time.perf_counter() - t0) * 1000, 2)


def _fts_arm(run: _Run, stats) -> float:
    """The full-text arm, unless the fusion rule skips it for the question's language; returns its weight
    (lowered when its best match is weak and the vector arm can take over). Call inside the reader transaction."""
    search, info, tier = run.search, run.info, run.ask.tier
    rs, trace = search.rs, search.trace
    fts_weight = rs.fts_weight
    language = trace.get("question_language", "")
    arms = search.request.arms
    skipped = skip_fts(language=language, analysis=analysis_of(language, text_config_for(language))) \
        if "fts" in arms and run.spaces else ""
    if skipped:
        info["fts_skipped"] = skipped
        trace["fallbacks"].append(f"tier {tier}: {skipped}")
        return fts_weight
    if "fts" not in arms:
        return fts_weight
    t0 = time.perf_counter()
    doc_ids = None if run.whole_library else [d for g in run.groups for d in g.document_ids]
    # The question's own configuration too: a mixed document's chunks in that language carry it
    # while their document names another (documents/language/detection.py, detect_chunk_language).
    own = [text_config_for(language)] if language else []
    plans = search_arms.fts_plans(query=search.query, configs=_fts_configs(sorted(set(run.configs) | set(own)), trace, info),
                                  stats=stats, budget=rs.fts_match_budget, language=language)
    fts_hits = search_arms.fts_arm(plans=plans, owner_id=search.user.pk, document_ids=doc_ids, top_k=rs.fts_top_k,
                                   ranking=rs.fts_ranking, scope=search.scope)
    run.lists["fts"] = [chunk_id for chunk_id, _ in fts_hits]
    run.fts_scores = [float(value) for _, value in fts_hits]
    info["fts_terms"] = {p.config: {"matched": p.matched, "ranked_only": p.pruned} for p in plans}
    coverage = search_arms.fts_best_coverage(plans=plans, hits=fts_hits, stats=stats)
    info["fts_coverage"] = None if coverage is None else round(coverage, 4)
    info["fts_best_rank"] = round(fts_hits[0][1], 6) if fts_hits else None
    if run.spaces:  # with the vector arm to fall back on, a weak full-text match loses its weight
        fts_weight, why = fusion_fts_weight(
            weight=rs.fts_weight, evidence=FtsEvidence(language, analysis_of(language, text_config_for(language)),
                                                       coverage))
        if why:
            info["fts_weight_lowered"] = why
            trace["fallbacks"].append(f"tier {tier}: {why}")
    info["fts_weight"] = fts_weight
    trace["timings_ms"][f"fts_arm_t{tier}"] = round((time.perf_counter() - t0) * 1000, 2)
    return fts_weight


def _named(run: _Run) -> None:
    """The passages of the document the question names (retrieval/search/named.py), whose fused scores
    `_fused` multiplies by NAMED_FACTOR; hybrid search only, so each arm alone stays itself."""
    if not {"vector", "fts"} <= set(run.search.request.arms):
        return
    passages, words = named_passages(run.search.query, run.trace.get("question_language", ""), run.lists)
    if passages:
        run.named = passages
        run.info["named_by"] = words


def _fuse(run: _Run, fts_weight: float) -> tuple[list, tuple[int, str] | None]:
    """The arms' lists fused (`_fused`), and the (model id, query vector) chunk_rows computes the
    passages' distances with (None: they were read here). Call inside the reader transaction."""
    search, info, tier = run.search, run.info, run.ask.tier
    rs = search.rs
    t0 = time.perf_counter()
    weights = {name: (fts_weight if name == "fts" else rs.vector_weight) for name in run.lists}
    if "fts" in run.lists and run.lists["fts"]:
        for name in run.arm_distances:  # a vector arm that cannot tell its best passages apart yields to full text
            weights[name], why = fusion_vector_weight(weight=rs.vector_weight, distances=run.arm_distances[name],
                                                      fts_weight=fts_weight)
            if why:
                info["vector_weight_lowered"] = why
                search.trace["fallbacks"].append(f"tier {tier}: {why}")
        info["vector_weight"] = min(weights[name] for name in run.arm_distances) if run.arm_distances else None
    fused = _fused(run, weights)
    # A threshold needs every candidate's vector distance, full-text-only hits included. Without one
    # only the passages returned need theirs: with one model the passage query computes them.
    distance_with = None
    if run.ask.threshold is None and len(run.spaces) == 1:
        distance_with = (run.spaces[0].model_id, run.literals[run.spaces[0].model_id])
    else:
        missing = [f.key for f in fused if f.key not in run.distances]
        for space in run.spaces:
            run.distances.update(search_arms.distances_for(model_id=space.model_id, dim=space.dim,
                                                           query_vector=run.literals[space.model_id],
                                                           chunk_ids=missing))
    search.trace["timings_ms"][f"fusion_t{tier}"] = round((time.perf_counter() - t0) * 1000, 2)
    info["vector_hits"] = {n: len(v) for n, v in run.lists.items() if n != "fts"}
    info["fts_hits"] = len(run.lists.get("fts", []))
    info["vector_method"], info["fused"] = run.method, len(fused)
    return fused, distance_with


def _fused(run: _Run, weights: dict[str, float]) -> list:
    """The arms' lists fused as the `fusion` setting says: by scores (each vector list's cosine similarity
    scaled over its range, the full-text rank values as shares of the best: fusion.score_fusion) or by
    reciprocal rank; the trace says which, and where the first passage came from (its rank in each list)."""
    rs, info = run.search.rs, run.info
    if rs.fusion == "rrf":
        fused = rrf(run.lists, k=rs.rrf_k, weights=weights)
    else:
        scored = {name: list(zip(keys, [1.0 - d for d in run.arm_distances[name]] if name != "fts"
                                 else run.fts_scores)) for name, keys in run.lists.items()}
        fused = score_fusion(scored, scales={name: "best" if name == "fts" else "range" for name in scored},
                             weights=weights)
    if run.named:  # among passages that answer about as well, the named document's comes first
        for entry in fused:
            if entry.key in run.named:
                entry.score *= NAMED_FACTOR
        fused.sort(key=lambda f: (-f.score, min(f.ranks.values())))
    info["fusion"] = "rrf" if rs.fusion == "rrf" else "scores"
    if fused:
        info["fused_first"] = dict(fused[0].ranks)
    return fused


def _within_threshold(run: _Run, fused: list) -> list:
    """The fused candidates within the tier's distance threshold (all of them without one)."""
    threshold, tier = run.ask.threshold, run.ask.tier
    if threshold is None or not run.spaces:
        return fused
    before = len(fused)
    fused = [f for f in fused if run.distances.get(f.key, 2.0) < threshold]
    if before and not fused:
        run.trace["fallbacks"].append(f"tier {tier}: {before} passages found, none within the distance "
                                      f"threshold {threshold}")
    return fused


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
