"""retrieval's background tasks: what the django-q2 workers run, and where they are queued.

Each task takes ids, is safe to run twice, and calls one function of its module. The modules
doing the work never import this one (the import contract forbids the cycle): when indexing
must queue again (a retry, a recovered document) the task hands it the way to do so.
Queued through core.tasks, by function, after the commit. The approved Q&A pairs' one task (their
question's embedding) lives with them: retrieval.knowledge.services queues it with the write that
makes their vectors stale.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Callable, Iterator

from core.tasks import queue, queue_at
from retrieval.indexing import pipeline as indexing
from retrieval.indexing import reembed


def index_document(document_id: int, strategy: str | None = None) -> str:
    """Index one document (uploaded, re-index asked for, recovered or retried)."""
    return indexing.index_document(document_id, strategy, reschedule=_reschedule_indexing)


def recover_stale_documents() -> int:
    """Scheduled every minute (migration retrieval 0004/0011) and at worker start."""
    return indexing.recover_stale_documents(enqueue=enqueue_indexing)


def reembed_document(document_id: int, server_id: int) -> str:
    """Re-embed one document with the server's model; its old vectors answer until the switch."""
    return reembed.reembed_document(document_id, server_id)


# --- queueing ----------------------------------------------------------------------------------


def enqueue_indexing(document_id: int) -> None:
    """Queue the indexing of a document once the current transaction commits."""
    queue(index_document, document_id, task_name=f"index document {document_id}", group="indexing")


_handed_to: ContextVar[Callable[[int], None] | None] = ContextVar("ragsite_indexing_handed_to", default=None)


@contextmanager
def indexing_handed_to(handler: Callable[[int], None]) -> Iterator[None]:
    """Inside the block, a document announced as waiting to be indexed is handed to `handler(document_id)`
    instead of getting an indexing task of its own: a watched source's sync indexes what it adds in one
    task that gives way to everyone else's uploads (sources/lane.py), not in a queue of thousands."""
    token = _handed_to.set(handler)
    try:
        yield
    finally:
        _handed_to.reset(token)


def queue_index_wanted(sender, *, document_id: int, **kwargs) -> None:
    """Receiver of documents.signals.index_wanted (connected in RetrievalConfig.ready)."""
    handler = _handed_to.get()
    if handler is not None:
        handler(document_id)
        return
    enqueue_indexing(document_id)


def _reschedule_indexing(document_id: int, strategy: str | None, *, name: str, next_run: datetime) -> None:
    """Run the indexing again at `next_run` (a schedule), or now: at the back of the queue."""
    from django.utils import timezone

    args = (document_id, strategy) if strategy else (document_id,)
    if next_run <= timezone.now():
        queue(index_document, *args, task_name=name, group="indexing")
    else:
        queue_at(index_document, *args, name=name, next_run=next_run)


def enqueue_reembedding(document_ids: list[int], server_id: int) -> None:
    """Queue the re-embedding of each document once the current transaction commits."""
    for document_id in document_ids:
        queue(reembed_document, document_id, server_id, task_name=f"re-embed document {document_id}",
              group="reembed")


def recover_at_worker_start(**kwargs) -> None:
    """django-q2 post_spawn handler: a restarted worker picks up what a dead one left, and an
    indexing worker keeps watching for documents another node's dead worker left (below)."""
    from django.db import connection

    try:
        recover_stale_documents()
    except Exception:  # never keep a worker from starting
        logging.getLogger(__name__).exception("stale document recovery failed")
    finally:
        connection.close()
    _start_recovery_watch()


def _start_recovery_watch() -> None:
    """Look for stale documents every INDEX_RECOVERY_INTERVAL seconds in a thread of this worker.

    On several machines the node whose worker died may never start again, and django-q2's
    scheduler only fires the minute schedule (migration retrieval 0004) once a minute or so:
    the surviving indexing nodes must notice a lapsed lease themselves. Only the indexing
    cluster watches (the chat cluster's workers never index). The thread has its own database
    connection and closes it after each look, so a database restart costs one failed look.
    """
    from django.conf import settings
    from django_q.conf import Conf

    interval = settings.INDEX_RECOVERY_INTERVAL
    if interval <= 0 or Conf.CLUSTER_NAME != Conf.PREFIX:
        return
    threading.Thread(target=_recovery_watch, args=(interval,), name="ragsite-recovery-watch", daemon=True).start()


def _recovery_watch(interval: float) -> None:
    from django.db import connection

    while True:
        time.sleep(interval * random.uniform(0.8, 1.2))  # several workers and nodes: spread the looks
        try:
            recover_stale_documents()
        except Exception:  # the database or the broker is away for now: look again next time
            logging.getLogger(__name__).warning("stale document recovery failed; retrying", exc_info=True)
        finally:
            connection.close()
