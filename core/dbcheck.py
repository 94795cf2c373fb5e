"""Checks that the database is one ragsite can run on."""
from __future__ import annotations

MIN_PGVECTOR = (0, 8, 0)


class UnsupportedDatabase(RuntimeError):
    pass


def pgvector_version(connection) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return row[0] if row else None


def _parse(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def require_pgvector(connection) -> str:
    """Return the pgvector version, or raise with a clear message when it is missing or too old."""
    version = pgvector_version(connection)
    wanted = ".".join(map(str, MIN_PGVECTOR))
    if version is None:
        raise UnsupportedDatabase(
            f"The database has no pgvector extension. ragsite needs pgvector >= {wanted}: install it on the "
            "server (e.g. the postgresql-NN-pgvector package) or unset DATABASE_URL to use the embedded database."
        )
    if _parse(version) < MIN_PGVECTOR:
        raise UnsupportedDatabase(
            f"The database has pgvector {version}; ragsite needs pgvector >= {wanted} (iterative HNSW index "
            "scans). Upgrade the extension (ALTER EXTENSION vector UPDATE) or unset DATABASE_URL to use the "
            "embedded database."
        )
    return version


def check_pgvector_version(apps, schema_editor) -> None:
    """Migration step: refuse to go on with a pgvector that is too old."""
    require_pgvector(schema_editor.connection)
