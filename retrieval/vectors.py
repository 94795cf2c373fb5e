"""The vector spaces (one per embedding model) and their HNSW indexes."""
from __future__ import annotations

from django.db import IntegrityError, connection

from retrieval.models import EmbeddingModel
from retrieval.vector_sql import create_hnsw_index


def embedding_model_ensure(*, name: str, dim: int) -> EmbeddingModel:
    """Return the vector space for (name, dim), creating it and its HNSW index the first time.

    Outside a transaction the index is built CONCURRENTLY, so indexing of other documents
    goes on while it builds.
    """
    if not name or not dim or dim < 1:
        raise ValueError("an embedding model needs a name and a positive dimension")
    try:
        model, _ = EmbeddingModel.objects.get_or_create(name=name, dim=dim)
    except IntegrityError:  # created by another process at the same moment
        model = EmbeddingModel.objects.get(name=name, dim=dim)
    if not _index_exists(model):
        create_hnsw_index(connection, model.pk, model.dim)
    return model


def _index_exists(model: EmbeddingModel) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [model.index_name])
        return cursor.fetchone() is not None


def hnsw_indexes() -> list[dict]:
    """Every per-model HNSW index with its size, for health pages and tests."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT i.indexname, pg_relation_size(c.oid), i.indexdef
            FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname
            WHERE i.tablename = 'retrieval_chunkembedding' AND i.indexdef ILIKE '%%USING hnsw%%'
            ORDER BY i.indexname
            """
        )
        return [{"name": name, "bytes": size, "definition": ddl} for name, size, ddl in cursor.fetchall()]


