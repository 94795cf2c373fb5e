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
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from core.errors import ApplicationError
from core.memory import malloc_arenas_limit
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
from retrieval.indexing.failure import Reschedule, Superseded, job_failed, recover_stale_documents
from retrieval.indexing.fairness import defer_for_others
from retrieval.indexing.late_chunking import late_chunk_embed, late_unavailable_why
from retrieval.indexing.lease import LeaseKeeper, beat_interval
from retrieval.indexing.lookahead import Lookahead
from retrieval.indexing.quotas import quota_check
from retrieval.indexing.time_limit import IndexTimeout, progressed, shield, time_limit
from retrieval.models import AiServer
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.telemetry import INDEX_JOBS

__all__ = ["Built", "index_document", "recover_stale_documents", "max_chunks", "effective_title",
           "contextualise", "chunk_sizes"]

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL = 0.5  # seconds between progress writes
# One malloc arena for the worker's threads (the look-ahead's, ONNX Runtime's): memory one thread freed
# serves the others; 11 MB less at a 1,000-page PDF's peak (bench/ingest.py), no slower.
MALLOC_ARENAS = 1


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


def _index_document(document_id: int, strategy: str | None, reschedule: Reschedule) -> str:
    if defer_for_others(document_id, strategy, reschedule):
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
        malloc_arenas_limit(MALLOC_ARENAS)
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
        self.pending: dict = {}  # fields a throttled call left unwritten: they go with the next write

    def __call__(self, force: bool = False, **fields) -> None:
        progressed()
        now = time.monotonic()
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


@dataclass
class _Extracted:
    """The extract stage's result: the extraction, its layout and the title the document gives itself."""
    extraction: Any
    layout: Any
    title: str


@dataclass
class _Cutting:
    """How the chunk stage will cut, settled before extraction (the look-ahead cuts the same way)."""
    strategy: str  # the strategy used (late falls back to tokens when the server cannot)
    note: dict | None  # why the strategy asked for was not used
    chunking: dict  # the cutter's strategy, size, overlap and tokenizer
    previous: Any  # a new version's anchors (documents/chunking/anchoring.py), else None
    filenames: list[str]


@dataclass
class _Chunked:
    """The chunk stage's result: the drafts with their embedded text, and how they were cut."""
    drafts: list[ChunkDraft]
    kept: int | None
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
    facts: dict = field(default_factory=dict)  # late chunking's own timings, the look-ahead's


def _build(document: Document, strategy: str | None = None, version: DocumentVersion | None = None) -> Built:
    """extract → chunk → embed, outside any transaction; what _commit_built then writes in one. A paged
    document's chunks are embedded while the next pages are read (retrieval.indexing.lookahead)."""
    with shield.hold():
        rs = retrieval_settings_get()
        # (Re-)indexing always uses the current default; search follows each document's pinned model.
        server = default_embedding_server(rs)
    if server is None:
        raise ApplicationError(gettext("No embedding server is configured; add one in the admin."), code="no_embedding_server")
    progress = _Progress(document, document.index_attempts)
    client = embedder_for(server, batch_size=rs.embed_batch_size)
    cutting = _cutting(document, version, rs=rs, strategy=strategy or rs.chunking_strategy, server=server)
    timings: dict = {}
    with _lookahead(document, cutting, rs=rs, server=server, client=client) as ahead:
        t0 = time.monotonic()
        extracted = _extract(document, version, progress, ahead)
        extraction, layout = extracted.extraction, extracted.layout
        timings["extract_s"] = round(time.monotonic() - t0, 3)
        progress(force=True, **({"pages_done": extraction.pages_total} if extraction.pages_total is not None else {}))
        with shield.hold():
            quota_check(document=document, pages=extraction.pages_total)  # before anything is embedded

        t0 = time.monotonic()
        chunked = _chunk(document, extracted, cutting, rs=rs)
        timings["chunk_s"] = round(time.monotonic() - t0, 3)
        language = document.language or detect_language(layout.text)
        progress(force=True, chunks_total=len(chunked.drafts), chunks_embedded=0)

        t0 = time.monotonic()
        vectors = _embed(document, chunked, cutting, layout.text, rs=rs, server=server, client=client,
                         progress=progress, ahead=ahead)
    timings.update(vectors.facts)
    timings["embed_s"] = round(time.monotonic() - t0, 3)
    return Built(
        text=layout.text, pages=[list(p) for p in layout.pages], drafts=chunked.drafts, vectors=vectors.vectors,
        pages_total=extraction.pages_total, empty_pages=list(extraction.empty_pages),
        warnings=list(extraction.warnings), language=language, server=server,
        model_name=vectors.model, dim=vectors.dim, strategy=cutting.strategy, note=cutting.note or {},
        timings=timings, ocr=dict(extraction.ocr), keys=vectors.keys, embedded=vectors.embedded,
        reused=vectors.reused, chunking=cutting.chunking, kept=chunked.kept, title=extracted.title,
        page_labels=chunked.page_labels,
    )


def _extract(document: Document, version: DocumentVersion | None, progress: _Progress,
             ahead: Lookahead | None) -> _Extracted:
    """The file (the version's, else the document's) → text blocks → layout, with the document's own title."""
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
        own_title = metadata_title(path, mime_type)
        blocks = extraction.blocks()
        if ahead is not None:
            blocks = ahead.watch(blocks, extraction.labels_so_far, own_title)
        layout = build_layout(blocks)
        # The document's own name for itself, for a document still named after its file (in commit_built).
        title = own_title or opening_heading(layout.text, layout.spans)
    finally:
        path.unlink(missing_ok=True)
    return _Extracted(extraction=extraction, layout=layout, title=title)


