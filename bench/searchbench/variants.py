"""Alternatives measured in the bench's process only: ef_search values, full-text budgets and rankings, old SQL."""
from __future__ import annotations

import json
import time

import numpy as np

from bench.common import log
from bench.searchbench.corpus import RECALL_K, TEXT_CONFIG, Corpus, Scope
from bench.searchbench.measure import Searcher, latency_stats

FTS_BUDGETS = (0, 1000, 2000, 5000, 10000)
READER = "ragsite_reader"
# The full-text SQL of the previous release, run directly on the table as the reader role: under row-level
# security `@@` (not LEAKPROOF) may not be an index condition, so every chunk of the scope is tested and ranked.
LEGACY_FTS_SQL = """
SELECT c.id, ts_rank_cd(c.search_vector, q.query, 32) AS rank
FROM documents_chunk c, websearch_to_tsquery(%s::regconfig, %s) AS q(query)
WHERE c.owner_id = %s AND c.text_config = %s {doc_filter} AND c.search_vector @@ q.query
ORDER BY rank DESC, c.id LIMIT %s
"""


def _fts_measure(searcher: Searcher, scope: Scope, queries: int, fts=None, baseline: dict | None = None) -> dict:
    """p50/p95 of the full-text arm alone and of hybrid with it; overlap of its hits with `baseline`'s
    (reported as `fts_top40_overlap_with_all_words`, what the budget variants compare with)."""
    from retrieval.search.scope import reader_transaction

    user = searcher.users[scope.user_key]
    fts = fts or searcher.fts
    items = scope.queries[:queries]
    for qv, text, _c in items[:3]:
        with reader_transaction(user):
            searcher.hybrid(scope, qv, text, fts=fts)
    times = {"fts": [], "hybrid": []}
    hits: dict[int, list[int]] = {}
    matched, ranked_only = [], []
    for i, (qv, text, _c) in enumerate(items):
        t0 = time.perf_counter()
        with reader_transaction(user):
            got = fts(scope, text)
        times["fts"].append((time.perf_counter() - t0) * 1000)
        hits[i] = [c for c, _ in got]
        if fts == searcher.fts:
            matched.append(sum(len(p.matched) for p in searcher.last_plans))
            ranked_only.append(sum(len(p.pruned) for p in searcher.last_plans))
        t0 = time.perf_counter()
        with reader_transaction(user):
            searcher.hybrid(scope, qv, text, fts=fts)
        times["hybrid"].append((time.perf_counter() - t0) * 1000)
    out = {k: latency_stats(v) for k, v in times.items()}
    out["fts_hits_mean"] = round(float(np.mean([len(h) for h in hits.values()])), 1)
    if matched:
        out["words_matched_mean"] = round(float(np.mean(matched)), 2)
        out["words_ranked_only_mean"] = round(float(np.mean(ranked_only)), 2)
    if baseline is not None:
        overlaps = [len(set(hits[i]) & set(baseline[i])) / max(1, len(baseline[i])) for i in hits if baseline.get(i)]
        out["fts_top40_overlap_with_all_words"] = round(float(np.mean(overlaps)), 3) if overlaps else None
    out["_hits"] = hits
    return out


def _log_fts_variant(label: str, stage: dict) -> None:
    log(f"variants: {label} (p95 ms of fts, hybrid) "
        + json.dumps({k: (v["fts"]["p95_ms"], v["hybrid"]["p95_ms"]) for k, v in stage.items()}))


