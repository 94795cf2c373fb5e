"""The original file as a download, for the page and the API alike."""
from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, HttpResponseRedirect

from documents.models import Document
from documents.storage import open_original, presigned_download_url


def original_file_response(document: Document) -> FileResponse | HttpResponseRedirect | None:
    """A private, uncached download of the stored original; None when it is no longer stored.

    Call only after the caller's visibility check: this reads whatever document it is given.
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
