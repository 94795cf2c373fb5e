"""SQL for the per-model partial HNSW indexes on the shared vectors table."""
from __future__ import annotations

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
MAINTENANCE_WORK_MEM = "1GB"  # 64 MB made a 100k-row 384-d build take 333 s here; 1 GB, 62-83 s


def hnsw_index_name(model_id: int, dim: int) -> str:
    return f"chunkembedding_hnsw_m{int(model_id)}_d{int(dim)}"


def create_hnsw_index_sql(model_id: int, dim: int, *, concurrently: bool = False) -> str:
    """CREATE INDEX for one model's vectors: cosine HNSW over embedding::vector(dim), only its rows."""
    model_id, dim = int(model_id), int(dim)
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {hnsw_index_name(model_id, dim)} "
        f"ON retrieval_chunkembedding USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE model_id = {model_id}"
    )


def drop_hnsw_index_sql(model_id: int, dim: int) -> str:
    return f"DROP INDEX IF EXISTS {hnsw_index_name(model_id, dim)}"


def create_hnsw_index(connection, model_id: int, dim: int) -> None:
    """Build the index. Outside a transaction it is built CONCURRENTLY, so writes go on meanwhile."""
    concurrently = not connection.in_atomic_block
    with connection.cursor() as cursor:
        if connection.in_atomic_block:
            # CREATE INDEX refuses to run while deferred foreign-key checks are pending in the
            # transaction; check them now instead of at commit.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"SET LOCAL maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
        else:
            cursor.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
        cursor.execute(create_hnsw_index_sql(model_id, dim, concurrently=concurrently))
        if not connection.in_atomic_block:
            cursor.execute("RESET maintenance_work_mem")
