"""The indexing task: file → text → chunks → vectors, committed as one unit.

django-q2 delivers at least once, so the task takes an id, claims the row with a guarded
update (a second delivery finds nothing to claim), does all slow work outside any
transaction (`_build`: extract → chunk → embed), and replaces the document's chunks and vectors in
one transaction at the end (retrieval.indexing.commit). Until that commit the previous chunks (if any)
keep answering; on failure nothing partial remains, and what the failure means — a retry, a reason
on the document — is decided in retrieval.indexing.failure. A worker that dies mid-job leaves a stale
heartbeat; `recover_stale_documents` (at worker start and every minute) queues such documents again.

Chunking strategies (RetrievalSettings.chunking_strategy): `tokens` and `fixed` embed each chunk's
own text; `late` cuts the same chunks as `tokens` and pools their vectors from the token vectors
of the whole document (retrieval.indexing.late_chunking), or falls back to `tokens` when the server cannot,
with the reason in Document.chunking_note.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from core.errors import ApplicationError
from documents.chunking import STRATEGIES, ChunkDraft, build_layout, chunk_layout_anchored, embed_text_for
from documents.extraction import extract
from documents.extraction.errors import stored_warning
from documents.language import detect_language
from documents.models import Document, DocumentStatus, DocumentVersion
from documents.storage import copy_to_temp
from documents.titles import context_title, metadata_title, named_after_file, opening_heading
from documents.versions import document_filenames, version_previous_chunks, version_to_index
from retrieval.ai.clients import embedder_for
from retrieval.embedding_cache import cache_key, cache_lookup, cache_scope, embed_missing, embedder_identity
from retrieval.indexing.commit import Built, commit_built
from retrieval.indexing.failure import (RETRY_NOTE, Reschedule, Superseded, job_failed,
                                        recover_stale_documents)
from retrieval.indexing.late_chunking import late_chunk_embed, late_unavailable_why
from retrieval.indexing.lease import LeaseKeeper, beat_interval
from retrieval.indexing.quotas import quota_check
from retrieval.indexing.time_limit import IndexTimeout, progressed, shield, time_limit
from retrieval.models import AiServer
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.telemetry import INDEX_JOBS

__all__ = ["Built", "index_document", "recover_stale_documents", "max_chunks", "effective_title",
           "contextualise", "chunk_sizes"]

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL = 0.5  # seconds between progress writes
WAITING = (DocumentStatus.UPLOADED, DocumentStatus.REINDEXING)
MAX_DEFERRALS = 50  # times one job may go to the back of the queue for others


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
    started = time.monotonic()
    version = None
    try:
        # The newest waiting version of the document, else its current one (documents/versions.py).
        version = version_to_index(document=document)
        with time_limit(settings.INDEX_TIME_LIMIT, total=settings.INDEX_JOB_MAX_SECONDS):
            built = _build(document, strategy, version)
        commit_built(document, attempt, built, version, started=started)
    except (Exception, IndexTimeout) as exc:  # the worker must go on with the next job (retrieval.indexing.failure)
        return job_failed(document, attempt, exc, strategy=strategy, reschedule=reschedule, version=version)
    logger.info("document indexed", extra={"document_id": document.pk, "chunks": len(built.drafts),
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

    Every page and every embedding batch passes here: each call is progress, which starts the
    silence limit again (retrieval.indexing.time_limit), and the cooperative half of the limits, so
    the job stops even when the alarm's exception was swallowed (an exception raised inside a
    finaliser or a library's blanket handler is lost).
    """

    def __init__(self, document: Document, attempt: int):
        self.document = document
        self.attempt = attempt
        self.last = 0.0

    def __call__(self, force: bool = False, **fields) -> None:
        progressed()
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_INTERVAL:
            return
        self.last = now
        with shield.hold():
            updated = Document.objects.filter(
                pk=self.document.pk, status=DocumentStatus.PROCESSING, index_attempts=self.attempt
            ).update(heartbeat_at=timezone.now(), **fields)
        if not updated:
            raise Superseded()


# --- the slow part: no transaction open -------------------------------------------------


@dataclass
class _Extracted:
    """The extract stage's result: the extraction, its layout and the title the document gives itself."""
    extraction: Any
    layout: Any
    title: str


@dataclass
class _Chunked:
    """The chunk stage's result: the drafts with their embedded text, and how they were cut."""
    drafts: list[ChunkDraft]
    kept: int | None
    strategy: str  # the strategy used (late falls back to tokens when the server cannot)
    note: dict | None  # why the strategy asked for was not used
    chunking: dict
    page_labels: dict


@dataclass
class _Embedded:
    """The embed stage's result: one vector per draft, their cache keys and where they came from."""
    vectors: np.ndarray
    keys: list
    embedded: int
    reused: int
    model: str
    dim: int
    facts: dict = field(default_factory=dict)  # late chunking's own timings


