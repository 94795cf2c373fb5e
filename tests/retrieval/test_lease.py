"""The indexing lease is renewed on a timer, not only by progress writes (issue #29: a database restart
let a healthy job's lease lapse, and recovery failed the document as "interrupted")."""
from __future__ import annotations

import time
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


def test_a_job_that_writes_no_progress_for_longer_than_the_lease_keeps_it(user, fake_ai, database_url):
    """One embedding request outlasts the 2 s lease: the job keeps its document (one attempt), and
    recovery, looking every second, never takes it away."""
    server = AiServer.objects.create(name="slow fake", kind="openai", base_url=fake_ai.url, read_timeout=30,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server)
    fake_ai.fail_next("/v1/embeddings", {"delay_first_byte": 8}, times=1)
    worker = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-lease",
                            env={"INDEX_LEASE_SECONDS": "2", "INDEX_RECOVERY_INTERVAL": "1"}).start()
    try:
        text = "\n\n".join(f"Section {i}: a long embedding request must not lose the lease." for i in range(20))
        document = upload_bytes(user, text.encode(), "lease.txt")
        wait_for(lambda: fake_ai.requests_to("/v1/embeddings"), timeout=60, what="embedding started", process=worker)
        beats = set()
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:  # the embedding server has not answered yet
            beats.add(Document.objects.values_list("heartbeat_at", flat=True).get(pk=document.pk))
            time.sleep(0.25)
        assert len(beats - {None}) >= 3, beats  # renewed while no progress was written
        wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=90,
                 what="indexing", process=worker)
    finally:
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
