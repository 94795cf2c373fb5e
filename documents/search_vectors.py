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
    """Store each chunk's configuration and search vector, in one statement."""
    if not chunk_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE documents_chunk c SET text_config = t.config, "
            "search_vector = to_tsvector(t.config::regconfig, t.text) "
            "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS t(id, config, text) WHERE c.id = t.id",
            [chunk_ids, [a.config for a in analyses], [a.text for a in analyses]],
        )


def search_vectors_rebuild(*, document_ids: list[int] | None = None, redetect: bool = False,
                           log=lambda message: None) -> dict:
    """Rebuild the search vectors (and, where unknown or `redetect`, the language) of indexed documents.

    A document's language given at upload (or detected before) is kept unless `redetect`; an
    empty one is detected from the stored text. One transaction per document, under its row lock.
    """
    from documents.models import Chunk, Document, DocumentText

    documents = Document.objects.filter(status="indexed").order_by("pk")
    if document_ids is not None:
        documents = documents.filter(pk__in=document_ids)
    counts = {"documents": 0, "chunks": 0, "languages_changed": 0}
    for document_id in documents.values_list("pk", flat=True):
        with transaction.atomic():
            document = Document.objects.select_for_update().filter(pk=document_id, status="indexed").first()
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
            Document.objects.filter(pk=document.pk).update(language=language, text_config=text_config_for(language))
        counts["documents"] += 1
        counts["chunks"] += len(chunks)
        log(f"{document.pk}: {len(chunks)} chunks, language {language or '-'}")
    return counts
