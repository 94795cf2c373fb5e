"""The original file as a download, for the page and the API alike."""
from __future__ import annotations

from django.http import FileResponse

from documents.models import Document


def original_file_response(document: Document) -> FileResponse | None:
    """A private, uncached download of the stored original; None when it is no longer stored.

    Call only after the caller's visibility check: this reads whatever document it is given.
    """
    try:
        handle = document.file.open("rb")
    except (FileNotFoundError, ValueError):
        return None
    response = FileResponse(handle, as_attachment=True, filename=document.original_filename,
                            content_type=document.mime_type or "application/octet-stream")
    response["Cache-Control"] = "private, no-store"
    return response