def variants(corpus: Corpus, searcher: Searcher, scopes: list[Scope], queries: int, legacy_queries: int,
             budgets: tuple[int, ...] = FTS_BUDGETS) -> dict:
    """Measured alternatives to the product's settings and SQL. Changes this bench's process only."""
    from django.db import connection

    from retrieval.search import arms
    from retrieval.search.scope import reader_transaction

    out: dict = {}
    unfiltered = scopes[0]
    qs = list(zip(unfiltered.queries, unfiltered.truth))[:queries]
    user = searcher.users[unfiltered.user_key]

    def run(fn, scope=unfiltered, items=None):
        items = items if items is not None else qs
        for (qv, text, _c), _t in items[:3]:
            with reader_transaction(searcher.users[scope.user_key]):
                fn(scope, qv, text)
        times, recalls = [], []
        for (qv, text, _c), truth in items:
            t0 = time.perf_counter()
            with reader_transaction(searcher.users[scope.user_key]):
                got = fn(scope, qv, text)
            times.append((time.perf_counter() - t0) * 1000)
            if got is not None:
                recalls.append(len(set(got[:RECALL_K]) & set(truth)) / RECALL_K)
        res = latency_stats(times)
        if recalls:
            res["recall_at_10"] = round(float(np.mean(recalls)), 4)
        return res

    def hnsw_sql(ef: int, *, document_filter: bool):
        def fn(scope, qv, text):
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                cursor.execute(f"SET LOCAL hnsw.ef_search = {ef}")
                cursor.execute(f"SET LOCAL hnsw.max_scan_tuples = {arms.HNSW_MAX_SCAN_TUPLES}")
                q = arms.vector_literal(qv)
                d = corpus.dim
                cursor.execute(
                    f"WITH candidates AS MATERIALIZED (SELECT e.chunk_id, e.embedding::vector({d}) <=> %s::vector({d}) "
                    f"AS distance FROM retrieval_chunkembedding e WHERE e.model_id = {searcher.loaded.model_id} "
                    f"AND e.owner_id = %s {'AND e.document_id = ANY(%s) ' if document_filter else ''}"
                    f"ORDER BY e.embedding::vector({d}) <=> %s::vector({d}) LIMIT %s) "
                    f"SELECT chunk_id, distance FROM candidates ORDER BY distance, chunk_id",
                    [q, user.pk] + ([scope.document_ids] if document_filter else []) + [q, searcher.rs.vector_top_k])
                return [r[0] for r in cursor.fetchall()]
        return fn

    # 1. ef_search of the unfiltered HNSW search (the product uses max(100, top_k)).
    out["unfiltered_vector_ef_search"] = {str(ef): run(hnsw_sql(ef, document_filter=True)) for ef in (40, 64, 100, 200)}
    log("variants: ef_search (p95 ms, recall) " + json.dumps(
        {k: (v["p95_ms"], v.get("recall_at_10")) for k, v in out["unfiltered_vector_ef_search"].items()}))
    # 2. All of the user's document ids in `document_id = ANY(...)`, vs the owner filter alone (same ef_search).
    ef = max(arms.HNSW_EF_SEARCH, searcher.rs.vector_top_k)
    out["unfiltered_vector_with_document_array"] = run(hnsw_sql(ef, document_filter=True))
    out["unfiltered_vector_owner_filter_only"] = run(hnsw_sql(ef, document_filter=False))
    log(f"variants: vector p95 with the document array {out['unfiltered_vector_with_document_array']['p95_ms']} ms, "
        f"owner filter only {out['unfiltered_vector_owner_filter_only']['p95_ms']} ms")

    # 3. The full-text match budget (RetrievalSettings.fts_match_budget); 0 = every word matched.
    saved = searcher.rs.fts_match_budget
    all_words: dict[str, dict] = {}
    default_hits: dict[str, dict] = {}
    try:
        for budget in sorted(budgets):
            searcher.rs.fts_match_budget = budget
            stage = {}
            for scope in scopes:
                m = _fts_measure(searcher, scope, queries, baseline=all_words.get(scope.name))
                hits = m.pop("_hits")
                if budget == 0:
                    all_words[scope.name] = hits
                    m.pop("fts_top40_overlap_with_all_words", None)
                if budget == saved:
                    default_hits[scope.name] = hits
                stage[scope.name] = m
            out[f"fts_match_budget_{budget}"] = stage
            _log_fts_variant(f"fts_match_budget {budget}", stage)
    finally:
        searcher.rs.fts_match_budget = saved

    # 4. The other ranking (RetrievalSettings.fts_ranking), at the default budget: its time, and how
    # much of its top 40 the default ranking also returns.
    for scope in scopes:
        if scope.name not in default_hits:  # the default budget was not among the measured ones
            default_hits[scope.name] = _fts_measure(searcher, scope, queries)["_hits"]
    other = "ts_rank_cd" if searcher.rs.fts_ranking == "ts_rank" else "ts_rank"
    saved_ranking = searcher.rs.fts_ranking
    searcher.rs.fts_ranking = other
    try:
        stage = {}
        for scope in scopes:
            m = _fts_measure(searcher, scope, queries, baseline=default_hits[scope.name])
            m.pop("_hits")
            m["top40_overlap_with_default_ranking"] = m.pop("fts_top40_overlap_with_all_words")
            stage[scope.name] = m
        out[f"fts_ranking_{other}"] = stage
        _log_fts_variant(f"fts_ranking {other}", stage)
    finally:
        searcher.rs.fts_ranking = saved_ranking

    # 5. The previous release's full-text SQL (no gateway, no budget), on fewer queries: it is slow.
    def legacy(scope: Scope, text: str):
        doc_filter = "AND c.document_id = ANY(%s)" if scope.fts_document_ids is not None else ""
        owner = searcher.users[scope.user_key].pk
        words = " OR ".join(arms.fts_query_text(text, TEXT_CONFIG).split())
        with connection.cursor() as cursor:
            cursor.execute(LEGACY_FTS_SQL.format(doc_filter=doc_filter),
                           [TEXT_CONFIG, words, owner, TEXT_CONFIG]
                           + ([scope.fts_document_ids] if scope.fts_document_ids is not None else [])
                           + [searcher.rs.fts_top_k])
            return [(r[0], float(r[1])) for r in cursor.fetchall()]

    stage = {}
    for scope in scopes:
        m = _fts_measure(searcher, scope, legacy_queries, fts=legacy)
        m.pop("_hits")
        stage[scope.name] = m
    out["fts_previous_release_sql"] = stage
    _log_fts_variant("previous release's full-text SQL", stage)
    out["note"] = (
        "unfiltered_vector_*: the HNSW arm with other ef_search values / without the array of all the user's document "
        "ids. fts_match_budget_N: the product's full-text arm and hybrid with RetrievalSettings.fts_match_budget = N "
        "(0 = every query word matched, as before; the default is 1000), with the mean number of query words matched "
        "and only ranked, and the share of the all-words top 40 that is still returned. fts_ranking_X: the full-text "
        "arm ranking with X instead of the default, at the default budget, and the share of its top 40 the default "
        "ranking also returns. fts_previous_release_sql: the "
        "full-text SQL before the SECURITY DEFINER gateway (on fewer queries).")
    return out
