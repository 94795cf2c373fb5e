"""Build documents through the real upload service."""
from __future__ import annotations

import io

from documents.services import document_upload


def upload_bytes(owner, data: bytes, filename: str = "notes.txt", **kwargs):
    return document_upload(owner=owner, source=io.BytesIO(data), filename=filename, **kwargs).document


def upload_path(owner, path, **kwargs):
    with open(path, "rb") as handle:
        return document_upload(owner=owner, source=handle, filename=path.name, **kwargs).document
