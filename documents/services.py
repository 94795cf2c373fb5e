"""Changes to documents: upload, re-index, delete."""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import BinaryIO

from django.utils.translation import gettext
from django.conf import settings
from django.db import IntegrityError, transaction

from documents.extraction import ExtractionError
from documents.extraction import detect_type_path
from documents.titles import upload_filename
from documents.models import Collection, Document, DocumentStatus, DocumentVersion
from documents.signals import index_wanted
from documents.storage import delete_stored, save_original
from usage.quotas import upload_check
from core.errors import (ApplicationError, Conflict, NotFound, PermissionDenied, TooLarge, Unprocessable,
                         UnsupportedMediaType)

logger = logging.getLogger(__name__)

COPY_BUFFER = 1024 * 1024


class UploadRejected(ApplicationError):
    """The file cannot become a document (unsupported, empty, too large); nothing was stored."""

    code = "upload_rejected"


class UploadTooLarge(UploadRejected, TooLarge):
    code = "file_too_large"


class UploadUnsupported(UploadRejected, UnsupportedMediaType):
    code = "unsupported_type"


class UploadCorrupt(UploadRejected, Unprocessable):
    code = "corrupt_file"


def upload_too_large_error(size_hint: str) -> UploadTooLarge:
    limit_mb = settings.MAX_UPLOAD_SIZE / (1024 * 1024)
    return UploadTooLarge(
        f"This file is {size_hint}; the largest file ragsite accepts is {limit_mb:.0f} MB.",
        code="file_too_large",
    )


@dataclass
class UploadResult:
    document: Document
    duplicate: bool


def spool_upload(source: BinaryIO) -> tuple[Path, str, int]:
    """Copy the upload to a temporary file while hashing it; refuse it past the size limit."""
    digest = hashlib.sha256()
    size = 0
    handle, name = tempfile.mkstemp(prefix="ragsite-upload-", dir=settings.FILE_UPLOAD_TEMP_DIR)
    try:
        with os.fdopen(handle, "wb") as out:
            while block := source.read(COPY_BUFFER):
                size += len(block)
                if size > settings.MAX_UPLOAD_SIZE:
                    raise upload_too_large_error(f"larger than {settings.MAX_UPLOAD_SIZE // (1024 * 1024)} MB")
                digest.update(block)
                out.write(block)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name), digest.hexdigest(), size


def sniff_type(path: Path, *, filename: str) -> str:
    """The file's type from its content, or UploadRejected saying why it cannot be a document."""
    try:
        return detect_type_path(path, filename=filename)
    except ExtractionError as exc:
        code, error = {
            "empty_file": ("empty_file", UploadRejected),
            "corrupt": ("corrupt_file", UploadCorrupt),
        }.get(exc.code, ("unsupported_type", UploadUnsupported))
        raise error(exc.message, code=code) from exc


def document_upload(
    *,
    owner,
    source: BinaryIO,
    filename: str,
    title: str = "",
    category: str = "",
    subcategory: str = "",
    language: str = "",
    collection: Collection | None = None,
) -> UploadResult:
    """Store an uploaded file as a new document and queue its indexing.

    The type is detected from the content. The same bytes uploaded again by the same owner
    return the existing document (`duplicate=True`); another owner gets their own copy. With a
    `collection` the document is shared there (the caller checked that `owner` curates it) and
    duplicates are looked for within the collection.
    """
    upload_check(user=owner)  # the group's pages per day: QuotaExceeded (429) before anything is stored
    filename = upload_filename(filename)
    if collection is not None and not (category or "").strip() and not (subcategory or "").strip():
        category, subcategory = collection.category, collection.subcategory  # the collection's default topic
    path, sha256, size = spool_upload(source)
    same = (Document.objects.filter(collection=collection, sha256=sha256) if collection is not None
            else Document.objects.filter(owner=owner, collection__isnull=True, sha256=sha256))
    try:
        existing = same.first()
        if existing:
            return UploadResult(existing, True)
        mime_type = sniff_type(path, filename=filename)
        document = Document(
            owner=owner,
            collection=collection,
            title=(title or PurePath(filename).stem or filename)[:255],
            original_filename=filename,
            mime_type=mime_type,
            size=size,
            sha256=sha256,
            category=category.strip(),
            subcategory=subcategory.strip(),
            language=language.strip().lower()[:20],
        )
        with open(path, "rb") as handle:  # the request's own spooled copy, not a stored file
            save_original(document, filename=filename, handle=handle)
        try:
            with transaction.atomic():
                document.save()
                DocumentVersion.objects.create(
                    document=document, number=1, file=document.file.name, original_filename=filename,
                    mime_type=mime_type, size=size, sha256=sha256, uploaded_by=owner)
                transaction.on_commit(lambda: announce_index_wanted(document.pk))
        except IntegrityError:
            # The same file uploaded twice at the same moment: the other request won.
            delete_stored(document.file.name, target=document.file.storage)
            return UploadResult(same.get(), True)
        logger.info("document uploaded", extra={"document_id": document.pk, "owner_id": owner.pk,
                                                "mime_type": mime_type, "size": size})
        return UploadResult(document, False)
    finally:
        path.unlink(missing_ok=True)


