"""The indexing task: file → text → chunks → vectors, committed as one unit.

django-q2 delivers at least once, so the task takes an id, claims the row with a guarded
update (a second delivery finds nothing to claim), does all slow work outside any
transaction, and replaces the document's chunks and vectors in one transaction at the end.
Until that commit the previous chunks (if any) keep answering; on failure nothing partial
remains. A worker that dies mid-job leaves a stale heartbeat; `recover_stale_documents`
(at worker start and every minute) queues such documents again.

Chunking strategies (RetrievalSettings.chunking_strategy): `tokens` and `fixed` embed each chunk's
own text; `late` cuts the same chunks as `tokens` and pools their vectors from the token vectors
of the whole document (retrieval.indexing.late_chunking), or falls back to `tokens` when the server cannot,
with the reason in Document.chunking_note.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

import numpy as np
from django.utils.translation import gettext, gettext_noop
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from documents.chunking import chunk_layout_anchored
from documents.chunking import STRATEGIES, ChunkDraft, build_layout, embed_text_for
from documents.extraction import ExtractionError
from documents.extraction.errors import stored_warning
from documents.extraction import extract
from documents.language import detect_language, text_config_for
from documents.models import Chunk, Document, DocumentStatus, DocumentText, DocumentVersion
from documents.search_vectors import chunk_analysis, search_vectors_write
from documents.signals import index_finished
from documents.storage import copy_to_temp
from documents.titles import context_title, metadata_title, named_after_file, opening_heading
from documents.versions import (document_filenames, version_fail, version_indexed, version_previous_chunks,
                                version_switch, version_to_index)
from core.dbcheck import transient_database_error
from core.reasons import in_english, reason
from core.errors import ApplicationError
from retrieval.ai import AiServerError
from retrieval.ai.clients import embedder_for
from retrieval.indexing.lease import LeaseKeeper, beat_interval
from retrieval.indexing.quotas import quota_check
from retrieval.indexing.late_chunking import late_chunk_embed, late_unavailable_why
from retrieval.indexing.time_limit import IndexTimeout, shield, time_limit
from retrieval.embedding_cache import (cache_key, cache_lookup, cache_scope, cache_store, embed_missing,
                                       embedder_identity)
from retrieval.models import AiServer, ChunkEmbedding
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.telemetry import INDEX_JOBS
from usage.recorder import indexing_recorded
from retrieval.vectors import embedding_model_ensure

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL = 0.5  # seconds between progress writes
RETRY_DELAYS = (30, 120)  # seconds before the 2nd and 3rd attempt after a temporary failure
WAITING = (DocumentStatus.UPLOADED, DocumentStatus.REINDEXING)
MAX_DEFERRALS = 50  # times one job may go to the back of the queue for others
RETRY_NOTE = "Temporary problem"  # how the English index_error starts while a retry is scheduled (_retry_later)


class Superseded(Exception):
    """Another run owns the document now (it was recovered, re-queued or deleted)."""


@dataclass
class Built:
    text: str
    pages: list
    drafts: list[ChunkDraft]
    vectors: np.ndarray
    pages_total: int | None
    empty_pages: list[int]
    warnings: list[str]
    language: str
    server: AiServer
    model_name: str
    dim: int
    strategy: str
    note: dict = field(default_factory=dict)  # why the strategy asked for was not used, a reason (late fell back)
    timings: dict = field(default_factory=dict)
    ocr: dict = field(default_factory=dict)  # pages read by OCR, mean confidence, language
    keys: list = field(default_factory=list)  # each chunk's embeddings-cache key (None: not cached)
    embedded: int = 0  # chunks whose vector the embedder computed in this run
    reused: int = 0  # chunks whose vector came from the embeddings cache
    chunking: dict = field(default_factory=dict)  # the cutter's parameters, kept in the stats for the next version
    kept: int | None = None  # chunks kept from the previous version (None: chunked afresh)
    title: str = ""  # the title the document gives itself (metadata or opening heading), "" if none
    page_labels: dict = field(default_factory=dict)  # PDF: 1-based page -> the label printed on it, where known


Reschedule = Callable[..., None]  # (document_id, strategy, *, name, next_run): run the task again later


def index_document(document_id: int, strategy: str | None = None, *, reschedule: Reschedule) -> str:
    """Index one document. Safe to run twice; returns what happened, for the task log.

    `strategy` overrides the settings' chunking strategy (the evaluation compares strategies).
    `reschedule` queues the task again after a temporary failure: the task
    (retrieval.tasks.index_document) passes itself, so this module never names a task.
    """
    outcome = _index_document(document_id, strategy, reschedule)
    INDEX_JOBS.labels(status=outcome.split(":")[0]).inc()
    return outcome


def max_chunks(rs) -> int:
    """The chunk ceiling of one document: MAX_CHUNKS_PER_DOCUMENT, or the admin's lower one."""
    return min(settings.MAX_CHUNKS_PER_DOCUMENT, rs.max_chunks_per_document)


