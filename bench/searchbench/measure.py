"""Timing the product's search functions and `retrieve()` on a scope, each measurement one transaction."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from bench.common import contention, machine_cpu_s, process_cpu_s
from bench.searchbench.corpus import RECALL_K, TEXT_CONFIG, Corpus, Scope
from bench.searchbench.database import Loaded


def _backend_cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class Phase:
    """Wall time and how much of the machine other processes used meanwhile."""

    def __enter__(self):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.pid = cursor.fetchone()[0]
        self.t0, self.m0, self.p0, self.b0 = time.monotonic(), machine_cpu_s(), process_cpu_s(), _backend_cpu_s(self.pid)
        return self

    def __exit__(self, *exc):
        seconds = time.monotonic() - self.t0
        own = (process_cpu_s() - self.p0) + (_backend_cpu_s(self.pid) - self.b0)
        self.result = contention(seconds, machine_cpu_s() - self.m0, own)


def latency_stats(ms: list[float]) -> dict:
    """p50, p95, mean and max of millisecond timings, and how many."""
    a = np.array(ms)
    return {"p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2),
            "mean_ms": round(float(a.mean()), 2), "max_ms": round(float(a.max()), 2), "n": len(ms)}


class Searcher:
    def __init__(self, corpus: Corpus, loaded: Loaded):
        from retrieval.selectors import retrieval_settings_get

        self.corpus, self.loaded = corpus, loaded
        from retrieval.search import arms

        self.rs = retrieval_settings_get()
        self.users = {"big": loaded.big, "small": loaded.small}
        arms.forget_lexeme_stats()
        self.stats = arms.lexeme_stats()  # from the load's VACUUM ANALYZE
        self.last_plans: list = []

    def vector(self, scope: Scope, qv):
        from retrieval.search import arms

        return arms.vector_arm(model_id=self.loaded.model_id, dim=self.corpus.dim, query_vector=qv,
                               owner_id=self.users[scope.user_key].pk, document_ids=scope.document_ids,
                               scope_vectors=len(scope.rows), top_k=self.rs.vector_top_k,
                               whole_scope=scope.fts_document_ids is None,  # as retrieve(): the whole library
                               scope=self.product_scope(scope))

    @staticmethod
    def product_scope(scope: Scope):
        """The retrieval.scope.Scope retrieve() would build for this bench scope."""
        from retrieval.search.scope import Scope as ProductScope

        return ProductScope("all", None, None, include_own=scope.include_own, collection_ids=list(scope.collection_ids))

    def fts(self, scope: Scope, text: str):
        """arms.fts_plans + arms.fts_arm as retrieve() calls them (statistics loaded outside the transaction)."""
        from retrieval.search import arms

        plans = arms.fts_plans(query=text, configs=[TEXT_CONFIG], stats=self.stats, budget=self.rs.fts_match_budget)
        self.last_plans = plans
        return arms.fts_arm(plans=plans, owner_id=self.users[scope.user_key].pk,
                            document_ids=scope.fts_document_ids, top_k=self.rs.fts_top_k,
                            ranking=self.rs.fts_ranking, scope=self.product_scope(scope))

    def hybrid(self, scope: Scope, qv, text: str, fts=None, vector=None):
        """What retrieval.search.document_tier does inside its search transaction (no category)."""
        from retrieval.search import arms
        from retrieval.search.fusion import rrf
        from retrieval.search.passages import chunk_rows

        rs = self.rs
        literal = arms.vector_literal(qv)  # formatted once, as retrieve() does
        hits, _how = (vector or self.vector)(scope, literal)
        lists = {"vector": [c for c, _ in hits], "fts": [c for c, _ in (fts or self.fts)(scope, text)]}
        fused = rrf(lists, k=rs.rrf_k, weights={"vector": rs.vector_weight, "fts": rs.fts_weight})
        fused = fused[:rs.final_top_n]
        return chunk_rows([f.key for f in fused], distance_with=(self.loaded.model_id, literal))

    def timed(self, scope: Scope, fn, *args):
        from retrieval.search.scope import reader_transaction

        t0 = time.perf_counter()
        with reader_transaction(self.users[scope.user_key]):
            result = fn(scope, *args)
        return (time.perf_counter() - t0) * 1000, result


def force_method(method: str | None) -> tuple[int, int]:
    """Send every vector search through one path ("exact" / "hnsw"; None: the product's thresholds):
    both thresholds, the general one and the one for collection scopes. Returns what to restore."""
    from django.conf import settings

    saved = (settings.RETRIEVAL_EXACT_SCAN_MAX, settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS)
    limit = {"exact": 10 ** 12, "hnsw": -1}.get(method or "")
    if limit is not None:
        settings.RETRIEVAL_EXACT_SCAN_MAX = settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = limit
    return saved


def restore_method(saved: tuple[int, int]) -> None:
    """Put back the thresholds `force_method` returned."""
    from django.conf import settings

    settings.RETRIEVAL_EXACT_SCAN_MAX, settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = saved


def measure_scope(searcher: Searcher, scope: Scope, method: str | None, warmup: int) -> dict:
    """p50/p95 of vector, fts and hybrid, and recall@10 of the vector arm, for one scope and vector method."""
    saved = force_method(method)
    try:
        for qv, text, _c in scope.queries[:warmup]:
            searcher.timed(scope, searcher.hybrid, qv, text)
        times = {"vector": [], "fts": [], "hybrid": []}
        recalls, methods, fts_hits = [], set(), []
        with Phase() as phase:
            for (qv, text, _c), truth in zip(scope.queries, scope.truth):
                ms, (hits, how) = searcher.timed(scope, searcher.vector, qv)
                times["vector"].append(ms)
                methods.add(how)
                got = [c for c, _ in hits[:RECALL_K]]
                recalls.append(len(set(got) & set(truth)) / len(truth))
                ms, fhits = searcher.timed(scope, searcher.fts, text)
                times["fts"].append(ms)
                fts_hits.append(len(fhits))
                if method is None:
                    scope.fts_hits.append([c for c, _ in fhits])
                ms, _rows = searcher.timed(scope, searcher.hybrid, qv, text)
                times["hybrid"].append(ms)
    finally:
        restore_method(saved)
    out = {k: latency_stats(v) for k, v in times.items()}
    out["recall_at_10"] = round(float(np.mean(recalls)), 4)
    out["recall_at_10_min"] = round(float(np.min(recalls)), 2)
    out["vector_method"] = sorted(methods)
    out["fts_hits_mean"] = round(float(np.mean(fts_hits)), 1)
    out["hybrid_over_vector_p95"] = round(out["hybrid"]["p95_ms"] / out["vector"]["p95_ms"], 2)
    out["contention"] = phase.result
    return out


def _scope_of(user, scope: Scope):
    """The search scope as the chat works it out for a question (conversation_scope), timed with retrieve()."""
    from chat.selectors import conversation_scope

    return conversation_scope(user, scope.conversation_id) if scope.conversation_id else None


def measure_retrieve(searcher: Searcher, scope: Scope) -> dict:
    """The whole retrieve() with an embedding client returning the precomputed vector; embedding excluded."""
    import retrieval.search.request as search_mod
    from retrieval.search import retrieve

    current = {}

    class _Stub:
        def embed_queries(self, texts):
            return [current["v"]]

    real = search_mod.query_embedder_for
    search_mod.query_embedder_for = lambda server, **kw: _Stub()
    times, methods = [], set()
    try:
        user = searcher.users[scope.user_key]
        for qv, text, _c in scope.queries[:5]:
            current["v"] = qv
            retrieve(user, text, _scope_of(user, scope))
        with Phase() as phase:
            for qv, text, _c in scope.queries:
                current["v"] = qv
                t0 = time.perf_counter()
                result = retrieve(user, text, _scope_of(user, scope))
                wall = (time.perf_counter() - t0) * 1000
                times.append(wall - result.trace["timings_ms"].get("query_embedding", 0.0))
                for tier in result.trace["tiers"]:
                    methods.update(tier.get("vector_method", {}).values())
    finally:
        search_mod.query_embedder_for = real
    return {**latency_stats(times), "vector_method": sorted(methods), "contention": phase.result}
