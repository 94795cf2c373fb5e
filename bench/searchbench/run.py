"""The search benchmark from start to end: generate, load, measure every scope, sweep, variants, goals."""
from __future__ import annotations

import argparse
import time

from bench.common import BenchSite, log, machine_info, peak_rss_mb
from bench.searchbench.corpus import Corpus
from bench.searchbench.database import load, pg_settings, prewarm, tune_server
from bench.searchbench.explain import explain
from bench.searchbench.measure import Searcher, latency_stats, measure_retrieve, measure_scope
from bench.searchbench.report import goals
from bench.searchbench.scopes import make_scopes
from bench.searchbench.sweeps import collection_sweep, sweep
from bench.searchbench.variants import variants


def run(args: argparse.Namespace) -> dict:
    """The whole benchmark for the parsed command line `args`: the result, ready for JSON."""
    started = time.monotonic()
    log(f"generating {args.chunks:,} chunks of {args.dim} dimensions")
    t0 = time.monotonic()
    corpus = Corpus(chunks=args.chunks, dim=args.dim, clusters=args.clusters, words_per_chunk=args.words_per_chunk,
                    seed=args.seed, noise=args.noise, filtered_fraction=args.filtered_fraction)
    gen_s = time.monotonic() - t0
    log(f"vectors generated ({gen_s:.1f} s): {len(corpus.doc_sizes):,} documents, {corpus.k} clusters")
    result: dict = {
        "benchmark": "search",
        "config": {"chunks": args.chunks, "dim": args.dim, "queries": args.queries,
                   "filtered_fraction": args.filtered_fraction, "clusters": corpus.k,
                   "words_per_chunk": args.words_per_chunk, "noise": args.noise, "seed": args.seed},
        "machine": machine_info(),
    }
    with BenchSite(keep=args.keep, prefix="ragsite-bench-search-") as site:
        from django.conf import settings

        result["postgres"] = {"changed_for_bench": tune_server(site, args.shared_buffers)}
        result["postgres"]["settings"] = pg_settings()
        holdout_docs = max(1, round(args.holdout * len(corpus.doc_sizes))) if args.holdout > 0 else 0
        import retrieval.vector_sql as vector_sql

        if args.maintenance_work_mem:
            vector_sql.MAINTENANCE_WORK_MEM = args.maintenance_work_mem
        result["postgres"]["hnsw_build_maintenance_work_mem"] = vector_sql.MAINTENANCE_WORK_MEM
        loaded = load(corpus, holdout_docs, args.collections, min(args.readable_collections, args.collections))
        result["ingest"] = loaded.ingest
        result["data"] = {"documents": len(corpus.doc_sizes), "generate_s": round(gen_s, 1), "stats": corpus.stats()}
        log("computing exact neighbours for the queries")
        t0 = time.monotonic()
        scopes = make_scopes(corpus, loaded, args.queries)
        result["data"]["ground_truth_s"] = round(time.monotonic() - t0, 1)
        result["data"]["scopes"] = {s.name: {"vectors": int(len(s.rows)), "documents": len(s.document_ids)}
                                    for s in scopes}
        result["prewarm"] = prewarm(loaded.model_id, args.dim)
        log(f"prewarmed in {result['prewarm']['seconds']} s")
        searcher = Searcher(corpus, loaded)
        result["retrieval_settings"] = {"exact_scan_max": settings.RETRIEVAL_EXACT_SCAN_MAX,
                                        "exact_scan_max_collections": settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS,
                                        "vector_top_k": searcher.rs.vector_top_k, "fts_top_k": searcher.rs.fts_top_k,
                                        "final_top_n": searcher.rs.final_top_n, "rrf_k": searcher.rs.rrf_k}
        # An empty reader transaction: the fixed cost inside every figure below.
        from retrieval.search.scope import reader_transaction

        empty = []
        for _ in range(200):
            t0 = time.perf_counter()
            with reader_transaction(loaded.big):
                pass
            empty.append((time.perf_counter() - t0) * 1000)
        result["reader_transaction_overhead"] = latency_stats(empty)

        result["scopes"] = {}
        for scope in scopes:
            entry = {"vectors": int(len(scope.rows))}
            methods = [("default", None)] + ([("exact", "exact"), ("hnsw", "hnsw")] if scope.name != "unfiltered" else [])
            for label, method in methods:
                log(f"measuring {scope.name} ({label}): {len(scope.queries)} queries")
                entry[label] = measure_scope(searcher, scope, method, args.warmup)
                m = entry[label]
                log(f"  vector p95 {m['vector']['p95_ms']} ms ({','.join(m['vector_method'])}, recall@10 "
                    f"{m['recall_at_10']}), fts p95 {m['fts']['p95_ms']} ms, hybrid p95 {m['hybrid']['p95_ms']} ms")
            if scope.name == "owner_1pct" and loaded.readable_ids:
                # retrieve() for bench-small searches its collections too: that is the collections scope.
                entry["retrieve"] = {"note": "measured as the collections scope's retrieve()"}
                result["scopes"][scope.name] = entry
                continue
            log(f"measuring {scope.name}: retrieve()")
            entry["retrieve"] = measure_retrieve(searcher, scope)
            log(f"  retrieve() p95 {entry['retrieve']['p95_ms']} ms")
            result["scopes"][scope.name] = entry

        log("EXPLAIN (ANALYZE, BUFFERS) of one query of each kind")
        plans = {}
        for scope in scopes[:3]:
            for label, method in [("default", None)] + ([("hnsw", "hnsw")] if scope.name != "unfiltered" else []):
                for kind in ("vector", "fts") if label == "default" else ("vector",):
                    plans[f"{scope.name}/{label}/{kind}"] = explain(searcher, scope, method, kind)
        plans["unfiltered/default/hybrid"] = explain(searcher, scopes[0], None, "hybrid")
        result["explain"] = plans

        if not args.no_sweep:
            sizes = [s for s in (2_000, 5_000, 10_000, 20_000, 50_000, 100_000) if s <= 0.5 * args.chunks]
            log(f"exact vs HNSW sweep over scope sizes {sizes}")
            result["exact_vs_hnsw_sweep"] = sweep(corpus, loaded, searcher, sizes, min(args.queries, 50))
            if loaded.collection_ids:
                counts = [n for n in (1, 2, 3, 5, 8, 12) if n <= len(loaded.collection_ids)]
                log(f"exact vs HNSW for collection scopes of {counts} collections")
                result["exact_vs_hnsw_collection_sweep"] = collection_sweep(corpus, loaded, searcher, counts,
                                                                            min(args.queries, 100))
        if not args.no_variants:
            log("measuring SQL variants")
            result["variants"] = variants(corpus, searcher, scopes[:3], min(args.queries, args.variant_queries),
                                          min(args.queries, args.legacy_queries),
                                          tuple(int(b) for b in args.fts_budgets.split(",") if b.strip()))
        result["goals"] = goals(result)
        if "variants" in result:
            names = ("unfiltered", "owner_1pct", "conversation_1pct")
            result["goals_with_variants"] = {
                name: {"hybrid_p95_ms_worst_scope": max(stage[s]["hybrid"]["p95_ms"] for s in names),
                       "hybrid_p95_ms": {s: stage[s]["hybrid"]["p95_ms"] for s in names}}
                for name, stage in result["variants"].items()
                if isinstance(stage, dict) and all(s in stage for s in names)}
        result["peak_rss_mb"] = peak_rss_mb()
        result["total_s"] = round(time.monotonic() - started, 1)
    return result