def announce_index_wanted(document_id: int) -> None:
    """Tell the indexing side that the document waits to be indexed (call after its row is committed).

    documents sits below retrieval and does not know who indexes: retrieval connects to
    `documents.signals.index_wanted` when its app is ready and queues its task.
    """
    index_wanted.send(sender=Document, document_id=document_id)


def document_get(*, document_id: int, user) -> Document:
    document = Document.objects.visible_to(user).filter(pk=document_id).first()
    if document is None:
        raise NotFound(gettext("No such document."))
    return document


def document_locked_for_change(*, document_id: int, user) -> Document:
    """The document, locked, if the user may change it (call inside `transaction.atomic`).

    Someone who can read it but not change it (a reader of its collection) gets 403; anyone else 404.
    """
    document = Document.objects.manageable_by(user).select_for_update().filter(pk=document_id).first()
    if document is not None:
        return document
    if Document.objects.visible_to(user).filter(pk=document_id).exists():
        raise PermissionDenied(gettext("Only the collection's curators can change its documents."), code="not_curator")
    raise NotFound(gettext("No such document."))


REINDEXABLE = {DocumentStatus.INDEXED, DocumentStatus.FAILED}


def document_reindex(*, document_id: int, user) -> Document:
    """Queue a fresh indexing of the document; its current chunks answer until the new ones commit.

    Only its owner (private documents) or a curator of its collection may."""
    with transaction.atomic():
        document = document_locked_for_change(document_id=document_id, user=user)
        if document.status not in REINDEXABLE:
            raise Conflict(
                gettext("This document is %(status)s already; wait until it finishes.") % {"status": document.get_status_display().lower()},
                code="invalid_state",
            )
        document.status = DocumentStatus.REINDEXING if document.chunk_count else DocumentStatus.UPLOADED
        document.index_error, document.index_error_reason = "", {}
        document.index_attempts = 0
        document.save(update_fields=["status", "index_error", "index_error_reason", "index_attempts", "updated_at"])
        transaction.on_commit(lambda: announce_index_wanted(document.pk))
    return document


def document_set_topic(*, document_id: int, user, category: str | None = None,
                       subcategory: str | None = None) -> Document:
    """Change a document's category / subcategory (its owner, or a curator of its collection); what is
    not given keeps its value. The tiers read it at question time: no re-indexing needed."""
    with transaction.atomic():
        document = document_locked_for_change(document_id=document_id, user=user)
        if category is not None:
            document.category = category.strip()
        if subcategory is not None:
            document.subcategory = subcategory.strip()
        document.save(update_fields=["category", "subcategory", "updated_at"])
    return document


def document_delete(*, document_id: int, user) -> None:
    """Delete the document with its chunks, vectors and stored file (owner or curator only)."""
    with transaction.atomic():
        document = document_locked_for_change(document_id=document_id, user=user)
        target = document.file.storage
        # Its versions' files too (the current one's is the document's).
        names = {document.file.name, *DocumentVersion.objects.filter(document=document).values_list("file", flat=True)}
        document.delete()
        # The files go only once the rows are gone for good.
        transaction.on_commit(lambda: [delete_stored(name, target=target) for name in names if name])
