"""The indexing lease is renewed on a timer, not only by progress writes: a database restart or one
long request must not let a healthy job's lease lapse (recovery would fail the document as
"interrupted")."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from documents.models import Document, DocumentStatus
from retrieval.indexing.lease import LeaseKeeper
from retrieval.models import AiServer, RetrievalSettings
from tests.documents.factories import upload_bytes
from tests.processes import ManagedProcess, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


LEASE = 20  # seconds: the renewal thread (a beat every 5 s) would have to be starved for all of them


def test_a_job_that_writes_no_progress_for_longer_than_the_lease_keeps_it(user, fake_ai, database_url):
    """One embedding request outlasts the lease: the job keeps its document (one attempt), and
    recovery, looking every second, never takes it away. The embedding server holds its answer
    until the test has seen the heartbeat renewed past the lease's first end, so no clock decides
    when the request finishes."""
    server = AiServer.objects.create(name="slow fake", kind="openai", base_url=fake_ai.url, read_timeout=600,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server)
    fake_ai.fail_next("/v1/embeddings", {"hold": "lease"}, times=1)
    worker = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-lease",
                            env={"INDEX_LEASE_SECONDS": str(LEASE), "INDEX_RECOVERY_INTERVAL": "1"}).start()
    try:
        text = "\n\n".join(f"Section {i}: a long embedding request must not lose the lease." for i in range(20))
        document = upload_bytes(user, text.encode(), "lease.txt")
        wait_for(lambda: fake_ai.requests_to("/v1/embeddings"), timeout=120, what="embedding started", process=worker)
        asked_at = timezone.now()
        beats = set()

        def renewed_past_the_lease():
            row = Document.objects.values("heartbeat_at", "status", "index_attempts").get(pk=document.pk)
            assert row["status"] == "processing" and row["index_attempts"] == 1, row  # never recovered meanwhile
            beats.add(row["heartbeat_at"])
            return row["heartbeat_at"] > asked_at + timedelta(seconds=LEASE * 1.25)

        # The embedding server has not answered, so no progress is written: only the timer renews.
        wait_for(renewed_past_the_lease, timeout=600, interval=0.5, what="the lease renewed past its end",
                 process=worker)
        assert len(beats - {None}) >= 2, beats
        fake_ai.release("lease")
        wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=300,
                 what="indexing", process=worker)
    finally:
        fake_ai.release("lease")
        worker.stop()
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    assert document.index_attempts == 1  # never recovered as interrupted
    assert "recovered interrupted indexing jobs" not in worker.log()


def test_the_lease_keeper_rides_out_a_database_restart(user, restart_postgres):
    document = upload_bytes(user, b"The pump runs on Tuesdays.", "pump.txt")
    stale = timezone.now() - timedelta(hours=1)
    Document.objects.filter(pk=document.pk).update(status=DocumentStatus.PROCESSING, index_attempts=1,
                                                   heartbeat_at=stale)

    def heartbeat():
        connection.close()  # a fresh connection each look: the server restarts under us
        try:
            return Document.objects.values_list("heartbeat_at", flat=True).get(pk=document.pk)
        except Exception:  # noqa: BLE001 - the server is restarting
            return None

    with LeaseKeeper(document.pk, 1, interval=0.3) as keeper:
        wait_for(lambda: (beat := heartbeat()) and beat > stale, timeout=10, what="first renewal")
        restart_postgres(down=1.5)
        restarted = timezone.now()
        wait_for(lambda: (beat := heartbeat()) and beat > restarted, timeout=20, what="renewal after the restart")
        assert keeper._thread.is_alive()
    assert not keeper._thread.is_alive()
    # Another attempt owns the row now: the keeper of the old one stops by itself.
    Document.objects.filter(pk=document.pk).update(index_attempts=2)
    with LeaseKeeper(document.pk, 1, interval=0.1) as old:
        wait_for(lambda: not old._thread.is_alive(), timeout=5, what="the superseded keeper to stop")