def _build(document: Document, strategy: str | None = None, version: DocumentVersion | None = None) -> Built:
    """extract → chunk → embed, outside any transaction; what _commit_built then writes in one."""
    with shield.hold():
        rs = retrieval_settings_get()
        # (Re-)indexing always uses the current default; search follows each document's pinned model.
        server = default_embedding_server(rs)
    if server is None:
        raise ApplicationError(gettext("No embedding server is configured; add one in the admin."), code="no_embedding_server")
    progress = _Progress(document, document.index_attempts)
    timings: dict = {}
    t0 = time.monotonic()
    extracted = _extract(document, version, progress)
    extraction, layout = extracted.extraction, extracted.layout
    timings["extract_s"] = round(time.monotonic() - t0, 3)
    progress(force=True, **({"pages_done": extraction.pages_total} if extraction.pages_total is not None else {}))
    with shield.hold():
        quota_check(document=document, pages=extraction.pages_total)  # before anything is embedded

    t0 = time.monotonic()
    chunked = _chunk(document, version, extracted, rs=rs, strategy=strategy or rs.chunking_strategy,
                     server=server)
    timings["chunk_s"] = round(time.monotonic() - t0, 3)
    language = document.language or detect_language(layout.text)
    progress(force=True, chunks_total=len(chunked.drafts), chunks_embedded=0)

    t0 = time.monotonic()
    vectors = _embed(document, chunked, layout.text, rs=rs, server=server, progress=progress)
    timings.update(vectors.facts)
    timings["embed_s"] = round(time.monotonic() - t0, 3)
    return Built(
        text=layout.text, pages=[list(p) for p in layout.pages], drafts=chunked.drafts, vectors=vectors.vectors,
        pages_total=extraction.pages_total, empty_pages=list(extraction.empty_pages),
        warnings=list(extraction.warnings), language=language, server=server,
        model_name=vectors.model, dim=vectors.dim, strategy=chunked.strategy, note=chunked.note or {},
        timings=timings, ocr=dict(extraction.ocr), keys=vectors.keys, embedded=vectors.embedded,
        reused=vectors.reused, chunking=chunked.chunking, kept=chunked.kept, title=extracted.title,
        page_labels=chunked.page_labels,
    )


def _extract(document: Document, version: DocumentVersion | None, progress: _Progress) -> _Extracted:
    """The file (the version's, else the document's) → text blocks → layout, with the document's own title."""
    mime_type = version.mime_type if version is not None else document.mime_type
    path = copy_to_temp(document, file=version.file if version is not None else None, mime_type=mime_type)
    try:
        def on_pages(done: int, total: int) -> None:
            progress(pages_done=done, pages_total=total)

        extraction = extract(path, mime_type, on_progress=on_pages, language=document.language,
                             on_status=lambda note: progress(progress_note=note[:200],
                                                             progress_note_reason=stored_warning(note)))
        if extraction.pages_total is not None:
            progress(force=True, pages_total=extraction.pages_total)
        layout = build_layout(extraction.blocks())
        # The document's own name for itself, for a document still named after its file (in commit_built).
        title = metadata_title(path, mime_type) or opening_heading(layout.text, layout.spans)
    finally:
        path.unlink(missing_ok=True)
    return _Extracted(extraction=extraction, layout=layout, title=title)


def _chunk(document: Document, version: DocumentVersion | None, extracted: _Extracted, *, rs, strategy: str,
           server: AiServer) -> _Chunked:
    """The layout → chunk drafts by the strategy, a new version anchored on the current one's chunks."""
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
    drafts, kept = chunk_layout_anchored(extracted.layout, previous, strategy=cutter, size=size, overlap=overlap,
                                         encoding=rs.tokenizer, max_chunks=max_chunks(rs))
    page_labels = dict(getattr(extracted.extraction, "page_labels", None) or {})
    contextualise(drafts, title=context_title(effective_title(document, extracted.title),
                                              document_filenames(document)), page_labels=page_labels)
    return _Chunked(drafts=drafts, kept=kept, strategy=strategy, note=note, chunking=chunking,
                    page_labels=page_labels)


def _embed(document: Document, chunked: _Chunked, text: str, *, rs, server: AiServer,
           progress: _Progress) -> _Embedded:
    """One vector per draft: late-chunked from the whole text, else from the embeddings cache or the server."""
    drafts = chunked.drafts
    client = embedder_for(server, batch_size=rs.embed_batch_size)
    if chunked.strategy == "late" and drafts:
        # Late-chunked vectors depend on the whole document: never cached (retrieval.embedding_cache).
        vectors, facts = late_chunk_embed(server, client, text, drafts,
                                          progress=lambda done: progress(chunks_embedded=done))
        progress(force=True, chunks_embedded=len(drafts))
        return _Embedded(vectors=vectors, keys=[None] * len(drafts), embedded=len(drafts), reused=0,
                         model=client.model, dim=_dim(vectors, client), facts=facts)
    dim = server.embedding_dim or client.dim
    identity = embedder_identity(kind=server.kind, base_url=server.base_url, model=client.model, dim=dim)
    scope = cache_scope(owner_id=document.owner_id, collection_id=document.collection_id)
    text_keys = [cache_key(scope=scope, identity=identity, text=d.embed_text) for d in drafts]
    with shield.hold():
        cached = {k: v for k, v in cache_lookup(text_keys).items() if v.shape == (dim,)}
    vectors, embedded = embed_missing(client, [d.embed_text for d in drafts], rs.embed_batch_size, progress,
                                      keys=text_keys, cached=cached)
    return _Embedded(vectors=vectors, keys=list(text_keys), embedded=embedded, reused=len(drafts) - embedded,
                     model=client.model, dim=_dim(vectors, client))


def _dim(vectors: np.ndarray, client) -> int:
    return int(vectors.shape[1]) if len(vectors) else client.dim


def effective_title(document: Document, own_title: str) -> str:
    """The title the document will carry once indexed: its own (metadata, opening heading) when its
    current one was made from the file name, else the one someone chose (as commit_built decides)."""
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

