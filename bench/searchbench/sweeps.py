"""Exact scan vs HNSW for conversation scopes of several sizes and collection scopes of several counts."""
from __future__ import annotations

import numpy as np

from bench.common import log
from bench.searchbench.corpus import RECALL_K, Corpus, Scope
from bench.searchbench.database import Loaded
from bench.searchbench.measure import Phase, Searcher, force_method, latency_stats, restore_method
from bench.searchbench.scopes import add_queries


def sweep(corpus: Corpus, loaded: Loaded, searcher: Searcher, sizes: list[int], queries: int) -> list[dict]:
    """Exact scan vs HNSW for conversation scopes of bench-big of several sizes: where is the crossover?"""
    rng = np.random.default_rng(7)
    big_docs = [d for d in np.flatnonzero(~corpus.doc_small)]
    out = []
    for size in sizes:
        order = rng.permutation(big_docs)
        docs, held = [], 0
        for d in order:
            if held >= size:
                break
            docs.append(int(d))
            held += int(corpus.doc_sizes[d])
        rows = np.sort(np.concatenate([np.arange(corpus.doc_start[d], corpus.doc_start[d] + corpus.doc_sizes[d])
                                       for d in docs]))
        ids = sorted(int(loaded.doc_ids[d]) for d in docs)
        # With --collections bench-big's documents are all shared: its rows are selected by collection.
        scope = Scope(f"sweep_{held}", "big", ids, ids, rows, collection_ids=list(loaded.collection_ids))
        add_queries(corpus, scope, queries)
        entry = {"scope_vectors": int(held), "documents": len(docs)}
        from django.conf import settings

        saved = settings.RETRIEVAL_EXACT_SCAN_MAX
        try:
            for method, limit in (("exact", 10 ** 12), ("hnsw", -1)):
                settings.RETRIEVAL_EXACT_SCAN_MAX = limit
                for qv, _t, _c in scope.queries[:5]:
                    searcher.timed(scope, searcher.vector, qv)
                times, recalls = [], []
                for (qv, _t, _c), truth in zip(scope.queries, scope.truth):
                    ms, (hits, _how) = searcher.timed(scope, searcher.vector, qv)
                    times.append(ms)
                    recalls.append(len({c for c, _ in hits[:RECALL_K]} & set(truth)) / RECALL_K)
                entry[method] = {**latency_stats(times), "recall_at_10": round(float(np.mean(recalls)), 4)}
        finally:
            settings.RETRIEVAL_EXACT_SCAN_MAX = saved
        entry["faster"] = "exact" if entry["exact"]["p95_ms"] <= entry["hnsw"]["p95_ms"] else "hnsw"
        log(f"sweep {held:,} vectors: exact p95 {entry['exact']['p95_ms']} ms, hnsw p95 {entry['hnsw']['p95_ms']} ms "
            f"(recall {entry['hnsw']['recall_at_10']})")
        out.append(entry)
    return out


def collection_sweep(corpus: Corpus, loaded: Loaded, searcher: Searcher, counts: list[int], queries: int) -> list[dict]:
    """Exact scan vs HNSW for collection scopes (bench-big, who reads every collection, narrowed to the
    first N collections, no own documents, no document ids: the product's collection condition) of
    several sizes. Besides wall times, the CPU the bench process and its PostgreSQL backend spent per
    search: on a shared machine that is steadier than the wall clock."""
    out = []
    for count in counts:
        chosen = list(loaded.collection_ids[:count])
        docs = np.flatnonzero(np.isin(loaded.doc_collections, chosen))
        if not len(docs):
            continue
        rows = np.sort(np.concatenate([np.arange(corpus.doc_start[d], corpus.doc_start[d] + corpus.doc_sizes[d])
                                       for d in docs]))
        scope = Scope(f"collections_sweep_{count}", "big", sorted(int(x) for x in loaded.doc_ids[docs]), None, rows,
                      collection_ids=chosen, include_own=False)
        add_queries(corpus, scope, queries)
        entry = {"collections": count, "scope_vectors": int(len(rows))}
        for method in ("exact", "hnsw"):
            saved = force_method(method)
            try:
                for qv, _t, _c in scope.queries[:5]:
                    searcher.timed(scope, searcher.vector, qv)
                times, recalls, how = [], [], set()
                with Phase() as phase:
                    for (qv, _t, _c), truth in zip(scope.queries, scope.truth):
                        ms, (hits, used) = searcher.timed(scope, searcher.vector, qv)
                        times.append(ms)
                        how.add(used)
                        recalls.append(len({c for c, _ in hits[:RECALL_K]} & set(truth)) / RECALL_K)
            finally:
                restore_method(saved)
            entry[method] = {**latency_stats(times), "recall_at_10": round(float(np.mean(recalls)), 4),
                             "vector_method": sorted(how),
                             "cpu_ms_per_search": round(1000 * phase.result["own_cpu_s"] / len(times), 2),
                             "contention": phase.result}
        entry["cheaper_by_cpu"] = ("exact" if entry["exact"]["cpu_ms_per_search"] <= entry["hnsw"]["cpu_ms_per_search"]
                                   else "hnsw")
        entry["faster_by_p95"] = "exact" if entry["exact"]["p95_ms"] <= entry["hnsw"]["p95_ms"] else "hnsw"
        log(f"collection sweep {count} collections, {len(rows):,} vectors: exact p95 {entry['exact']['p95_ms']} ms "
            f"({entry['exact']['cpu_ms_per_search']} ms CPU), hnsw p95 {entry['hnsw']['p95_ms']} ms "
            f"({entry['hnsw']['cpu_ms_per_search']} ms CPU, recall {entry['hnsw']['recall_at_10']})")
        out.append(entry)
    return out
