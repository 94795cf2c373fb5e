"""Fair share between owners: while other people's documents wait, an owner's further jobs go to the
back of the queue (INDEX_MAX_JOBS_PER_USER)."""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from documents.models import Document, DocumentStatus
from retrieval.indexing.failure import RETRY_NOTE, Reschedule

WAITING = (DocumentStatus.UPLOADED, DocumentStatus.REINDEXING)
MAX_DEFERRALS = 50  # times one job may go to the back of the queue for others


def defer_for_others(document_id: int, strategy: str | None, reschedule: Reschedule) -> bool:
    """Fair share: while other people's documents wait, an owner with INDEX_MAX_JOBS_PER_USER jobs
    running already gets no further worker; the job goes to the back of the queue (at most
    MAX_DEFERRALS times, so a waiting document that is never claimed cannot hold it forever)."""
    from django.core.cache import cache

    limit = settings.INDEX_MAX_JOBS_PER_USER
    owner_id = Document.objects.filter(pk=document_id, status__in=WAITING).values_list("owner_id", flat=True).first()
    if limit <= 0 or owner_id is None:
        return False
    running = Document.objects.filter(owner_id=owner_id, status=DocumentStatus.PROCESSING).exclude(pk=document_id)
    if running.count() < limit:
        return False
    # Others' documents a worker could take now: not those waiting for a retry's schedule (_retry_later).
    others = Document.objects.filter(status__in=WAITING, index_attempts__lt=settings.INDEX_MAX_ATTEMPTS) \
        .exclude(owner_id=owner_id).exclude(index_error__startswith=RETRY_NOTE)
    if not others.exists():
        return False
    key = f"ragsite:index-deferrals:{document_id}"
    deferrals = cache.get(key, 0)
    if deferrals >= MAX_DEFERRALS:
        cache.delete(key)
        return False
    cache.set(key, deferrals + 1, 3600)
    reschedule(document_id, strategy, name=f"index document {document_id} (after others)", next_run=timezone.now())
    return True
