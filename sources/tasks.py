"""Background work of sources (django-q2, at least once: a second delivery finds the lease taken or
nothing left to do)."""
from __future__ import annotations

import logging

from django.conf import settings

from core.tasks import queue, run_niced
from retrieval.tasks import index_document
from sources import lane
from sources.models import Source
from sources.sync import SourceBusy, sync_source

logger = logging.getLogger(__name__)


def sync_source_task(source_id: int, trigger: str = "schedule") -> int | None:
    """Sync the source (scheduled or asked for); returns the run's id, None when busy, gone or inactive.

    The run lists, downloads and stores files in a thread of its own whose niceness is raised by
    settings.SOURCES_NICE (Linux: niceness is per thread), so the indexing of a person's upload on the
    other worker comes first; the thread ends with the run and the worker's own priority is never changed.
    What the run adds is indexed in the source's lane (`index_source_documents`)."""
    source = Source.objects.filter(pk=source_id).only("is_active").first()
    if source is None or (trigger == "schedule" and not source.is_active):
        return None
    try:
        return run_niced(lambda: sync_source(source_id=source_id, trigger=trigger,
                                             index_lane=source_indexing_wanted).pk,
                         nice=settings.SOURCES_NICE, name=f"sync-source-{source_id}", what="source syncs")
    except SourceBusy:
        logger.info("source sync skipped: another run holds the lease", extra={"source_id": source_id})
        return None


def source_indexing_wanted(source_id: int) -> None:
    """A run handed the source's lane a document: queue the lane's task unless one is queued or running."""
    if lane.lane_take(source_id):
        queue(index_source_documents, source_id, 0, task_name=f"index documents of source {source_id}",
              group="indexing")


def index_source_documents(source_id: int, give_ways: int = 0) -> str:
    """One turn of the source's indexing lane (sources/lane.py)."""
    def again(count: int) -> None:
        queue(index_source_documents, source_id, count, task_name=f"index documents of source {source_id}",
              group="indexing")

    return lane.lane_run(source_id, give_ways=give_ways, index=index_document, again=again)
