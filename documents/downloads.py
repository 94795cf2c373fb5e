"""The original file as a download, for the page and the API alike."""
from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, HttpResponseRedirect

from documents.models import Document, DocumentVersion
from documents.storage import open_original, presigned_download_url
from documents.versions import version_for_citation
from identity.audit import audit_record
from identity.models import AuditAction


def audit_download(user, document: Document, version: str | None, *, via: str) -> None:
    """The audit line of a download that was served (`version`: the ?version= asked, if any)."""
    number = int(version) if version and version.isascii() and version.isdigit() and len(version) <= 9 else None
    audit_record(action=AuditAction.DOWNLOAD, user=user, via=via, document=document,
                 version=number if number is not None else document.version)


def download_response(document: Document, *, version: str | None) -> FileResponse | HttpResponseRedirect | None:
    """The current original, or with `version` ("3", from ?version=3) the kept file of that superseded
    version, which an answer quoted; None when there is no such file (a 404 for the caller).

    Call only after the caller's visibility check of `document`: a version is read through it.
    """
    if version is None or version == "" or version == str(document.version):
        return original_file_response(document)
    kept = (version_for_citation(document=document, number=int(version))
            if version.isascii() and version.isdigit() and len(version) <= 9 else None)  # 9 digits: within the column's range
    return original_file_response(kept) if kept is not None else None


def original_file_response(document: Document | DocumentVersion) -> FileResponse | HttpResponseRedirect | None:
    """A private, uncached download of the stored original; None when it is no longer stored.

    Call only after the caller's visibility check: this reads whatever document (or version of one:
    the same file, name, type and size fields) it is given.
    From object storage a big file is a redirect to a presigned URL that expires within
    S3_URL_EXPIRE seconds, so its bytes never pass through daphne; small ones are streamed here.
    """
    if document.size >= settings.S3_DOWNLOAD_REDIRECT_MIN_SIZE:
        url = presigned_download_url(document)
        if url is not None:
            if not document.file.storage.exists(document.file.name):  # 404 here, not an error page of the bucket
                return None
            response = HttpResponseRedirect(url)
            response["Cache-Control"] = "private, no-store"  # the URL is a short-lived credential
            return response
    try:
        handle = open_original(document)
    except (FileNotFoundError, ValueError):
        return None
    response = FileResponse(handle, as_attachment=True, filename=document.original_filename,
                            content_type=document.mime_type or "application/octet-stream")
    response["Cache-Control"] = "private, no-store"
    return response
