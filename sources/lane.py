"""Indexing what a sync adds without holding back anyone's own upload.

An upload gets an indexing task of its own, and django-q2's queue is first in, first out: a first sync of
thousands of files would put thousands of tasks ahead of the next person's upload. So a run hands the
documents it adds or changes to its source's **lane** instead (retrieval.tasks.indexing_handed_to): one
task per source (`sources.tasks.index_source_documents`) indexes the source's waiting documents one at a
time and, before each, gives way — it goes to the back of the queue — while a document that no source
added waits to be indexed, and after each turn of TURN_SECONDS anyway. A person's upload thus waits at most
for the one document the lane is indexing. After MAX_GIVE_WAYS turns in a row that gave way the lane goes
on while the others still wait (many uploads at once, or one whose task is lost): a sync is never starved.

At least once, as every task: a cache flag keeps one lane task per source queued or running (`lane_wanted`);
a lane task that dies lets its flag lapse after FLAG_SECONDS, and the next run (or the indexing recovery,
for documents waiting longer than INDEX_LEASE_SECONDS) takes its documents up again. The lane task keeps
its waiting documents fresh (`updated_at`) so that the recovery does not queue them one task each while it
works through them.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from datetime import timedelta
from typing import Callable, Iterator

from django.conf import settings
from django.core.cache import cache
from django.db.models import QuerySet
from django.utils import timezone

from documents.models import Document, DocumentStatus
from retrieval.indexing.failure import RETRY_NOTE
from retrieval.tasks import indexing_handed_to
from sources.models import SourceItem

TURN_SECONDS = 30.0  # one lane task's turn; then it goes to the back of the queue
FLAG_SECONDS = 600  # how long a lane task that died keeps its source's flag
MAX_GIVE_WAYS = 20  # turns in a row a lane gives way; then it goes on while the others still wait
WAITING = (DocumentStatus.UPLOADED, DocumentStatus.REINDEXING)


def flag_key(source_id: int) -> str:
    return f"ragsite:source-lane:{source_id}"


def lane_take(source_id: int) -> bool:
    """True when no lane task of the source is queued or running: the caller queues one."""
    return bool(cache.add(flag_key(source_id), timezone.now().isoformat(), FLAG_SECONDS))


@contextmanager
def handed_to(source_id: int, wanted: Callable[[int], None]) -> Iterator[None]:
    """Inside the block, each document a run leaves waiting to be indexed calls `wanted(source_id)`
    (sources.tasks.source_indexing_wanted) instead of getting an indexing task of its own."""
    with indexing_handed_to(lambda document_id: wanted(source_id)):
        yield


def _indexable() -> QuerySet[Document]:
    return (Document.objects.filter(status__in=WAITING, index_attempts__lt=settings.INDEX_MAX_ATTEMPTS)
            .exclude(index_error__startswith=RETRY_NOTE))


def source_waiting(source_id: int) -> QuerySet[Document]:
    """The source's documents waiting to be indexed that a worker could take now."""
    return _indexable().filter(pk__in=SourceItem.objects.filter(source_id=source_id, document__isnull=False)
                               .values("document_id"))


def others_waiting() -> bool:
    """A document no source added (an upload, a re-index) waits to be indexed, and not longer than
    INDEX_LEASE_SECONDS (a document waiting longer lost its task: the indexing recovery queues it again)."""
    fresh = timezone.now() - timedelta(seconds=settings.INDEX_LEASE_SECONDS)
    return (_indexable().filter(updated_at__gte=fresh)
            .exclude(pk__in=SourceItem.objects.filter(document__isnull=False).values("document_id")).exists())


def lane_run(source_id: int, *, give_ways: int, index: Callable[[int], object],
             again: Callable[[int], None]) -> str:
    """One turn of the source's lane: index its waiting documents one by one, giving way as above.
    `index(document_id)` indexes one (retrieval.tasks.index_document); `again(give_ways)` queues the
    next turn at the back of the queue, with the count of turns in a row that gave way."""
    started = time.monotonic()
    tried: set[int] = set()
    indexed = 0
    key = flag_key(source_id)
    while True:
        cache.set(key, timezone.now().isoformat(), FLAG_SECONDS)
        if not tried:  # kept fresh, so the recovery leaves them to the lane
            half_lease = timezone.now() - timedelta(seconds=settings.INDEX_LEASE_SECONDS / 2)
            source_waiting(source_id).filter(updated_at__lt=half_lease).update(updated_at=timezone.now())
        if others_waiting():
            if give_ways < MAX_GIVE_WAYS:
                again(give_ways + 1)
                return f"gave way after {indexed} documents"
        else:
            give_ways = 0
        if time.monotonic() - started >= TURN_SECONDS:
            again(give_ways)
            return f"turn over after {indexed} documents"
        document_id = source_waiting(source_id).exclude(pk__in=tried).order_by("pk").values_list("pk", flat=True).first()
        if document_id is None:
            cache.delete(key)
            # A run may have handed a document over after the look above and found the flag still set.
            if not source_waiting(source_id).exclude(pk__in=tried).exists() or not lane_take(source_id):
                return f"done: {indexed} documents"
            continue
        tried.add(document_id)
        index(document_id)
        indexed += 1
