"""Checks that the database is one ragsite can run on."""
from __future__ import annotations

from django.utils.translation import gettext_noop

from core.reasons import reason

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


# SQLSTATEs of database errors that are over once the connection is new or the transaction runs
# again: connection exceptions (class 08), serialization failure, deadlock, too many clients,
# the server terminating or shutting down (pg_terminate_backend, a restart).
# The reasons are phrases of the catalogue (core.reasons), read in the reader's language.
_TRANSIENT_SQLSTATES = {
    "40001": gettext_noop("a serialization conflict with another transaction"),
    "40P01": gettext_noop("a deadlock with another transaction"),
    "53300": gettext_noop("the database has no free connection (too many clients)"),
    "57P01": gettext_noop("the database connection was closed by the server"),
    "57P02": gettext_noop("the database server restarted"),
    "57P03": gettext_noop("the database server was starting up or shutting down"),
}
_CONNECTION_LOST = gettext_noop("the connection to the database was lost")


def transient_database_error(exc: BaseException) -> dict | None:
    """A readable reason (core.reasons, a phrase to put inside a sentence) when `exc` is a temporary database problem worth retrying, else None.

    Only Django's OperationalError/InterfaceError count (never a programming or data error):
    with a SQLSTATE from the list above or class 08, or with none at all — psycopg raises those
    without a code when the connection is lost or cannot be made ("server closed the
    connection unexpectedly", "connection refused").
    """
    from django.db import InterfaceError, OperationalError

    if not isinstance(exc, (OperationalError, InterfaceError)):
        return None
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate in _TRANSIENT_SQLSTATES:
        return reason(f"database.{sqlstate}", _TRANSIENT_SQLSTATES[sqlstate])
    if sqlstate is None or sqlstate.startswith("08"):
        return reason("database.connection_lost", _CONNECTION_LOST)
    return None
