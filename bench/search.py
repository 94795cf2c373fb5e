"""Search benchmark: latency of the vector arm, the full-text arm and hybrid search, recall of the
vector arm, HNSW build time and insert rate, on synthetic embedding-like data.

    .venv/bin/python bench/search.py [--chunks N] [--queries N] [--dim 384] [--filtered-fraction 0.01]
                                     [--json-out PATH] [--keep] [--no-sweep] [--no-variants]
                                     [--maintenance-work-mem 3GB] [--help: more options]

**Data.** ``--clusters`` (1,000) topic centres in ``--dim`` dimensions; every chunk is a centre
plus Gaussian noise, L2-normalised. The noise is anisotropic (variance of component *i* ∝ 1/i
in a random orthonormal basis), so neighbourhoods have a low intrinsic dimension as real
sentence embeddings do; isotropic noise in 384-d makes every member of a cluster equidistant
from a query, which no embedding model produces. ``data.stats`` in the JSON gives the resulting
cosine similarities. Documents hold 20–180 chunks each and have a topic: 80 % of a document's
chunks belong to its topic's cluster, the rest to random clusters. Each chunk's text is
``--words-per-chunk`` words drawn from a Zipf distribution whose top ranks are PostgreSQL's
English stop words, followed by 30,000 generated words, with 12 % of the words taken from its
cluster's eight topic words — so full-text queries match realistic fractions of the table.

**Users and scopes.** ``bench-big`` owns the whole table except ``--filtered-fraction`` of the
chunks, which ``bench-small`` owns (whole documents). Scopes measured:

* ``unfiltered`` — bench-big searches all its documents (~99 % of the rows): the HNSW path;
* ``owner_1pct`` — bench-small searches all its documents (1 % of the rows, selected by the
  owner filter and row-level security);
* ``conversation_1pct`` — bench-big searches a conversation's attached documents (1 % of the
  rows, selected by ``document_id = ANY(...)`` among bench-big's rows).

* ``collections_N`` (with ``--collections C``) — bench-big's documents are spread over C collections
  (it reads them all as a superuser, so ``unfiltered`` becomes "all C collections"); bench-small
  reads ``--readable-collections N`` of them through a group: its own documents plus those N
  (about N/C of the rows), with the product's own-or-collection condition and no document ids.

The filtered scopes run twice: through the exact scan and through the HNSW iterative scan
(``settings.RETRIEVAL_EXACT_SCAN_MAX`` overridden), to show which is faster at that size.

**Queries.** ``--queries`` (200) per scope: a vector near the centre of a cluster the scope holds
(drawn with the chunks' noise) and a question built from two of that cluster's topic words and
two Zipf-drawn general words.

**What is timed.** The product's own functions, inside ``retrieval.search.scope.reader_transaction``
(row-level security on), each measurement one whole transaction:

* ``vector``: ``arms.vector_arm``;  ``fts``: ``arms.fts_plans`` + ``arms.fts_arm``;
* ``hybrid``: what ``retrieve`` does for documents inside its search transaction (no category, so no
  distance threshold): both arms, ``fusion.rrf``, ``passages.chunk_rows`` for the ``final_top_n``
  results with their cosine distances (query embedding excluded: it is not search);
* ``retrieve``: the whole ``retrieval.search.retrieve()`` (scope resolution, settings, logging)
  with an embedding client that returns the precomputed query vector; its ``query_embedding``
  time is subtracted.

Recall@10 of the vector arm is against an exact top 10 computed with numpy (float64) over the
scope's vectors. Ingest figures: chunk rows by COPY into a staging table + ``INSERT ... SELECT``
computing ``search_vector`` with the indexer's expression, vectors by binary COPY; both with
every index except HNSW (bulk load), then the HNSW index built with the product's
``vector_sql.create_hnsw_index`` (CONCURRENTLY, maintenance_work_mem 1 GB), then the last
``--holdout`` documents inserted with the HNSW index in place (what indexing a new upload costs).

The bench runs on its own embedded PostgreSQL in a temporary folder (stopped and deleted at the
end; ``--keep`` keeps it) with ``shared_buffers`` raised (``--shared-buffers``; ``default`` keeps
the server's 128 MB) and ``pg_prewarm`` of the searched relations; ``postgres.settings`` in the
JSON lists what was used. Progress goes to stderr, the JSON result to stdout.

**Also measured** (each skippable): ``exact_vs_hnsw_sweep`` — the vector arm through both paths for
conversation scopes of 2k-100k vectors (is ``RETRIEVAL_EXACT_SCAN_MAX`` right?), and with collections
``exact_vs_hnsw_collection_sweep`` — the same for collection scopes of 1-12 collections, with the CPU
per search of each path (is ``RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS`` right?); ``variants`` —
alternatives run in the bench's process only (ef_search values, the vector arm without the array of all
the user's document ids, the full-text arm at several ``fts_match_budget`` values with the overlap of
its top 40 with matching every word, and the previous release's full-text SQL), see ``variants.note``;
``explain`` — EXPLAIN (ANALYZE, BUFFERS) of one query of each kind (the full-text arm's plan is inside
the ``ragsite_fts_search`` function, so only its function scan shows).
``--maintenance-work-mem`` builds the HNSW index with another value than the product's 1 GB.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import json_report
from bench.searchbench.run import run
from bench.searchbench.variants import FTS_BUDGETS


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/search.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--filtered-fraction", type=float, default=0.01)
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--words-per-chunk", type=int, default=120)
    p.add_argument("--noise", type=float, default=0.75, help="noise norm relative to the unit centre")
    p.add_argument("--seed", type=int, default=20250101)
    p.add_argument("--holdout", type=float, default=0.02,
                   help="fraction of the chunks (whole documents) inserted after the HNSW index is built")
    p.add_argument("--maintenance-work-mem", default=None,
                   help="build the HNSW index with this maintenance_work_mem instead of the product's "
                        "(retrieval.vector_sql.MAINTENANCE_WORK_MEM, patched for this run)")
    p.add_argument("--shared-buffers", default="auto", help="'auto' (25%% of RAM, at most 8GB), 'default', or a size")
    p.add_argument("--warmup", type=int, default=20, help="untimed hybrid searches per scope before timing")
    p.add_argument("--no-sweep", action="store_true", help="skip the exact-vs-HNSW scope size sweep")
    p.add_argument("--no-variants", action="store_true", help="skip the measured SQL variants")
    p.add_argument("--variant-queries", type=int, default=100)
    p.add_argument("--fts-budgets", default=",".join(map(str, FTS_BUDGETS)),
                   help="full-text match budgets to compare (comma-separated; 0 = every word)")
    p.add_argument("--legacy-queries", type=int, default=20,
                   help="queries per scope for the previous release's (slow) full-text SQL")
    p.add_argument("--collections", type=int, default=0,
                   help="spread bench-big's documents over this many collections (bench-big becomes a superuser "
                        "reading them all) and measure the scope collections_N: bench-small's own documents plus "
                        "--readable-collections of them, through a group")
    p.add_argument("--readable-collections", type=int, default=5)
    p.add_argument("--json-out")
    p.add_argument("--keep", action="store_true", help="keep the temporary database and folder")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    json_report(result, args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