def _defer_for_others(document_id: int, strategy: str | None, reschedule: Reschedule) -> bool:
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


def _index_document(document_id: int, strategy: str | None, reschedule: Reschedule) -> str:
    if _defer_for_others(document_id, strategy, reschedule):
        return "deferred: the owner has jobs running while others wait"
    document = _claim(document_id)
    if document is None:
        return "skipped: not waiting to be indexed"
    attempt = document.index_attempts
    with LeaseKeeper(document.pk, attempt, interval=beat_interval(settings.INDEX_LEASE_SECONDS)):
        return _index_claimed(document, attempt, strategy, reschedule)


def _index_claimed(document: Document, attempt: int, strategy: str | None, reschedule: Reschedule) -> str:
    document_id = document.pk
    started = time.monotonic()
    version = None
    try:
        # The newest waiting version of the document, else its current one (documents/versions.py).
        version = version_to_index(document=document)
        with time_limit(settings.INDEX_TIME_LIMIT):
            built = _build(document, strategy, version)
        _commit(document, attempt, built, version, started=started)
    except Superseded:
        return "skipped: superseded"
    except ExtractionError as exc:
        _fail(document, attempt, exc.reason, code=exc.code, version=version)
        return f"failed: {exc.code}"
    except IndexTimeout:
        limit = settings.INDEX_TIME_LIMIT
        why = (reason("index.timeout", gettext_noop(
                   "Indexing took longer than the limit of %(seconds)s seconds and was stopped. "
                   "The file may be malformed or unusually complex."), seconds=f"{limit:g}") if limit < 120 else
               reason("index.timeout", gettext_noop(
                   "Indexing took longer than the limit of %(minutes)s minutes and was stopped. "
                   "The file may be malformed or unusually complex."), minutes=f"{limit / 60:g}"))
        _fail(document, attempt, why, code="timeout", version=version)
        return "failed: timeout"
    except AiServerError as exc:
        if exc.transient and attempt < settings.INDEX_MAX_ATTEMPTS:
            _retry_later(document, attempt, _as_is(str(exc)), strategy, reschedule)
            return "retrying: embedding server unavailable"
        _fail(document, attempt, reason("index.ai_server", gettext_noop("%(error)s (after %(attempts)s attempts)"),
                                        error=str(exc), attempts=attempt) if exc.transient else _as_is(str(exc)),
              code=exc.code, version=version)
        return f"failed: {exc.code}"
    except ApplicationError as exc:
        _fail(document, attempt, _as_is(exc.message), code=exc.code, version=version)
        return f"failed: {exc.code}"
    except Exception as exc:  # the worker must go on with the next job
        problem = transient_database_error(exc)
        if problem is not None:  # lost connection, too many clients, deadlock: over on a new try
            return _database_problem(document, attempt, exc, problem, strategy, reschedule, version)
        logger.exception("indexing crashed", extra={"document_id": document_id})
        _fail(document, attempt, reason("index.internal", gettext_noop(
            "Unexpected error while indexing (%(kind)s); the details are in the server log."),
            kind=exc.__class__.__name__), code="internal", version=version)
        return "failed: internal"
    logger.info("document indexed", extra={"document_id": document_id, "chunks": len(built.drafts),
                                            "seconds": round(time.monotonic() - started, 3), **built.timings})
    return f"indexed: {len(built.drafts)} chunks"


