"""The failure path of an indexing job: what an exception leaves on the document, retries, recovery.

A temporary problem (a busy AI server, a lost database connection) schedules the job again after
RETRY_DELAYS and fails readably after the last attempt; any other error is recorded on the document
(or on the new version that failed, the current one answering on) as a core.reasons reason, and the
worker goes on with the next job. `recover_stale_documents` queues again the documents whose worker
died mid-job (a stale heartbeat) and the waiting ones whose task was lost.
"""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Callable

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from core.dbcheck import transient_database_error
from core.errors import ApplicationError
from core.reasons import in_english, reason
from documents.extraction import ExtractionError
from documents.models import Document, DocumentStatus, DocumentVersion
from documents.signals import index_finished
from documents.versions import version_fail
from retrieval.ai import AiServerError
from retrieval.indexing.time_limit import IndexTimeout

logger = logging.getLogger(__name__)

RETRY_DELAYS = (30, 120)  # seconds before the 2nd and 3rd attempt after a temporary failure
RETRY_NOTE = "Temporary problem"  # how the English index_error starts while a retry is scheduled (_retry_later)

Reschedule = Callable[..., None]  # (document_id, strategy, *, name, next_run): run the task again later


class Superseded(Exception):
    """Another run owns the document now (it was recovered, re-queued or deleted)."""


def job_failed(document: Document, attempt: int, exc: BaseException, *, strategy: str | None,
               reschedule: Reschedule, version: DocumentVersion | None) -> str:
    """Record what the exception `exc` of a claimed job means (call inside the `except`); returns the outcome."""
    if isinstance(exc, Superseded):
        return "skipped: superseded"
    if isinstance(exc, ExtractionError):
        fail(document, attempt, exc.reason, code=exc.code, version=version)
        return f"failed: {exc.code}"
    if isinstance(exc, IndexTimeout):
        fail(document, attempt, _timeout_reason(exc), code="timeout", version=version)
        return "failed: timeout"
    if isinstance(exc, AiServerError):
        return _ai_server_failed(document, attempt, exc, strategy=strategy, reschedule=reschedule, version=version)
    if isinstance(exc, ApplicationError):
        fail(document, attempt, as_is(exc.message), code=exc.code, version=version)
        return f"failed: {exc.code}"
    assert isinstance(exc, Exception)
    problem = transient_database_error(exc)
    if problem is not None:  # lost connection, too many clients, deadlock: over on a new try
        return _database_problem(document, attempt, exc, problem,
                                 retry=(strategy, reschedule), version=version)
    logger.exception("indexing crashed", extra={"document_id": document.pk})
    fail(document, attempt, reason("index.internal", gettext_noop(
        "Unexpected error while indexing (%(kind)s); the details are in the server log."),
        kind=exc.__class__.__name__), code="internal", version=version)
    return "failed: internal"


def _timeout_reason(exc: IndexTimeout) -> dict:
    """Why a job was stopped, in words that do not blame the file: nothing advanced for the silence
    limit, or the job ran past the total limit while advancing."""
    if exc.total:
        total = settings.INDEX_JOB_MAX_SECONDS
        if total < 120:
            return reason("index.timeout", gettext_noop(
                "Indexing was stopped after %(seconds)s seconds, the longest this server lets one document "
                "take, while it was still advancing. Reindex the document when the server is less busy, or "
                "ask the administrator to raise INDEX_JOB_MAX_SECONDS."), seconds=f"{total:g}")
        return reason("index.timeout", gettext_noop(
            "Indexing was stopped after %(minutes)s minutes, the longest this server lets one document "
            "take, while it was still advancing. Reindex the document when the server is less busy, or "
            "ask the administrator to raise INDEX_JOB_MAX_SECONDS."), minutes=f"{total / 60:g}")
    limit = settings.INDEX_TIME_LIMIT
    if limit < 120:
        return reason("index.timeout", gettext_noop(
            "Indexing was stopped: nothing advanced for %(seconds)s seconds (no page read, no part "
            "embedded). The server or its embedding server may have been too busy; reindex the document "
            "to try again."), seconds=f"{limit:g}")
    return reason("index.timeout", gettext_noop(
        "Indexing was stopped: nothing advanced for %(minutes)s minutes (no page read, no part "
        "embedded). The server or its embedding server may have been too busy; reindex the document "
        "to try again."), minutes=f"{limit / 60:g}")


def _ai_server_failed(document: Document, attempt: int, exc: AiServerError, *, strategy: str | None,
                      reschedule: Reschedule, version: DocumentVersion | None) -> str:
    if exc.transient and attempt < settings.INDEX_MAX_ATTEMPTS:
        _retry_later(document, attempt, as_is(str(exc)), strategy, reschedule)
        return "retrying: embedding server unavailable"
    fail(document, attempt, reason("index.ai_server", gettext_noop("%(error)s (after %(attempts)s attempts)"),
                                   error=str(exc), attempts=attempt) if exc.transient else as_is(str(exc)),
         code=exc.code, version=version)
    return f"failed: {exc.code}"


def _reset_connection_if_broken() -> None:
    """After an interrupted job (time limit, lost server) the connection may be unusable."""
    if not connection.in_atomic_block and connection.connection is not None and not connection.is_usable():
        connection.close()


def _owned(document: Document, attempt: int):
    return Document.objects.filter(pk=document.pk, status=DocumentStatus.PROCESSING, index_attempts=attempt)


def as_is(text: str) -> dict:
    """A reason whose text is already written (a server's error, a domain error's message): shown as it is."""
    return reason("index.error", "%(error)s", error=text)