def _cutting(document: Document, version: DocumentVersion | None, *, rs, strategy: str,
             server: AiServer) -> _Cutting:
    """The strategy (late falls back to tokens when the server cannot), sizes and a new version's anchors."""
    if strategy not in STRATEGIES:
        raise ApplicationError(gettext("Unknown chunking strategy '%(strategy)s'; use %(choices)s.") % {"strategy": strategy, "choices": ', '.join(STRATEGIES)},
                               code="unknown_strategy")
    note = late_unavailable_why(server) if strategy == "late" else None
    if note:
        strategy = "tokens"
    size, overlap = chunk_sizes(rs, strategy)
    # Late chunking keeps the `tokens` chunks; only their vectors are made differently.
    chunking = {"strategy": "fixed" if strategy == "fixed" else "tokens", "size": size, "overlap": overlap,
                "tokenizer": rs.tokenizer}
    # A new version keeps the current one's unchanged chunks (documents/chunking/anchoring.py); late vectors
    # depend on the whole text, so they gain nothing from it. A first index or a re-index chunks as always.
    with shield.hold():
        previous = version_previous_chunks(document=document, version=version, chunking=chunking) \
            if strategy != "late" else None
        filenames = document_filenames(document)
    return _Cutting(strategy=strategy, note=note, chunking=chunking, previous=previous, filenames=filenames)


def _chunk(document: Document, extracted: _Extracted, cutting: _Cutting, *, rs) -> _Chunked:
    """The layout → chunk drafts by the strategy, a new version anchored on the current one's chunks."""
    page_labels = dict(getattr(extracted.extraction, "page_labels", None) or {})
    drafts, kept = _cut(document, extracted.layout, cutting, rs=rs, own_title=extracted.title,
                        page_labels=page_labels)
    return _Chunked(drafts=drafts, kept=kept, page_labels=page_labels)


def _cut(document: Document, layout, cutting: _Cutting, *, rs, own_title: str,
         page_labels: dict) -> tuple[list[ChunkDraft], int | None]:
    """Cut `layout` as the chunk stage does, each draft with its embedded text (the look-ahead's too)."""
    chunking = cutting.chunking
    drafts, kept = chunk_layout_anchored(layout, cutting.previous, strategy=chunking["strategy"],
                                         size=chunking["size"], overlap=chunking["overlap"],
                                         encoding=rs.tokenizer, max_chunks=max_chunks(rs))
    contextualise(drafts, title=context_title(effective_title(document, own_title), cutting.filenames),
                  page_labels=page_labels)
    return drafts, kept


def _lookahead(document: Document, cutting: _Cutting, *, rs, server: AiServer, client) -> Any:
    """A Lookahead for this job, or a no-op context (late chunking, a new version's anchored cut, or
    INDEX_LOOKAHEAD_BATCHES 0)."""
    if settings.INDEX_LOOKAHEAD_BATCHES <= 0 or cutting.strategy == "late" or cutting.previous is not None:
        return nullcontext()

    def cut(layout, labels: dict, own_title: str) -> list[ChunkDraft]:
        return _cut(document, layout, cutting, rs=rs, page_labels=labels,
                    own_title=own_title or opening_heading(layout.text, layout.spans))[0]

    return Lookahead(client, cut=cut, key=_keys(document, server, client), batch=rs.embed_batch_size,
                     depth=settings.INDEX_LOOKAHEAD_BATCHES)


def _keys(document: Document, server: AiServer, client):
    """embed text → its embeddings cache key for this document and server."""
    identity = embedder_identity(kind=server.kind, base_url=server.base_url, model=client.model,
                                 dim=server.embedding_dim or client.dim)
    scope = cache_scope(owner_id=document.owner_id, collection_id=document.collection_id)
    return lambda text: cache_key(scope=scope, identity=identity, text=text)


def _embed(document: Document, chunked: _Chunked, cutting: _Cutting, text: str, *, rs, server: AiServer,
           client, progress: _Progress, ahead: Lookahead | None) -> _Embedded:
    """One vector per draft: late-chunked from the whole text, else from the look-ahead, the embeddings
    cache or the server."""
    drafts = chunked.drafts
    if cutting.strategy == "late" and drafts:
        # Late-chunked vectors depend on the whole document: never cached (retrieval.embedding_cache).
        vectors, facts = late_chunk_embed(server, client, text, drafts,
                                          progress=lambda done: progress(chunks_embedded=done))
        progress(force=True, chunks_embedded=len(drafts))
        return _Embedded(vectors=vectors, keys=[None] * len(drafts), embedded=len(drafts), reused=0,
                         model=client.model, dim=_dim(vectors, client), facts=facts)
    dim = server.embedding_dim or client.dim
    keyed = _keys(document, server, client)
    text_keys = [keyed(d.embed_text) for d in drafts]
    with shield.hold():
        cached = {k: v for k, v in cache_lookup(text_keys).items() if v.shape == (dim,)}
    ahead_vectors = ahead.take([k for k in text_keys if k not in cached], dim=dim, tick=lambda n: progress(
        chunks_embedded=len(cached) + n)) if ahead is not None else {}  # its queued batches finish first
    vectors, embedded = embed_missing(client, [d.embed_text for d in drafts], rs.embed_batch_size, progress,
                                      keys=text_keys, cached={**ahead_vectors, **cached})
    embedded += sum(1 for k in text_keys if k in ahead_vectors)
    facts = {**ahead.facts, "lookahead_used": len(ahead_vectors)} if ahead is not None else {}
    return _Embedded(vectors=vectors, keys=list(text_keys), embedded=embedded, reused=len(drafts) - embedded,
                     model=client.model, dim=_dim(vectors, client), facts=facts)


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