# --- claiming and progress -------------------------------------------------------------


def _claim(document_id: int) -> Document | None:
    """Move uploaded/reindexing → processing; None when another delivery got there first."""
    now = timezone.now()
    claimed = Document.objects.filter(
        pk=document_id, status__in=[DocumentStatus.UPLOADED, DocumentStatus.REINDEXING]
    ).update(status=DocumentStatus.PROCESSING, heartbeat_at=now, index_attempts=F("index_attempts") + 1,
             pages_done=0, chunks_total=0, chunks_embedded=0, index_error="", index_error_reason={}, updated_at=now,
             progress_note="")
    if not claimed:
        return None
    return Document.objects.get(pk=document_id)


class _Progress:
    """Writes progress to the document row at most every PROGRESS_INTERVAL seconds (and renews the lease).

    Also the cooperative half of the time limit: every page and every embedding batch passes
    here, so the job stops even when the alarm's exception was swallowed (an exception raised
    inside a finaliser or a library's blanket handler is lost).
    """

    def __init__(self, document: Document, attempt: int, deadline: float | None = None):
        self.document = document
        self.attempt = attempt
        self.deadline = deadline
        self.last = 0.0
        self.pending: dict = {}  # fields a throttled call left unwritten: they go with the next write

    def __call__(self, force: bool = False, **fields) -> None:
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline:
            raise IndexTimeout()
        if not force and now - self.last < PROGRESS_INTERVAL:
            self.pending.update(fields)
            return
        fields, self.pending = {**self.pending, **fields}, {}
        self.last = now
        with shield.hold():
            updated = Document.objects.filter(
                pk=self.document.pk, status=DocumentStatus.PROCESSING, index_attempts=self.attempt
            ).update(heartbeat_at=timezone.now(), **fields)
        if not updated:
            raise Superseded()


# --- the slow part: no transaction open -------------------------------------------------


