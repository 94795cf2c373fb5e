"""Direct uploads: big files go from the browser straight to the bucket, never through daphne.

1. `direct_upload_start` signs a POST policy for one key, with the exact size and content type
   in the signature (the bucket refuses anything else), and remembers it as a PendingUpload.
2. The client posts the file to the bucket.
3. `direct_upload_finalize` checks the object (size, type sniffed from its bytes, sha256, the
   same duplicate rule as a normal upload) and makes it a document queued for indexing, exactly
   like `document_upload`; a rejected object is deleted at once. The document's file is a copy
   under a key of its own, made by the bucket from exactly the bytes that were hashed (ETag
   preconditions): the presigned POST stays valid until it expires, and posting again to its key
   must not swap the bytes under the document's unchanged sha256.

Uploads never finalised are removed with their objects by `direct_uploads_expire` (a schedule,
documents migration 0012) once the URL has expired and the finalize grace has passed.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path, PurePath
from types import SimpleNamespace

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from core.errors import ApplicationError, Conflict, Gone, NotFound
from core.tasks import queue_at
from documents import storage
from documents.titles import upload_filename
from documents.models import Collection, Document, PendingUpload, document_upload_path
from documents.services import UploadRejected, UploadResult, upload_too_large_error, announce_index_wanted, sniff_type
from usage.quotas import upload_check

logger = logging.getLogger(__name__)

# A client may finalise this long after its upload URL expired (a slow upload that started in time).
FINALIZE_GRACE = timedelta(hours=1)
CONTENT_TYPE = re.compile(r"^[\w.+-]+/[\w.+-]+$")


class ObjectStorageUnavailable(ApplicationError):
    code = "object_storage_unavailable"

    def __init__(self) -> None:
        super().__init__("Direct uploads need object storage (S3_BUCKET and its keys); this server keeps files on "
                         "its own disk. Upload the file with POST /api/documents/ instead.",
                         code=self.code)


@dataclass
class DirectUpload:
    upload_id: uuid.UUID
    url: str
    fields: dict
    expires_at: datetime


def direct_upload_start(*, owner, name: str, size: int, content_type: str,
                        collection: Collection | None = None) -> DirectUpload:
    """A presigned POST for one file of exactly `size` bytes and `content_type` (the caller checked
    that `owner` curates `collection`)."""
    if not storage.uses_object_storage():
        raise ObjectStorageUnavailable()
    upload_check(user=owner)  # the group's pages per day, as document_upload
    if size > settings.MAX_UPLOAD_SIZE:
        raise upload_too_large_error(f"{size / (1024 * 1024):.0f} MB")
    if size < 1:
        raise UploadRejected(gettext("This file is empty; there is nothing to index."), code="empty_file")
    content_type = content_type.strip().lower()
    if not CONTENT_TYPE.match(content_type):
        raise UploadRejected(gettext("'%(type)s' is not a content type (such as application/pdf).") % {"type": content_type[:100]},
                             code="invalid")
    name = upload_filename(name)
    storage_name = document_upload_path(SimpleNamespace(owner_id=owner.pk), name)  # type: ignore[arg-type]
    expires_at = timezone.now() + timedelta(seconds=settings.S3_URL_EXPIRE)
    pending = PendingUpload.objects.create(owner=owner, collection=collection, name=name, size=size,
                                           content_type=content_type, storage_name=storage_name,
                                           expires_at=expires_at)
    signed = storage.s3_client().generate_presigned_post(
        storage.bucket_name(), storage.s3_key(storage_name),
        Fields={"Content-Type": content_type},
        Conditions=[{"Content-Type": content_type}, ["content-length-range", size, size]],
        ExpiresIn=settings.S3_URL_EXPIRE,
    )
    return DirectUpload(upload_id=pending.pk, url=signed["url"], fields=signed["fields"], expires_at=expires_at)


def direct_upload_finalize(*, owner, upload_id, sha256: str = "") -> UploadResult:
    """Turn the uploaded object into a document (or the existing one with the same bytes)."""
    if not storage.uses_object_storage():
        raise ObjectStorageUnavailable()
    pending = PendingUpload.objects.filter(owner=owner, pk=upload_id).select_related("collection").first()
    if pending is None:
        raise NotFound(gettext("No such upload; ask for a new upload URL."))
    if timezone.now() > pending.expires_at + FINALIZE_GRACE:
        _discard(pending)
        raise Gone(gettext("This upload expired; ask for a new upload URL."), code="upload_expired")
    try:
        return _finalize(pending, sha256.strip().lower())
    except UploadRejected:
        _discard(pending)
        raise


def _finalize(pending: PendingUpload, sha256: str) -> UploadResult:
    head = _head(pending.storage_name)
    if head is None:
        raise Conflict(gettext("The file has not arrived in storage yet: post it to the upload URL first."),
                       code="upload_incomplete")
    if head["ContentLength"] != pending.size:
        raise UploadRejected(gettext("The stored file has %(stored)s bytes, not the %(size)s announced.") % {"stored": head['ContentLength'], "size": pending.size},
                             code="size_mismatch")
    etag = head.get("ETag")
    path, digest = _fetch(pending.storage_name, etag=etag)
    try:
        if sha256 and sha256 != digest:
            raise UploadRejected(gettext("The stored file's SHA-256 is not the one given: it was changed or cut on the way."),
                                 code="checksum_mismatch")
        owner, collection = pending.owner, pending.collection
        same = (Document.objects.filter(collection=collection, sha256=digest) if collection is not None
                else Document.objects.filter(owner=owner, collection__isnull=True, sha256=digest))
        existing = same.first()
        if existing is not None:
            _discard(pending, keep_object=existing.file.name == pending.storage_name)
            return UploadResult(existing, True)
        mime_type = sniff_type(path, filename=pending.name)
    finally:
        path.unlink(missing_ok=True)
    document = Document(
        owner=owner, collection=collection, title=(PurePath(pending.name).stem or pending.name)[:255],
        original_filename=pending.name, mime_type=mime_type, size=pending.size, sha256=digest,
    )
    # A key the presigned POST cannot write, holding the bytes just hashed.
    document.file.name = _copy_final(pending.storage_name, etag=etag, owner_id=owner.pk,
                                     filename=pending.name)
    try:
        with transaction.atomic():
            document.save()
            PendingUpload.objects.filter(pk=pending.pk).delete()
            # Whatever is posted to the upload's key until its URL expires is removed after that.
            queue_at(direct_upload_leftover_remove, pending.storage_name, name=f"remove upload key {pending.pk}",
                     next_run=pending.expires_at + timedelta(minutes=1))
            transaction.on_commit(lambda: announce_index_wanted(document.pk))
    except IntegrityError:
        # Finalised twice at the same moment, or the same bytes uploaded another way: the other won.
        storage.delete_stored(document.file.name)
        existing = same.get()
        _discard(pending, keep_object=existing.file.name == pending.storage_name)
        return UploadResult(existing, True)
    storage.delete_stored(pending.storage_name)
    logger.info("document uploaded directly", extra={"document_id": document.pk, "owner_id": owner.pk,
                                                     "mime_type": mime_type, "size": pending.size})
    return UploadResult(document, False)


def _head(name: str) -> dict | None:
    from botocore.exceptions import ClientError

    try:
        return storage.s3_client().head_object(Bucket=storage.bucket_name(), Key=storage.s3_key(name))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise


class _HashingWriter:
    def __init__(self, out) -> None:
        self.out, self.digest = out, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.out.write(data)


def _changed() -> UploadRejected:
    return UploadRejected(gettext("The file changed in storage while it was being checked; upload it again."),
                          code="upload_changed")


def _copy_final(source: str, *, etag: str | None, owner_id: int, filename: str) -> str:
    """Copy the pending object to a new key of the document's own, only if it still is `etag` (the
    bytes hashed); the new storage name."""
    from botocore.exceptions import ClientError

    final = document_upload_path(SimpleNamespace(owner_id=owner_id), filename)  # type: ignore[arg-type]
    conditions = {"CopySourceIfMatch": etag} if etag else {}
    try:
        storage.s3_client().copy_object(Bucket=storage.bucket_name(), Key=storage.s3_key(final),
                                        CopySource={"Bucket": storage.bucket_name(), "Key": storage.s3_key(source)},
                                        **conditions)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
            raise _changed() from exc
        raise
    return final


def _fetch(name: str, *, etag: str | None = None) -> tuple[Path, str]:
    """A local copy of the object for sniffing, hashed on the way (only if it still is `etag`)."""
    from botocore.exceptions import ClientError

    handle, tmp = tempfile.mkstemp(prefix="ragsite-direct-", dir=settings.FILE_UPLOAD_TEMP_DIR)
    try:
        with os.fdopen(handle, "wb") as out:
            writer = _HashingWriter(out)
            # One stream, in order: the hash must see the parts in sequence (no parallel ranges).
            try:
                body = storage.s3_client().get_object(Bucket=storage.bucket_name(), Key=storage.s3_key(name),
                                                      **({"IfMatch": etag} if etag else {}))["Body"]
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                    raise _changed() from exc
                raise
            for block in body.iter_chunks(1024 * 1024):
                writer.write(block)
    except BaseException:
        os.unlink(tmp)
        raise
    return Path(tmp), writer.digest.hexdigest()


def _discard(pending: PendingUpload, *, keep_object: bool = False) -> None:
    if not keep_object:
        storage.delete_stored(pending.storage_name)
    PendingUpload.objects.filter(pk=pending.pk).delete()


def direct_upload_leftover_remove(storage_name: str) -> str:
    """After a finalised upload's URL expired: delete what was posted again to its key (the document
    has a copy of its own; a document still on that key keeps it)."""
    if not storage.uses_object_storage() or Document.objects.filter(file=storage_name).exists():
        return "kept"
    storage.delete_stored(storage_name)
    return "removed"


def direct_uploads_expire() -> int:
    """Remove the uploads never finalised, with their objects (the schedule's task)."""
    if not storage.uses_object_storage():
        return 0
    removed = 0
    for pending in PendingUpload.objects.filter(expires_at__lt=timezone.now() - FINALIZE_GRACE):
        # A document made from it keeps its object (finalised between the query and here).
        keep = Document.objects.filter(file=pending.storage_name).exists()
        _discard(pending, keep_object=keep)
        removed += 1
    if removed:
        logger.info("expired direct uploads removed", extra={"count": removed})
    return removed