def fail(document: Document, attempt: int, why: dict, *, code: str, version: DocumentVersion | None = None) -> None:
    """Record the failure `why` (a core.reasons reason) on the document, or on its new version."""
    _reset_connection_if_broken()
    with transaction.atomic():
        # A failed new version: the error goes on the version and the current one goes on answering.
        if _owned(document, attempt).select_for_update().exists() and version_fail(
                document=document, version=version, why=why):
            logger.warning("new version failed", extra={"document_id": document.pk, "version": version.number,
                                                         "code": code, "reason": in_english(why)})
            return
    if document.chunk_count:
        why = reason("index.previous_version_kept", gettext_noop("%(reason)s The previous version stays searchable."),
                     reason=why)
    message = in_english(why)
    updated = _owned(document, attempt).update(
        status=DocumentStatus.FAILED, index_error=message, index_error_reason=why, heartbeat_at=None,
        updated_at=timezone.now(), progress_note="",
    )
    if updated:
        logger.warning("indexing failed", extra={"document_id": document.pk, "code": code, "reason": message})
        transaction.on_commit(lambda: announce_finished(document.pk))


def announce_finished(document_id: int) -> None:
    """Tell the layers above (chat: answers that waited for it) that the document's indexing ended."""
    try:
        index_finished.send(sender=Document, document_id=document_id)
    except Exception:  # a listener's failure must not fail the indexing, which has committed
        logger.exception("index_finished listener failed", extra={"document_id": document_id})


def _database_problem(document: Document, attempt: int, exc: Exception, problem: dict, *,
                      retry: tuple[str | None, Reschedule], version: DocumentVersion | None) -> str:
    """A temporary database error: retry like a busy AI server, fail readably after the last attempt.

    The connection may be dead (terminated, server restarted): it is closed so that the next
    statement opens a new one. Nothing was committed — the chunks are written in one transaction.
    """
    logger.warning("database error while indexing", exc_info=exc, extra={"document_id": document.pk,
                                                                          "attempt": attempt})
    if not connection.in_atomic_block:
        connection.close()
    if attempt < settings.INDEX_MAX_ATTEMPTS:
        strategy, reschedule = retry
        _retry_later(document, attempt, reason("index.database_retry", "%(reason)s.", reason=problem), strategy,
                     reschedule)
        return "retrying: database unavailable"
    fail(document, attempt, reason("index.database", gettext_noop(
        "Indexing stopped because %(reason)s (after %(attempts)s attempts). Try re-indexing the document later."),
        reason=problem, attempts=attempt), code="database_unavailable", version=version)
    return "failed: database_unavailable"


def _retry_later(document: Document, attempt: int, why: dict, strategy: str | None,
                 reschedule: Reschedule) -> None:
    _reset_connection_if_broken()
    delay = RETRY_DELAYS[min(attempt - 1, len(RETRY_DELAYS) - 1)]
    waiting = DocumentStatus.REINDEXING if document.chunk_count else DocumentStatus.UPLOADED
    retrying = reason("index.retrying", gettext_noop(
        "Temporary problem, retrying in %(delay)s s (attempt %(attempt)s of %(attempts)s): %(reason)s"),
        delay=delay, attempt=attempt + 1, attempts=settings.INDEX_MAX_ATTEMPTS, reason=why)
    with transaction.atomic():
        updated = _owned(document, attempt).update(
            status=waiting, heartbeat_at=None, updated_at=timezone.now(),
            index_error=in_english(retrying), index_error_reason=retrying,
        )
        if updated:  # the schedule row commits with the status, or neither does
            reschedule(document.pk, strategy, next_run=timezone.now() + timedelta(seconds=delay),
                       name=f"retry indexing {document.pk} #{attempt + 1}")
    logger.warning("indexing will retry", extra={"document_id": document.pk, "attempt": attempt, "delay_s": delay,
                                                 "reason": in_english(why)})


def recover_stale_documents(*, enqueue: Callable[[int], None]) -> int:
    """Queue again documents whose worker died mid-job (stale heartbeat); fail them after too many tries.

    `enqueue(document_id)` queues the indexing after the commit (retrieval.tasks.enqueue_indexing).
    """
    cutoff = timezone.now() - timedelta(seconds=settings.INDEX_LEASE_SECONDS)
    stale = Document.objects.filter(status=DocumentStatus.PROCESSING).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True)
    )
    recovered = 0
    for document in stale:
        base = Document.objects.filter(pk=document.pk, status=DocumentStatus.PROCESSING,
                                       index_attempts=document.index_attempts)
        if document.index_attempts >= settings.INDEX_MAX_ATTEMPTS:
            why = reason("index.interrupted", gettext_noop(
                "Indexing was interrupted %(times)s times (the worker stopped while processing this file); giving up."),
                times=document.index_attempts)
            base.update(status=DocumentStatus.FAILED, heartbeat_at=None, updated_at=timezone.now(),
                        index_error=in_english(why), index_error_reason=why)
            continue
        waiting = DocumentStatus.REINDEXING if document.chunk_count else DocumentStatus.UPLOADED
        with transaction.atomic():
            if base.update(status=waiting, heartbeat_at=None, updated_at=timezone.now()):
                enqueue(document.pk)  # sent when this transaction commits
                recovered += 1
    # Waiting documents whose task was lost (the queue write failed after the upload committed,
    # or the queue was purged): queue them again, at most once per lease period each. A
    # duplicate task is harmless — the claim lets only one of them work.
    waiting = Document.objects.filter(status__in=[DocumentStatus.UPLOADED, DocumentStatus.REINDEXING],
                                      updated_at__lt=cutoff)
    for pk in waiting.values_list("pk", flat=True)[:1000]:
        if Document.objects.filter(pk=pk, updated_at__lt=cutoff).update(updated_at=timezone.now()):
            enqueue(pk)
            recovered += 1
    if recovered:
        logger.warning("recovered interrupted indexing jobs", extra={"count": recovered})
    return recovered