def _build(document: Document, strategy: str | None = None, version: DocumentVersion | None = None) -> Built:
    with shield.hold():
        rs = retrieval_settings_get()
        # (Re-)indexing always uses the current default; search follows each document's pinned model.
        server = default_embedding_server(rs)
    if server is None:
        raise ApplicationError(gettext("No embedding server is configured; add one in the admin."), code="no_embedding_server")
    limit = settings.INDEX_TIME_LIMIT
    progress = _Progress(document, document.index_attempts, time.monotonic() + limit if limit > 0 else None)
    timings: dict = {}
    t0 = time.monotonic()
    mime_type = version.mime_type if version is not None else document.mime_type
    path = copy_to_temp(document, file=version.file if version is not None else None, mime_type=mime_type)
    try:
        def on_pages(done: int, total: int) -> None:
            progress(pages_done=done, pages_total=total)

        extraction = extract(path, mime_type, on_progress=on_pages, language=document.language,
                             # Written at once: a note comes before a slow step (an OCR page takes seconds),
                             # with the pages read so far, so the row is never a page behind during it.
                             on_status=lambda note: progress(force=True, progress_note=note[:200],
                                                             progress_note_reason=stored_warning(note)))
        if extraction.pages_total is not None:
            progress(force=True, pages_total=extraction.pages_total)
        layout = build_layout(extraction.blocks())
        # The document's own name for itself, for a document still named after its file (in _commit).
        title = metadata_title(path, mime_type) or opening_heading(layout.text, layout.spans)
    finally:
        path.unlink(missing_ok=True)
    timings["extract_s"] = round(time.monotonic() - t0, 3)
    progress(force=True, **({"pages_done": extraction.pages_total} if extraction.pages_total is not None else {}))
    with shield.hold():
        quota_check(document=document, pages=extraction.pages_total)  # before anything is embedded

    t0 = time.monotonic()
    strategy = strategy or rs.chunking_strategy
    if strategy not in STRATEGIES:
        raise ApplicationError(gettext("Unknown chunking strategy '%(strategy)s'; use %(choices)s.") % {"strategy": strategy, "choices": ', '.join(STRATEGIES)},
                               code="unknown_strategy")
    note = late_unavailable_why(server) if strategy == "late" else None
    if note:
        strategy = "tokens"
    size, overlap = chunk_sizes(rs, strategy)
    # Late chunking keeps the `tokens` chunks; only their vectors are made differently.
    cutter = "fixed" if strategy == "fixed" else "tokens"
    chunking = {"strategy": cutter, "size": size, "overlap": overlap, "tokenizer": rs.tokenizer}
    # A new version keeps the current one's unchanged chunks (documents/chunking/anchoring.py); late vectors
    # depend on the whole text, so they gain nothing from it. A first index or a re-index chunks as always.
    with shield.hold():
        previous = version_previous_chunks(document=document, version=version, chunking=chunking) \
            if strategy != "late" else None
    drafts, kept = chunk_layout_anchored(layout, previous, strategy=cutter, size=size, overlap=overlap,
                                         encoding=rs.tokenizer, max_chunks=max_chunks(rs))
    page_labels = dict(getattr(extraction, "page_labels", None) or {})
    contextualise(drafts, title=context_title(effective_title(document, title), document_filenames(document)),
                  page_labels=page_labels)
    timings["chunk_s"] = round(time.monotonic() - t0, 3)
    language = document.language or detect_language(layout.text)
    progress(force=True, chunks_total=len(drafts), chunks_embedded=0)

    t0 = time.monotonic()
    client = embedder_for(server, batch_size=rs.embed_batch_size)
    keys: list[str | None] = [None] * len(drafts)
    if strategy == "late" and drafts:
        # Late-chunked vectors depend on the whole document: never cached (retrieval.embedding_cache).
        vectors, facts = late_chunk_embed(server, client, layout.text, drafts,
                                          progress=lambda done: progress(chunks_embedded=done))
        progress(force=True, chunks_embedded=len(drafts))
        timings.update(facts)
        embedded, reused = len(drafts), 0
    else:
        dim = server.embedding_dim or client.dim
        identity = embedder_identity(kind=server.kind, base_url=server.base_url, model=client.model, dim=dim)
        scope = cache_scope(owner_id=document.owner_id, collection_id=document.collection_id)
        text_keys = [cache_key(scope=scope, identity=identity, text=d.embed_text) for d in drafts]
        with shield.hold():
            cached = {k: v for k, v in cache_lookup(text_keys).items() if v.shape == (dim,)}
        vectors, embedded = embed_missing(client, [d.embed_text for d in drafts], rs.embed_batch_size, progress,
                                          keys=text_keys, cached=cached)
        keys = list(text_keys)
        reused = len(drafts) - embedded
    timings["embed_s"] = round(time.monotonic() - t0, 3)
    return Built(
        text=layout.text, pages=[list(p) for p in layout.pages], drafts=drafts, vectors=vectors,
        pages_total=extraction.pages_total, empty_pages=list(extraction.empty_pages),
        warnings=list(extraction.warnings), language=language, server=server,
        model_name=client.model, dim=int(vectors.shape[1]) if len(vectors) else client.dim,
        strategy=strategy, note=note or {}, timings=timings, ocr=dict(extraction.ocr),
        keys=keys, embedded=embedded, reused=reused, chunking=chunking, kept=kept, title=title,
        page_labels=page_labels,
    )


def effective_title(document: Document, own_title: str) -> str:
    """The title the document will carry once indexed: its own (metadata, opening heading) when its
    current one was made from the file name, else the one someone chose (as _commit decides)."""
    if own_title and named_after_file(document.title, document.original_filename):
        return own_title
    return document.title


def contextualise(drafts: list[ChunkDraft], *, title: str, page_labels: dict) -> None:
    """Give each draft the embedded text of `chunk_context`: title, heading path, page label, table caption
    and header before its content (the content itself, shown and cited, is unchanged)."""
    for draft in drafts:
        draft.embed_text = embed_text_for(
            draft.content, draft.heading_path, draft.metadata.get("table_header"), title=title,
            page_label=page_labels.get(draft.page_number, "") if draft.page_number is not None else "",
            table_caption=draft.metadata.get("table_caption"))


