"""Versions of a document: upload a new file for the same document, list them, keep the old ones' text.

The document row always describes its *current* version (`Document.version`): its file, hash, text
and chunks. A new version waits beside it (status `uploaded` → `processing`) while the current one
keeps answering; the indexing pipeline switches the two in one transaction
(`version_switch`, called from retrieval's commit) or records the failure on the version
(`version_fail`), leaving the current one answering. The superseded version keeps its file, its
text and its chunk layout (`DocumentVersion.text/pages/segments`), so citations that quoted it
still open the passage they quoted; `DOCUMENT_VERSIONS_KEPT` limits how many versions are kept.
"""
from __future__ import annotations

import logging
from typing import BinaryIO

from django.utils.translation import gettext, gettext_noop
from django.conf import settings
from django.core.files import File
from django.db import connection, transaction
from django.db.models import Max, QuerySet
from django.utils import timezone

from core.errors import ApplicationError, Conflict, NotFound
from core.reasons import in_english, reason
from documents.chunking import PreviousChunks
from documents.titles import upload_filename
from documents.models import Chunk, Document, DocumentStatus, DocumentText, DocumentVersion, VersionStatus
from documents.services import spool_upload, announce_index_wanted, sniff_type

logger = logging.getLogger(__name__)

WAITING = (VersionStatus.UPLOADED, VersionStatus.PROCESSING)
BUSY = (DocumentStatus.UPLOADED, DocumentStatus.PROCESSING, DocumentStatus.REINDEXING)


def versions_list(*, document: Document) -> QuerySet[DocumentVersion]:
    """The document's versions, newest first, without their kept texts (the document was read through
    `visible_to`)."""
    return (DocumentVersion.objects.filter(document_id=document.pk).select_related("uploaded_by")
            .defer("text", "pages", "segments").order_by("-number"))


def version_for_citation(*, document: Document, number: int) -> DocumentVersion | None:
    """A superseded version with its kept text, or None (the current one, or pruned)."""
    if number == document.version:
        return None
    return DocumentVersion.objects.filter(document_id=document.pk, number=number,
                                          status=VersionStatus.SUPERSEDED).first()


def document_version_upload(*, document_id: int, user, source: BinaryIO, filename: str) -> DocumentVersion:
    """Store a new file as the next version of the document and queue its indexing.

    Its owner (private documents) or a curator of its collection may; anyone else, readers
    included, gets 404. Refused while the document is being indexed, and when the file is
    another document of the same owner (or collection) already.
    """
    filename = upload_filename(filename)
    _manageable(document_id=document_id, user=user)  # before reading a large body into storage
    path, sha256, size = spool_upload(source)
    try:
        mime_type = sniff_type(path, filename=filename)
        document = _manageable(document_id=document_id, user=user)
        version = DocumentVersion(document=document, original_filename=filename, mime_type=mime_type, size=size,
                                  sha256=sha256, uploaded_by=user if user.is_authenticated else None)
        with open(path, "rb") as handle:
            version.file.save(filename, File(handle), save=False)
        try:
            with transaction.atomic():
                document = _manageable(document_id=document_id, user=user, lock=True)
                _check_can_take(document, sha256)
                version.document = document
                version.number = (document.versions.aggregate(n=Max("number"))["n"] or 0) + 1
                version.save()
                document.status = DocumentStatus.REINDEXING if document.chunk_count else DocumentStatus.UPLOADED
                document.index_error, document.index_error_reason = "", {}
                document.index_attempts = 0
                document.save(update_fields=["status", "index_error", "index_error_reason", "index_attempts",
                                             "updated_at"])
                transaction.on_commit(lambda: announce_index_wanted(document.pk))
        except BaseException:
            version.file.delete(save=False)
            raise
        logger.info("document version uploaded", extra={"document_id": document.pk, "version": version.number,
                                                        "size": size})
        return version
    finally:
        path.unlink(missing_ok=True)


def _manageable(*, document_id: int, user, lock: bool = False) -> Document:
    documents = Document.objects.manageable_by(user)
    if lock:
        documents = documents.select_for_update()
    document = documents.filter(pk=document_id).first()
    if document is None:
        # A reader of its collection gets the same 404 as anyone else: versions are the curators' business.
        raise NotFound(gettext("No such document."))
    return document


def _check_can_take(document: Document, sha256: str) -> None:
    if document.status in BUSY:
        raise Conflict(gettext("This document is being indexed; upload the new version when it has finished."),
                       code="invalid_state")
    same = (Document.objects.filter(collection_id=document.collection_id) if document.collection_id
            else Document.objects.filter(owner_id=document.owner_id, collection__isnull=True))
    other = same.filter(sha256=sha256).exclude(pk=document.pk).first()
    if other is not None:
        raise Conflict(gettext("This file is the document '%(other)s' already.") % {"other": other}, code="duplicate",
                       extra={"document_id": other.pk})


# --- called by the indexing pipeline ----------------------------------------------------------


def version_to_index(*, document: Document) -> DocumentVersion | None:
    """The version an indexing run works on: the newest waiting new version, else the current one."""
    waiting = (DocumentVersion.objects.filter(document_id=document.pk, number__gt=document.version,
                                              status__in=WAITING).order_by("-number").first())
    if waiting is not None:
        if waiting.status != VersionStatus.PROCESSING:
            DocumentVersion.objects.filter(pk=waiting.pk).update(status=VersionStatus.PROCESSING)
        return waiting
    return DocumentVersion.objects.filter(document_id=document.pk, number=document.version).first()


