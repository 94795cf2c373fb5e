"""Background work of sources (django-q2, at least once: a second delivery finds the lease taken or
nothing left to do)."""
from __future__ import annotations

import logging

from sources.models import Source
from sources.sync import SourceBusy, sync_source

logger = logging.getLogger(__name__)


def sync_source_task(source_id: int, trigger: str = "schedule") -> int | None:
    """Sync the source (scheduled or asked for); returns the run's id, None when busy, gone or inactive."""
    source = Source.objects.filter(pk=source_id).only("is_active").first()
    if source is None or (trigger == "schedule" and not source.is_active):
        return None
    try:
        return sync_source(source_id=source_id, trigger=trigger).pk
    except SourceBusy:
        logger.info("source sync skipped: another run holds the lease", extra={"source_id": source_id})
        return None