def chunk_sizes(rs, strategy: str) -> tuple[int, int]:
    """The (size, overlap) a strategy chunks with: characters for `fixed`, tokens otherwise."""
    if strategy == "fixed":
        return rs.fixed_chunk_size, rs.fixed_chunk_overlap
    return rs.chunk_size, rs.chunk_overlap


# --- the commit: one transaction ----------------------------------------------------------


def _chunk_metadata(draft: ChunkDraft, page_labels: dict) -> dict:
    """A chunk's metadata: the cutter's, its context prefix and the label printed on its page (`page_label`,
    PDFs whose pages carry one; without it citations name the page's index)."""
    metadata = dict(draft.metadata)
    if _context_prefix(draft):
        metadata["context"] = _context_prefix(draft)
    label = page_labels.get(draft.page_number) if draft.page_number is not None else None
    if label:
        metadata["page_label"] = label
    return metadata


def _commit(document: Document, attempt: int, built: Built, version: DocumentVersion | None = None, *,
            started: float | None = None) -> None:
    t0 = time.monotonic()
    model = embedding_model_ensure(name=built.model_name, dim=built.dim)
    config = text_config_for(built.language)
    owner_id = document.owner_id
    # Each chunk's language (a mixed document's chunks may differ), segmentation and stop words,
    # computed before the transaction: Thai or Japanese segmentation takes a moment.
    analyses = [chunk_analysis(content=d.content, context=_context_prefix(d), document_language=built.language)
                for d in built.drafts]
    with transaction.atomic():
        locked = Document.objects.select_for_update().filter(pk=document.pk).first()
        if locked is None or locked.status != DocumentStatus.PROCESSING or locked.index_attempts != attempt:
            raise Superseded()
        # A new version: the current one keeps its text and chunk layout for its citations (before the delete).
        switch = version_switch(document=locked, version=version)
        with connection.cursor() as cursor:
            # Vectors go with their chunks (ON DELETE CASCADE in the database).
            cursor.execute("DELETE FROM documents_chunk WHERE document_id = %s", [document.pk])
        DocumentText.objects.update_or_create(document=locked, defaults={"text": built.text, "pages": built.pages})
        chunks = Chunk.objects.bulk_create(
            [
                Chunk(document=locked, owner_id=owner_id, collection_id=locked.collection_id,
                      is_active=locked.is_active, chunk_index=d.index, content=d.content,
                      start_offset=d.start, end_offset=d.end, page_number=d.page_number,
                      heading_path=list(d.heading_path), token_count=d.token_count,
                      metadata=_chunk_metadata(d, built.page_labels), text_config=analysis.config)
                for d, analysis in zip(built.drafts, analyses)
            ],
            batch_size=1000,
        )
        search_vectors_write(chunk_ids=[c.pk for c in chunks], analyses=analyses)
        keys = built.keys or [None] * len(chunks)
        if locked.collection_id != document.collection_id:
            keys = [None] * len(chunks)  # moved meanwhile: its keys name the old scope
        ChunkEmbedding.objects.bulk_create(
            [ChunkEmbedding(chunk=c, model=model, document_id=document.pk, owner_id=owner_id,
                            collection_id=locked.collection_id, is_active=locked.is_active, embedding=v,
                            content_hash=key)
             for c, v, key in zip(chunks, built.vectors, keys)],
            batch_size=1000,
        )
        # After the chunk vectors: deleting the old chunks above released the keys nobody held.
        cache_store(model_id=model.pk, keys=keys, vectors=built.vectors)
        warnings = [stored_warning(w) for w in built.warnings]  # reasons where the wing wrote them
        built.timings["commit_s"] = round(time.monotonic() - t0, 3)
        stats = _stats(built)
        # A title someone chose is kept; one made from the file name gives way to the document's own.
        named = {"title": built.title} if built.title and named_after_file(locked.title, locked.original_filename) else {}
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.INDEXED, chunk_count=len(chunks), indexed_at=timezone.now(),
            embedding_server_id=built.server.pk if built.server else None, embedding_model=built.model_name, embedding_dim=built.dim,
            chunking_strategy=built.strategy, chunking_note=in_english(built.note), chunking_note_reason=built.note,
            pages_total=built.pages_total,
            pages_done=built.pages_total or 0, chunks_total=len(chunks), chunks_embedded=len(chunks),
            empty_pages=built.empty_pages, index_warnings=warnings, index_error="", index_error_reason={}, heartbeat_at=None,
            language=built.language, text_config=config, updated_at=timezone.now(),
            ocr=built.ocr, progress_note="", index_stats=stats, **switch, **named,
        )
        version_indexed(version=version, chunk_count=len(chunks), stats=stats)
        # Usage (usage/recorder.py): the job's time and pages, counted with the index they made.
        indexing_recorded(user_id=locked.owner_id, collection_id=locked.collection_id,
                          seconds=time.monotonic() - (started if started is not None else t0), pages=built.pages_total)
        transaction.on_commit(lambda: _announce_finished(document.pk))
    built.timings["commit_s"] = round(time.monotonic() - t0, 3)  # the whole transaction, for the benchmark


