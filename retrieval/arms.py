"""The two search arms, as SQL: HNSW cosine search per embedding model, and full text per language.

Both run inside `scope.reader_transaction`, always with the owner filter in the WHERE clause.
"""
from __future__ import annotations

import re

import numpy as np
from django.conf import settings
from django.db import connection

from documents.language import _WORDS as STOPWORDS_BY_LANGUAGE

# Below this many vectors in scope an exact scan is both fast and exact; above it the HNSW
# index with pgvector 0.8's iterative scan keeps filtered searches from coming back short.
HNSW_EF_SEARCH = 100
HNSW_MAX_SCAN_TUPLES = 40_000
_ALL_STOPWORDS = set().union(*STOPWORDS_BY_LANGUAGE.values())
_WORD_RE = re.compile(r"\w+", re.UNICODE)


def vector_literal(vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in np.asarray(vector, dtype=np.float32)) + "]"


def vector_arm(*, model_id: int, dim: int, query_vector, owner_id: int, document_ids: list[int],
               scope_vectors: int, top_k: int) -> tuple[list[tuple[int, float]], str]:
    """(chunk_id, cosine distance) best first, and the method used ("exact" or "hnsw")."""
    model_id, dim = int(model_id), int(dim)
    q = vector_literal(query_vector)
    with connection.cursor() as cursor:
        if scope_vectors <= settings.RETRIEVAL_EXACT_SCAN_MAX:
            # The expression differs from the index's, so PostgreSQL reads the scope's rows
            # through the (document_id, model_id) index and sorts: exact, never short.
            cursor.execute(
                f"""
                SELECT e.chunk_id, (e.embedding <=> %s::vector) AS distance
                FROM retrieval_chunkembedding e
                WHERE e.model_id = {model_id} AND e.owner_id = %s AND e.document_id = ANY(%s)
                ORDER BY distance, e.chunk_id LIMIT %s
                """,
                [q, owner_id, document_ids, top_k],
            )
            return [(r[0], float(r[1])) for r in cursor.fetchall()], "exact"
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH, int(top_k))}")
        cursor.execute(f"SET LOCAL hnsw.max_scan_tuples = {HNSW_MAX_SCAN_TUPLES}")
        cursor.execute(
            f"""
            WITH candidates AS MATERIALIZED (
                SELECT e.chunk_id, e.embedding::vector({dim}) <=> %s::vector({dim}) AS distance
                FROM retrieval_chunkembedding e
                WHERE e.model_id = {model_id} AND e.owner_id = %s AND e.document_id = ANY(%s)
                ORDER BY e.embedding::vector({dim}) <=> %s::vector({dim})
                LIMIT %s
            )
            SELECT chunk_id, distance FROM candidates ORDER BY distance, chunk_id
            """,
            [q, owner_id, document_ids, q, top_k],
        )
        return [(r[0], float(r[1])) for r in cursor.fetchall()], "hnsw"


def distances_for(*, model_id: int, dim: int, query_vector, chunk_ids: list[int]) -> dict[int, float]:
    """Cosine distances of given chunks (e.g. full-text hits) under one model."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT chunk_id, embedding <=> %s::vector FROM retrieval_chunkembedding "
            f"WHERE model_id = {int(model_id)} AND chunk_id = ANY(%s)",
            [vector_literal(query_vector), chunk_ids],
        )
        return {r[0]: float(r[1]) for r in cursor.fetchall()}


def fts_query_text(query: str, config: str) -> str:
    """The question as an OR of its words: a natural-language question rarely has *all* its
    words in one passage. Language configurations drop their own stop words; for `simple`
    we drop common words of the languages we know, or every passage would match "the"."""
    words = _WORD_RE.findall(query)
    if config == "simple":
        words = [w for w in words if w.lower() not in _ALL_STOPWORDS]
    return " OR ".join(words)


def fts_arm(*, query: str, configs: list[str], owner_id: int, document_ids: list[int] | None,
            top_k: int) -> list[tuple[int, float]]:
    """(chunk_id, ts_rank_cd) best first, each language's chunks matched with its own configuration."""
    parts, params = [], []
    for config in configs:
        text = fts_query_text(query, config)
        if not text:
            continue
        doc_filter = "AND c.document_id = ANY(%s)" if document_ids is not None else ""
        parts.append(
            f"""
            (SELECT c.id, ts_rank_cd(c.search_vector, q.query, 32) AS rank
             FROM documents_chunk c, websearch_to_tsquery(%s::regconfig, %s) AS q(query)
             WHERE c.owner_id = %s AND c.text_config = %s {doc_filter} AND c.search_vector @@ q.query
             ORDER BY rank DESC, c.id LIMIT %s)
            """
        )
        params += [config, text, owner_id, config] + ([document_ids] if document_ids is not None else []) + [top_k]
    if not parts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, rank FROM ({' UNION ALL '.join(parts)}) hits ORDER BY rank DESC, id LIMIT %s",
            params + [top_k],
        )
        return [(r[0], float(r[1])) for r in cursor.fetchall()]
