"""Where one question's `retrieve()` spends its CPU: per scope, the CPU of the process and of its
PostgreSQL backend per question, the statements one question runs (with their wall times), and the
per-question lookups alone; prints JSON.

    .venv/bin/python bench/retrieve_profile.py [--chunks 20000] [--queries 200] [--rounds 3]
                                               [--scopes unfiltered,owner_1pct,conversation_1pct]
                                               [--cprofile DIR] [--json-out PATH]

The data, users and scopes are `bench/search.py`'s (the same generator and seed, on a throw-away
embedded PostgreSQL); the query embedding is a stub returning the precomputed vector, as there.
Run from another checkout's folder (`cd /tmp/old && python /path/to/bench/retrieve_profile.py`) it
profiles that checkout's code: a release whose bench is the single file `bench/search.py` works too,
so old and new are compared on identical data. `--cprofile DIR` also writes a cProfile of each scope's
questions (`DIR/<scope>.prof`; cProfile inflates Python's share about 2.5×: compare, don't add up).
Per-question overhead (not per row) shows as well at 20k chunks as at 100k (docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the checkout profiled: the current folder's


def _backend_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _bench_parts():
    """The corpus, loader and scopes of the checkout's search benchmark (a package now, one file before)."""
    try:
        from bench.searchbench.corpus import Corpus
        from bench.searchbench.database import load, prewarm, tune_server
        from bench.searchbench.measure import Searcher
        from bench.searchbench.scopes import make_scopes
        return Corpus, load, tune_server, prewarm, make_scopes, Searcher
    except ImportError:
        import bench.search as single
        return single.Corpus, single.load, single.tune_server, single.prewarm, single.make_scopes, single.Searcher


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/retrieve_profile.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, default=20_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3, help="timed passes over the queries, each reported")
    p.add_argument("--scopes", default="unfiltered,owner_1pct,conversation_1pct")
    p.add_argument("--cprofile", help="write DIR/<scope>.prof")
    p.add_argument("--json-out")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from bench.common import BenchSite

    Corpus, load, tune_server, prewarm, make_scopes, Searcher = _bench_parts()
    corpus = Corpus(chunks=args.chunks, dim=384, clusters=1000, words_per_chunk=120, seed=20250101, noise=0.75,
                    filtered_fraction=0.01)
    result: dict = {"benchmark": "retrieve_profile", "checkout": os.getcwd(), "chunks": args.chunks,
                    "queries": args.queries, "scopes": {}}
    with BenchSite(prefix="ragsite-bench-profile-") as site:
        tune_server(site, "auto")
        loaded = load(corpus, max(1, round(0.02 * len(corpus.doc_sizes))), 0, 0)
        scopes = make_scopes(corpus, loaded, args.queries)
        prewarm(loaded.model_id, 384)
        searcher = Searcher(corpus, loaded)
        result["scopes"] = _profile(args, searcher, scopes)
    text = json.dumps(result, indent=1)
    if args.json_out:
        Path(args.json_out).write_text(text)
    print(text)
    return 0


def _profile(args, searcher, scopes) -> dict:
    import retrieval.search.request as request
    import retrieval.search.retriever as retriever
    from django.db import connection

    from chat.selectors import conversation_scope
    from retrieval.search.scope import ALL, with_collections

    current: dict = {}

    class _Stub:
        def embed_queries(self, texts):
            return [current["v"]]

    request.query_embedder_for = lambda server, **kw: _Stub()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]

    def cpu_per_call(fn, calls: int) -> dict:
        p0, b0 = time.process_time(), _backend_cpu_s(pid)
        for i in range(calls):
            fn(i)
        return {"client_ms": round(1000 * (time.process_time() - p0) / calls, 3),
                "backend_ms": round(1000 * (_backend_cpu_s(pid) - b0) / calls, 3)}

    out = {}
    for scope in scopes:
        if scope.name not in args.scopes.split(","):
            continue
        user = searcher.users[scope.user_key]

        def ask(i: int, scope=scope, user=user):
            vector, text, _cluster = scope.queries[i % len(scope.queries)]
            current["v"] = vector
            asked = conversation_scope(user, scope.conversation_id) if scope.conversation_id else None
            return retriever.retrieve(user, text, asked)

        for i in range(20):
            ask(i)
        statements: list = []

        def record(execute, sql, params, many, context):
            t0 = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                statements.append({"ms": round((time.perf_counter() - t0) * 1000, 3), "sql": " ".join(sql.split())[:200]})

        with connection.execute_wrapper(record):
            ask(0)
        entry: dict = {"per_question": [cpu_per_call(ask, len(scope.queries)) for _ in range(args.rounds)],
                 "statements": statements}
        searched = (conversation_scope(user, scope.conversation_id) if scope.conversation_id else None) or ALL
        parts = {"with_collections": lambda i: with_collections(user, searched)}
        if scope.conversation_id:
            parts["conversation_scope"] = lambda i: conversation_scope(user, scope.conversation_id)
        entry["lookups_alone"] = {name: cpu_per_call(fn, len(scope.queries)) for name, fn in parts.items()}
        if args.cprofile:
            Path(args.cprofile).mkdir(parents=True, exist_ok=True)
            profile = cProfile.Profile()
            profile.enable()
            for i in range(len(scope.queries)):
                ask(i)
            profile.disable()
            profile.dump_stats(str(Path(args.cprofile) / f"{scope.name}.prof"))
        out[scope.name] = entry
    return out


if __name__ == "__main__":
    raise SystemExit(main())
