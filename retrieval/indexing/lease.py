"""The indexing lease, renewed on a timer: a document in `processing` keeps a fresh heartbeat for as
long as its job runs, whether or not the job writes progress (one embedding request or one OCR page
can outlast the lease), and through a database restart (a failed renewal is tried again at the
next beat). Before this, only progress writes renewed it, and a database restart let a healthy
job's lease lapse: recovery then failed the document as "interrupted"."""
from __future__ import annotations

import logging
import threading

from django.db import connection
from django.utils import timezone

from documents.models import Document, DocumentStatus

logger = logging.getLogger(__name__)


def beat_interval(lease_seconds: float) -> float:
    """A quarter of the lease (several beats may fail before it lapses), between 0.2 s and 60 s."""
    return min(60.0, max(0.2, lease_seconds / 4))


class LeaseKeeper:
    """A daemon thread renewing one claimed document's heartbeat every `interval` seconds until
    stopped, or until the row is no longer this attempt's (superseded: nothing left to keep)."""

    def __init__(self, document_id: int, attempt: int, *, interval: float):
        self.document_id, self.attempt, self.interval = document_id, attempt, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ragsite-lease-{document_id}", daemon=True)
        self.renewals = 0

    def __enter__(self) -> "LeaseKeeper":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 30)

    def _run(self) -> None:
        failures = 0
        while not self._stop.wait(self.interval):
            try:
                kept = Document.objects.filter(pk=self.document_id, status=DocumentStatus.PROCESSING,
                                               index_attempts=self.attempt).update(heartbeat_at=timezone.now())
                failures = 0
            except Exception:  # the database is away for now: the next beat tries again
                failures += 1
                if failures == 1:
                    logger.warning("could not renew the indexing lease; retrying",
                                   extra={"document_id": self.document_id}, exc_info=True)
                kept = 1
            finally:
                connection.close()  # this thread's own connection: never one left broken by a restart
            if not kept:
                return
            self.renewals += 1
