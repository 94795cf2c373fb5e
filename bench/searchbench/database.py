"""The bench's PostgreSQL: its settings, the corpus loaded into it (COPY, then the HNSW index), prewarm."""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.common import BenchSite, log
from bench.searchbench.corpus import TEXT_CONFIG, Corpus

BATCH = 20_000
REPORTED_SETTINGS = ("server_version", "shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem",
                     "max_wal_size", "jit", "jit_above_cost", "max_parallel_workers_per_gather",
                     "max_parallel_maintenance_workers", "random_page_cost", "synchronous_commit", "huge_pages")


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
