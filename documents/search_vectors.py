"""Chunks' full-text search vectors: each chunk's language, configuration and analysed text.

Used by the indexer when it commits a document's chunks, and by `manage.py
rebuild_search_vectors`, which rebuilds them for chunks already stored (after a change to the
analysis: segmentation, stop words, language identification) without extracting or embedding
anything again.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction

from documents.language import detect_chunk_language, detect_language, text_config_for
from documents.language import search_input, with_number_terms
from documents.language.search_text import ANALYSIS_VERSION


@dataclass(frozen=True)
class ChunkAnalysis:
    language: str
    config: str
    text: str  # the input of to_tsvector(config, ...)


def chunk_analysis(*, content: str, context: str, document_language: str) -> ChunkAnalysis:
    """How one chunk is indexed for full text (pure; the heading context is searchable too)."""
    language = detect_chunk_language(content, document_language=document_language)
    config = text_config_for(language)
    text = search_input(f"{context} {content}".strip(), language=language, config=config)
    return ChunkAnalysis(language, config, with_number_terms(text))


def search_vectors_write(*, chunk_ids: list[int], analyses: list[ChunkAnalysis]) -> None:
    """Store each chunk's configuration and search vector, and mark their documents as analysed with
    the current ANALYSIS_VERSION. Call with all of a document's chunks."""
    if not chunk_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE documents_chunk c SET text_config = t.config, "
            "search_vector = to_tsvector(t.config::regconfig, t.text) "
            "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS t(id, config, text) WHERE c.id = t.id",
            [chunk_ids, [a.config for a in analyses], [a.text for a in analyses]],
        )
        cursor.execute(
            "UPDATE documents_document SET search_analysis = %s WHERE id IN "
            "(SELECT DISTINCT document_id FROM documents_chunk WHERE id = ANY(%s)) AND search_analysis <> %s",
            [ANALYSIS_VERSION, chunk_ids, ANALYSIS_VERSION],
        )


def search_vectors_rebuild(*, document_ids: list[int] | None = None, redetect: bool = False, outdated: bool = False,
                           log=lambda message: None) -> dict:
    """Rebuild the search vectors (and, where unknown or `redetect`, the language) of indexed documents.

    A document's language given at upload (or detected before) is kept unless `redetect`; an
    empty one is detected from the stored text. One transaction per document, under its row lock,
    so an interrupted run keeps what it did. `outdated`: only documents analysed with an older
    ANALYSIS_VERSION (what a new release's `make run` does; running it again resumes where it stopped).
    """
    from documents.models import Chunk, Document, DocumentText

    documents = Document.objects.filter(status="indexed").order_by("pk")
    if document_ids is not None:
        documents = documents.filter(pk__in=document_ids)
    if outdated:
        documents = documents.filter(search_analysis__lt=ANALYSIS_VERSION)
    counts = {"documents": 0, "chunks": 0, "languages_changed": 0}
    todo = list(documents.values_list("pk", flat=True))
    for number, document_id in enumerate(todo, start=1):
        with transaction.atomic():
            document = Document.objects.select_for_update().filter(pk=document_id, status="indexed").first()
            if document is not None and outdated and document.search_analysis >= ANALYSIS_VERSION:
                continue  # a re-index or another run got there first
            if document is None:  # re-indexed or deleted meanwhile: its new run writes its own vectors
                continue
            language = document.language
            if redetect or not language:
                text = DocumentText.objects.filter(document=document).values_list("text", flat=True).first() or ""
                language = detect_language(text)
            chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index")
                          .values_list("pk", "content", "metadata"))
            analyses = [chunk_analysis(content=content, context=(metadata or {}).get("context", ""),
                                       document_language=language) for _pk, content, metadata in chunks]
            search_vectors_write(chunk_ids=[pk for pk, _c, _m in chunks], analyses=analyses)
            if language != document.language:
                counts["languages_changed"] += 1
            Document.objects.filter(pk=document.pk).update(language=language, text_config=text_config_for(language),
                                                           search_analysis=ANALYSIS_VERSION)
        counts["documents"] += 1
        counts["chunks"] += len(chunks)
        log(f"{number}/{len(todo)} document {document.pk}: {len(chunks)} chunks, language {language or '-'}")
    return counts


def outdated_search_vectors_count() -> int:
    """How many indexed documents' search vectors an older ANALYSIS_VERSION built."""
    from documents.models import Document

    return Document.objects.filter(status="indexed", search_analysis__lt=ANALYSIS_VERSION).count()


def rebuild_outdated_search_vectors() -> dict:
    """Task (queued by `serve` after an upgrade): rebuild every outdated document's search vectors.

    Idempotent and resumable: each document is done in its own transaction and marked current, so
    a run cut short by the queue's timeout leaves the rest outdated for the next run.
    """
    import logging

    logger = logging.getLogger(__name__)
    counts = search_vectors_rebuild(outdated=True, log=lambda message: logger.info("search vectors rebuilt %s", message))
    logger.info("outdated search vectors rebuilt: %s", counts)
    return counts