def _stats(built: Built) -> dict:
    """The document's indexing stats: where vectors came from and the seconds per stage."""
    seconds = {stage: built.timings.get(f"{stage}_s") for stage in ("extract", "chunk", "embed", "commit")}
    seconds["total"] = round(sum(v for v in seconds.values() if v is not None), 3)
    stats = {"embedded_chunks": built.embedded, "reused_chunks": built.reused, "seconds": seconds,
             "chunking": built.chunking}
    if built.kept is not None:
        stats["kept_chunks"] = built.kept  # anchored on the previous version's chunks
    if built.page_labels:  # PDF: the label printed on each page, for the viewer ({"2": "ii"})
        stats["page_labels"] = {str(page): label for page, label in sorted(built.page_labels.items())}
    return stats


def _context_prefix(draft: ChunkDraft) -> str:
    """The heading path / table header that embed_text adds in front of the content."""
    if draft.embed_text.endswith(draft.content) and len(draft.embed_text) > len(draft.content):
        return draft.embed_text[: len(draft.embed_text) - len(draft.content)].strip()
    return ""


# --- failure and recovery --------------------------------------------------------------------


def _reset_connection_if_broken() -> None:
    """After an interrupted job (time limit, lost server) the connection may be unusable."""
    if not connection.in_atomic_block and connection.connection is not None and not connection.is_usable():
        connection.close()


def _owned(document: Document, attempt: int):
    return Document.objects.filter(pk=document.pk, status=DocumentStatus.PROCESSING, index_attempts=attempt)


def _as_is(text: str) -> dict:
    """A reason whose text is already written (a server's error, a domain error's message): shown as it is."""
    return reason("index.error", "%(error)s", error=text)


def _fail(document: Document, attempt: int, why: dict, *, code: str, version: DocumentVersion | None = None) -> None:
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
        transaction.on_commit(lambda: _announce_finished(document.pk))


def _announce_finished(document_id: int) -> None:
    """Tell the layers above (chat: answers that waited for it) that the document's indexing ended."""
    try:
        index_finished.send(sender=Document, document_id=document_id)
    except Exception:  # a listener's failure must not fail the indexing, which has committed
        logger.exception("index_finished listener failed", extra={"document_id": document_id})


def _database_problem(document: Document, attempt: int, exc: Exception, problem: dict, strategy: str | None,
                      reschedule: Reschedule, version: DocumentVersion | None) -> str:
    """A temporary database error: retry like a busy AI server, fail readably after the last attempt.

    The connection may be dead (terminated, server restarted): it is closed so that the next
    statement opens a new one. Nothing was committed — the chunks are written in one transaction.
    """
    logger.warning("database error while indexing", exc_info=exc, extra={"document_id": document.pk,
                                                                          "attempt": attempt})
    if not connection.in_atomic_block:
        connection.close()
    if attempt < settings.INDEX_MAX_ATTEMPTS:
        _retry_later(document, attempt, reason("index.database_retry", "%(reason)s.", reason=problem), strategy,
                     reschedule)
        return "retrying: database unavailable"
    _fail(document, attempt, reason("index.database", gettext_noop(
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
