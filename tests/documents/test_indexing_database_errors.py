"""A temporary database error must not fail a user's document (issue #20).

The indexing job's own PostgreSQL connection is really terminated (pg_terminate_backend from a
second connection) while the job waits for a slow embedding server: the job retries later like
after a busy AI server, the retry indexes the document once, and only the last attempt fails,
with a sentence a user can read. Transactional tests: the job's connection is closed and
reopened, which the test-case transaction of the plain `django_db` mark would not survive.
"""
from __future__ import annotations

import psycopg
import pytest
from django.db import DataError, OperationalError, ProgrammingError, connection
from django_q.models import Schedule

from core.dbcheck import transient_database_error
from documents.models import Chunk
from retrieval.models import ChunkEmbedding
from retrieval.tasks import index_document
from tests.dbfaults import backend_pid, terminate_when
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

TEXT = ("Crane inspections happen every seven days. " * 60).encode()


def _index_with_connection_killed(fake_embedder, document) -> str:
    fake_embedder.reset()
    fake_embedder.fail_next("/v1/embeddings", {"delay_first_byte": 1.0})
    pid = backend_pid()
    # Killed once the (slow) embedding request has arrived.
    killer = terminate_when(lambda: bool(fake_embedder.requests_to("/v1/embeddings")), pid)
    try:
        result = index_document(document.pk)
    finally:
        killer.join()
    assert backend_pid() != pid  # the job's connection really was the one terminated, and replaced
    return result


def test_connection_terminated_mid_index_retries_and_then_indexes_once(user, fake_embedder):
    document = upload_bytes(user, TEXT, "crane.txt")
    result = _index_with_connection_killed(fake_embedder, document)
    document.refresh_from_db()
    assert result == "retrying: database unavailable"
    assert document.status == "uploaded"
    assert document.index_error.startswith("Temporary problem, retrying in 30 s (attempt 2 of 3): ")
    assert "database" in document.index_error and "Error" not in document.index_error
    assert not Chunk.objects.filter(document=document).exists()  # nothing partial
    assert Schedule.objects.filter(name=f"retry indexing {document.pk} #2",
                                   func="retrieval.tasks.index_document").exists()

    fake_embedder.reset()
    assert index_document(document.pk).startswith("indexed")  # what the scheduled retry runs
    document.refresh_from_db()
    assert document.status == "indexed" and document.index_error == ""
    chunks = list(Chunk.objects.filter(document=document).values_list("chunk_index", flat=True))
    assert sorted(chunks) == list(range(document.chunk_count)) and document.chunk_count > 0  # no duplicates
    assert ChunkEmbedding.objects.filter(document=document).count() == document.chunk_count


def test_the_last_attempt_fails_with_a_readable_reason(user, settings, fake_embedder):
    settings.INDEX_MAX_ATTEMPTS = 1
    document = upload_bytes(user, TEXT, "crane.txt")
    result = _index_with_connection_killed(fake_embedder, document)
    document.refresh_from_db()
    assert result == "failed: database_unavailable"
    assert document.status == "failed"
    assert document.index_error == ("Indexing stopped because the database connection was closed by the server "
                                    "(after 1 attempts). Try re-indexing the document later.")
    assert not Chunk.objects.filter(document=document).exists()


def test_only_temporary_database_errors_count():
    """Real errors from the real server: a lost connection and a deadlock-class code are
    temporary, a programming or data error is not."""
    params = connection.get_connection_params()
    with pytest.raises(ProgrammingError) as syntax:
        with connection.cursor() as cursor:
            cursor.execute("SELEC 1")
    assert transient_database_error(syntax.value) is None
    with pytest.raises(DataError) as data:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 / 0")
    assert transient_database_error(data.value) is None
    with pytest.raises(OperationalError) as raised:
        with connection.cursor() as cursor:  # a statement cancelled by its timeout: not retried
            cursor.execute("SET statement_timeout = 10")
            cursor.execute("SELECT pg_sleep(1)")
    assert transient_database_error(raised.value) is None
    connection.close()
    with psycopg.connect(**params, autocommit=True) as other:
        pid = other.execute("SELECT pg_backend_pid()").fetchone()[0]
        with psycopg.connect(**params, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg.OperationalError) as lost:
            other.execute("SELECT 1")
    wrapped = OperationalError(str(lost.value))
    wrapped.__cause__ = lost.value  # how Django wraps the driver's error
    assert transient_database_error(wrapped) is not None
