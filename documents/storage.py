"""Where documents' files live: Django's default storage, the local disk or an S3-compatible bucket.

Every read, write and delete of a stored original goes through here (and so through
`STORAGES["default"]`), never through a path on the web node's disk: with object storage a
worker on another machine reads the same file. Extraction libraries want a real file, so a
worker gets a private temporary copy (`copy_to_temp`), deleted after extraction.

With object storage, big downloads are redirects to a short-lived presigned URL (the bytes never
pass through daphne) and big uploads can go straight to the bucket (documents/direct_upload.py).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, default_storage

from documents.extraction import FILE_TYPES

COPY_BUFFER = 1024 * 1024


def storage() -> Storage:
    """The storage of documents' files (STORAGES["default"])."""
    return default_storage


def uses_object_storage(target: Storage | None = None) -> bool:
    """True when files live in an S3-compatible bucket (S3_* settings), False on the local disk."""
    try:
        from storages.backends.s3 import S3Storage
    except ImportError:  # pragma: no cover - django-storages is a runtime requirement
        return False
    return isinstance(target if target is not None else storage(), S3Storage)


def save_original(document: Any, *, filename: str, handle: IO[bytes]) -> None:
    """Store the bytes of `handle` as the document's original (the row itself is not saved)."""
    document.file.save(filename, File(handle), save=False)


def open_original(document: Any) -> IO[bytes]:
    """The stored original, opened for reading; FileNotFoundError when it is no longer stored."""
    if not document.file.name:
        raise FileNotFoundError("the document has no stored file")
    target = document.file.storage
    if not target.exists(document.file.name):  # S3 opens lazily: say it now, not at the first read
        raise FileNotFoundError(document.file.name)
    return target.open(document.file.name, "rb")


def delete_stored(name: str, *, target: Storage | None = None) -> None:
    """Delete a stored file by its storage name (nothing happens when it is gone already)."""
    if name:
        (target or storage()).delete(name)


def temp_suffix(mime_type: str, stored_name: str = "") -> str:
    """The file name ending a temporary copy needs: some readers (openpyxl) refuse a path without
    the one of their format. The type's own ending, found from the content at upload; else the
    stored name's."""
    for file_type in FILE_TYPES:
        if file_type.mime_type == mime_type:
            return file_type.suffixes[0]
    suffix = Path(stored_name).suffix.lower()
    return suffix if suffix[1:].isalnum() and len(suffix) <= 10 else ""


def copy_to_temp(document: Any, *, file: Any = None, mime_type: str | None = None) -> Path:
    """A private local copy of the stored original for extraction (the caller deletes it), named
    with its type's ending; `file` and `mime_type`: one of its versions' instead of the current one."""
    stored = file if file is not None else document.file
    suffix = temp_suffix(mime_type or document.mime_type, stored.name or "")
    handle, name = tempfile.mkstemp(prefix=f"ragsite-doc-{document.pk}-", suffix=suffix,
                                    dir=settings.FILE_UPLOAD_TEMP_DIR)
    try:
        with os.fdopen(handle, "wb") as out:
            if uses_object_storage(stored.storage):
                # Streamed from the bucket in parts, never held in memory or spooled twice.
                _download(stored.name, out)
            else:
                with stored.open("rb") as source:
                    shutil.copyfileobj(source, out, COPY_BUFFER)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def presigned_download_url(document: Any) -> str | None:
    """A short-lived URL of the bucket serving the original as an attachment; None on the local disk.

    Call only after the caller's permission check: whoever holds the URL can fetch the file
    until it expires (`S3_URL_EXPIRE` seconds).
    """
    target = document.file.storage
    if not uses_object_storage(target) or not document.file.name:
        return None
    filename = document.original_filename or "download"
    ascii_name = filename.encode("ascii", "replace").decode().replace('"', "_").replace("?", "_")
    disposition = f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename)}"
    return target.url(document.file.name, expire=settings.S3_URL_EXPIRE, parameters={
        "ResponseContentDisposition": disposition,
        "ResponseContentType": document.mime_type or "application/octet-stream",
        "ResponseCacheControl": "private, no-store",
    })


def s3_client() -> Any:
    """boto3's S3 client of the configured bucket (object storage only)."""
    target = storage()
    if not uses_object_storage(target):
        raise RuntimeError("object storage is not configured")
    return target.connection.meta.client  # type: ignore[attr-defined]


def s3_key(name: str) -> str:
    """The bucket key of a storage name (the storage may add a location prefix)."""
    from storages.utils import clean_name

    return storage()._normalize_name(clean_name(name))  # type: ignore[attr-defined]


def _download(name: str, out: IO[bytes]) -> None:
    from botocore.exceptions import ClientError

    try:
        s3_client().download_fileobj(bucket_name(), s3_key(name), out)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
            raise FileNotFoundError(name) from exc
        raise


def bucket_name() -> str:
    return storage().bucket_name  # type: ignore[attr-defined]


CORS_RULE_ID = "ragsite"


def bucket_ensure(*, origins: list[str]) -> list[str]:
    """Create the bucket when it is missing and give it ragsite's CORS rule for `origins`; returns
    what was done, for people ("created the bucket", "CORS rule for …").

    Why CORS: the PDF viewer reads a big original through the download URL, which redirects to a
    presigned URL of the bucket, another origin; a browser lets the page read that answer only
    when the bucket names the page's origin (AWS and MinIO name none until told). Direct uploads
    POST from the page to the bucket and need the same. Rules of the bucket with another ID are
    kept; an empty `origins` leaves the CORS configuration alone.
    """
    from botocore.exceptions import ClientError

    client, bucket = s3_client(), bucket_name()
    done: list[str] = []
    try:
        client.head_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
        client.create_bucket(Bucket=bucket)
        done.append(f"created the bucket {bucket}")
    if not origins:
        return done + ["CORS left alone (no origins)"]
    try:
        rules = client.get_bucket_cors(Bucket=bucket).get("CORSRules", [])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("NoSuchCORSConfiguration", "404"):
            raise
        rules = []
    allowed = sorted(set(origins))
    ours = {"ID": CORS_RULE_ID, "AllowedOrigins": allowed, "AllowedMethods": ["GET", "HEAD", "POST", "PUT"],
            "AllowedHeaders": ["*"], "ExposeHeaders": ["Content-Length", "Content-Type", "ETag"],
            "MaxAgeSeconds": 3600}
    kept = [r for r in rules if r.get("ID") != CORS_RULE_ID]
    client.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": kept + [ours]})
    return done + [f"CORS rule for {', '.join(allowed)}"]
