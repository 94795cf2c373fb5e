"""The commit of an indexing job: the document's text, chunks and vectors replaced in one transaction.

`Built` is what the slow part (retrieval.indexing.pipeline._build: extract → chunk → embed) hands over;
`commit_built` locks the document, checks the job still owns it, switches a new version in, replaces the
chunks and their vectors, records the stats and usage, and tells the layers above when it commits.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from core.reasons import in_english
from documents.chunking import ChunkDraft
from documents.extraction.errors import stored_warning
from documents.language import text_config_for
from documents.models import Chunk, Document, DocumentStatus, DocumentText, DocumentVersion
from documents.search_vectors import chunk_analysis, search_vectors_write
from documents.titles import named_after_file
from documents.versions import version_indexed, version_switch
from retrieval.embedding_cache import cache_store
from retrieval.indexing.failure import Superseded, announce_finished
from retrieval.models import AiServer, ChunkEmbedding
from retrieval.vectors import embedding_model_ensure
from usage.recorder import indexing_recorded


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


def commit_built(document: Document, attempt: int, built: Built, version: DocumentVersion | None = None, *,
                 started: float | None = None) -> None:
    """Replace the document's text, chunks and vectors with `built` in one transaction (Superseded when
    the job no longer owns the document)."""
    t0 = time.monotonic()
    model = embedding_model_ensure(name=built.model_name, dim=built.dim)
    config = text_config_for(built.language)
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
        chunks = _chunks_write(document, locked, built, analyses, model=model)
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
        transaction.on_commit(lambda: announce_finished(document.pk))
    built.timings["commit_s"] = round(time.monotonic() - t0, 3)  # the whole transaction, for the benchmark


def _chunks_write(document: Document, locked: Document, built: Built, analyses: list, *, model) -> list[Chunk]:
    """The new chunks, their full-text vectors, their embeddings and the embeddings cache's entries
    (call inside the commit's transaction, after the old chunks were deleted; `locked` is the row locked)."""
    owner_id = document.owner_id
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
    return chunks


def _stats(built: Built) -> dict:
    """The document's indexing stats: where vectors came from and the seconds per stage."""
    seconds = {stage: built.timings.get(f"{stage}_s") for stage in ("extract", "chunk", "embed", "commit")}
    seconds["total"] = round(sum(v for v in seconds.values() if v is not None), 3)
    stats = {"embedded_chunks": built.embedded, "reused_chunks": built.reused, "seconds": seconds,
             "chunking": built.chunking}
    if "lookahead_used" in built.timings:  # embedded while the later pages were still being read
        stats["embedded_ahead"] = built.timings["lookahead_used"]
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