def version_previous_chunks(*, document: Document, version: DocumentVersion | None,
                            chunking: dict) -> PreviousChunks | None:
    """For a new version of an indexed document: the current version's text and chunk offsets, to cut the
    new one anchored on them (documents/chunking/anchoring.py) — an edit then no longer moves every later
    chunk boundary, and the embeddings cache serves every chunk the edit did not touch.

    None (chunk the normal way) for a first index, a re-index of the current version, or when
    `chunking` (the cutter's strategy, size, overlap and tokenizer) differs from what the current
    version was cut with (its `index_stats["chunking"]`).
    """
    if version is None or version.number <= document.version or not document.chunk_count:
        return None
    if (document.index_stats or {}).get("chunking") != chunking:
        return None
    text = DocumentText.objects.filter(document_id=document.pk).values_list("text", flat=True).first()
    if text is None:
        return None
    spans = list(Chunk.objects.filter(document_id=document.pk).order_by("chunk_index")
                 .values_list("start_offset", "end_offset"))
    return PreviousChunks(text=text, spans=spans)


def version_switch(*, document: Document, version: DocumentVersion | None) -> dict:
    """Inside the commit's transaction, with `document` locked and before its chunks are replaced: make
    `version` the current one. The superseded version keeps the text and chunk layout that answer now.

    Returns the document fields to update. Raises ApplicationError when the file became another
    document meanwhile (the per-owner hash is unique).
    """
    if version is None or version.number == document.version:
        return {}
    same = (Document.objects.filter(collection_id=document.collection_id) if document.collection_id
            else Document.objects.filter(owner_id=document.owner_id, collection__isnull=True))
    other = same.filter(sha256=version.sha256).exclude(pk=document.pk).first()
    if other is not None:
        raise ApplicationError(gettext("This file is the document '%(other)s' already.") % {"other": other}, code="duplicate")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE documents_documentversion v
            SET status = CASE WHEN v.status = 'failed' THEN v.status ELSE %s END, text = coalesce(t.text, ''), pages = coalesce(t.pages, '[]'::jsonb),
                segments = coalesce((SELECT jsonb_agg(jsonb_build_array(c.chunk_index, c.start_offset, c.end_offset,
                                                                       c.page_number, to_jsonb(c.heading_path))
                                                      ORDER BY c.chunk_index)
                                     FROM documents_chunk c WHERE c.document_id = v.document_id), '[]'::jsonb)
            FROM documents_document d LEFT JOIN documents_documenttext t ON t.document_id = d.id
            WHERE d.id = v.document_id AND v.document_id = %s AND v.number = %s
            """,
            [VersionStatus.SUPERSEDED, document.pk, document.version],
        )
    return {"file": version.file.name, "original_filename": version.original_filename,
            "mime_type": version.mime_type, "size": version.size, "sha256": version.sha256,
            "version": version.number}


def version_indexed(*, version: DocumentVersion | None, chunk_count: int, stats: dict) -> None:
    """Inside the commit's transaction: the version is current, with its stats; prune the oldest."""
    if version is None:
        return
    DocumentVersion.objects.filter(pk=version.pk).update(
        status=VersionStatus.CURRENT, index_error="", index_error_reason={}, chunk_count=chunk_count, indexed_at=timezone.now(),
        embedded_chunks=stats.get("embedded_chunks", 0), reused_chunks=stats.get("reused_chunks", 0),
        index_stats=stats)
    versions_prune(document_id=version.document_id)


def version_fail(*, document: Document, version: DocumentVersion | None, why: dict) -> bool:
    """Record a failed version on the version (`why`: a core.reasons reason). A new version beside an
    answering current one leaves the document answering with it: returns True. Otherwise False (the
    caller fails the document as before)."""
    if version is None:
        return False
    failed = {"status": VersionStatus.FAILED, "index_error": in_english(why), "index_error_reason": why}
    if version.number > document.version and document.chunk_count:
        DocumentVersion.objects.filter(pk=version.pk).update(**failed)
        kept = reason("index.version_failed", gettext_noop(
            "Version %(number)s could not be indexed: %(reason)s Version %(current)s still answers."),
            number=version.number, reason=why, current=document.version)
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.INDEXED, heartbeat_at=None, progress_note="", updated_at=timezone.now(),
            index_error=in_english(kept), index_error_reason=kept)
        return True
    if version.status != VersionStatus.CURRENT:  # a first index (or a new version of a document without chunks)
        DocumentVersion.objects.filter(pk=version.pk).update(**failed)
    return False


def versions_prune(*, document_id: int) -> int:
    """Delete versions beyond DOCUMENT_VERSIONS_KEPT (the oldest first; never the current or a waiting
    one) with their kept text and chunk layout; their files go after the commit."""
    keep = max(1, settings.DOCUMENT_VERSIONS_KEPT)
    document = Document.objects.filter(pk=document_id).values("version", "file").first()
    if document is None:
        return 0
    candidates = list(DocumentVersion.objects.filter(document_id=document_id, number__lt=document["version"])
                      .exclude(status__in=WAITING).order_by("-number").values_list("pk", "file"))
    doomed = candidates[keep - 1:]
    if not doomed:
        return 0
    DocumentVersion.objects.filter(pk__in=[pk for pk, _ in doomed]).delete()
    names = {name for _, name in doomed if name and name != document["file"]}
    storage = DocumentVersion._meta.get_field("file").storage
    transaction.on_commit(lambda: [storage.delete(name) for name in names])
    return len(doomed)


def version_file_names(*, document_ids) -> set[str]:
    """Every stored file of these documents' versions (for deleting the documents)."""
    return {name for name in DocumentVersion.objects.filter(document_id__in=document_ids)
            .values_list("file", flat=True) if name}


def document_filenames(document) -> list[str]:
    """The names of every file the document was uploaded as: its current one and its versions'."""
    names = [document.original_filename]
    names += [n for n in DocumentVersion.objects.filter(document=document).values_list("original_filename", flat=True)
              if n not in names]
    return names
