"""The scopes searched, their queries, and the exact top 10 of each query over the scope's vectors."""
from __future__ import annotations

import numpy as np

from bench.searchbench.corpus import RECALL_K, Corpus, Scope
from bench.searchbench.database import Loaded

CANDIDATES_REFINE = 64


def make_scopes(corpus: Corpus, loaded: Loaded, queries: int) -> list[Scope]:
    small_docs = np.flatnonzero(corpus.doc_small)
    big_docs = np.flatnonzero(~corpus.doc_small)
    conv_docs = np.array(corpus.conversation_docs, dtype=np.int64)

    def rows_of(docs):
        return np.sort(np.concatenate([np.arange(corpus.doc_start[d], corpus.doc_start[d] + corpus.doc_sizes[d])
                                       for d in docs]))

    # With collections, bench-big's documents are all shared: its whole library is the 50 collections.
    everything = list(loaded.collection_ids)
    scopes = [
        Scope("unfiltered", "big", sorted(int(x) for x in loaded.doc_ids[big_docs]), None, rows_of(big_docs),
              collection_ids=everything, include_own=not everything),
        Scope("owner_1pct", "small", sorted(int(x) for x in loaded.doc_ids[small_docs]), None, rows_of(small_docs)),
        Scope("conversation_1pct", "big", sorted(int(x) for x in loaded.doc_ids[conv_docs]),
              sorted(int(x) for x in loaded.doc_ids[conv_docs]), rows_of(conv_docs), loaded.conversation_id,
              collection_ids=everything),
    ]
    if loaded.readable_ids:
        readable = set(loaded.readable_ids)
        docs = np.flatnonzero(corpus.doc_small | np.isin(loaded.doc_collections, list(readable)))
        scopes.append(Scope(f"collections_{len(readable)}", "small", sorted(int(x) for x in loaded.doc_ids[docs]),
                            None, rows_of(docs), collection_ids=list(loaded.readable_ids)))
    for scope in scopes:
        add_queries(corpus, scope, queries)
    return scopes


def add_queries(corpus: Corpus, scope: Scope, queries: int) -> None:
    """Queries about what the scope holds: near the centre of the cluster of a random chunk in scope."""
    rng = corpus.rng
    clusters = corpus.row_cluster[rng.choice(scope.rows, queries)]
    vectors = corpus.sample_near(clusters)
    scope.queries = [(vectors[i], corpus.question(int(c)), int(c)) for i, c in enumerate(clusters)]
    scope.truth = exact_top(corpus, scope.rows, vectors, RECALL_K)


def exact_top(corpus: Corpus, rows: np.ndarray, queries: np.ndarray, k: int) -> list[list[int]]:
    """Exact top-k chunk ids by cosine distance (float64 refinement of a float32 shortlist)."""
    out = []
    q32 = queries.astype(np.float32)
    best = np.empty((len(queries), 0), dtype=np.int64)
    best_sims = np.empty((len(queries), 0), dtype=np.float32)
    for start in range(0, len(rows), 200_000):
        part = rows[start:start + 200_000]
        sims = q32 @ corpus.vectors[part].T
        c = min(CANDIDATES_REFINE, len(part))
        idx = np.argpartition(-sims, c - 1, axis=1)[:, :c]
        best = np.concatenate([best, part[idx]], axis=1)
        best_sims = np.concatenate([best_sims, np.take_along_axis(sims, idx, axis=1)], axis=1)
        if best.shape[1] > CANDIDATES_REFINE:
            keep = np.argpartition(-best_sims, CANDIDATES_REFINE - 1, axis=1)[:, :CANDIDATES_REFINE]
            best = np.take_along_axis(best, keep, axis=1)
            best_sims = np.take_along_axis(best_sims, keep, axis=1)
    for i, q in enumerate(queries.astype(np.float64)):
        cand = best[i]
        v = corpus.vectors[cand].astype(np.float64)
        dist = 1.0 - (v @ q) / (np.linalg.norm(v, axis=1) * np.linalg.norm(q))
        order = np.lexsort((cand, dist))[:k]
        out.append([int(cand[j]) + 1 for j in order])
    return out
