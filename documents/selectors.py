"""Reads of one document's text and chunks for the API; scoped through `Document.objects.visible_to`."""
from __future__ import annotations

from django.utils.translation import gettext
from django.db.models import QuerySet

from documents.models import Chunk, Document, DocumentText
from core.errors import Conflict, NotFound


def document_get(*, document_id, user) -> Document:
    try:
        pk = int(document_id)
    except (TypeError, ValueError):
        raise NotFound(gettext("No such document.")) from None
    document = Document.objects.visible_to(user).filter(pk=pk).first()
    if document is None:
        raise NotFound(gettext("No such document."))
    return document


def document_chunks(*, document: Document) -> QuerySet[Chunk]:
    """The document's chunks in order (the document was read through `visible_to`)."""
    return Chunk.objects.filter(document_id=document.pk, owner_id=document.owner_id).order_by("chunk_index")


def document_text(*, document: Document) -> dict:
    """The extracted text, its pages and its segments (what chunk offsets point into)."""
    text = DocumentText.objects.filter(document_id=document.pk).first()
    if text is None:
        raise Conflict(gettext("The text of this document is not extracted yet (status: %(status)s).") % {"status": document.status},
                       code="not_indexed", extra={"status": document.status})
    segments = list(document_chunks(document=document).values(
        "id", "chunk_index", "start_offset", "end_offset", "page_number", "heading_path"))
    return {
        "document_id": document.pk,
        "text": text.text,
        "pages": [{"page_number": p[0], "start_offset": p[1], "end_offset": p[2]} for p in text.pages or []],
        "segments": [{"chunk_id": s.pop("id"), **s} for s in segments],
    }
