"""Web pages for documents: the library, the document viewer and the download of the original."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.template.defaultfilters import filesizeformat
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from documents.collections import library_collections
from documents.downloads import audit_download, download_response
from documents.governance import sources_due_for_owner
from documents.extraction import upload_accept
from documents.extraction.types import MIME_PPTX, MIME_XLSX
from documents.storage import uses_object_storage
from documents.models import Chunk, Document, DocumentText, DocumentVersion
from documents.serializers import DocumentSerializer
from documents.versions import version_for_citation
from documents.viewer_layout import layout_text
from identity.audit import audit_record
from identity.models import AuditAction

LIBRARY_FIRST_PAGE = 100


@login_required
@require_GET
def library(request):
    """The signed-in user's documents, newest first (the page keeps itself up to date), then a section
    per collection they read: read-only, except that curators upload there."""
    documents = Document.objects.visible_to(request.user).filter(collection__isnull=True).order_by("-created_at", "-id")
    total = documents.count()
    first = DocumentSerializer(documents[:LIBRARY_FIRST_PAGE], many=True).data
    sections = library_collections(user=request.user, limit=LIBRARY_FIRST_PAGE)
    return render(request, "documents/library.html", {
        "nav": "library",
        "library": {"documents": first, "total": total, "page_size": LIBRARY_FIRST_PAGE,
                    "max_upload_size": settings.MAX_UPLOAD_SIZE,
                    # Files this big go straight to the bucket (documents/direct_upload.py); null: never.
                    "direct_upload_min_size": (settings.DIRECT_UPLOAD_MIN_SIZE if uses_object_storage() else None),
                    "max_upload_label": filesizeformat(settings.MAX_UPLOAD_SIZE),
                    "upload_accept": upload_accept()},  # the "Upload new version" picker's, as the page's own
        "collections": sections,
        # Where a curator may move a collection's document: the other collections he curates.
        "move_targets": [section["collection"] for section in sections if section["can_curate"]],
        "due": sources_due_for_owner(user=request.user),  # source governance: what this owner should review
        "today": timezone.localdate(),
    })


@login_required
@require_GET
def document_view(request, document_id: int):
    """The extracted text of one document, page by page or under its headings, chunk by chunk; a PDF
    whose original is stored also shows its real pages (PDF.js reads them from the download URL,
    so the page view needs no access the download does not already check)."""
    document = get_object_or_404(Document.objects.visible_to(request.user), pk=document_id)
    # ?version=N: a citation of an earlier version opens the text it quoted (documents/versions.py).
    asked = request.GET.get("version", "")
    if not (asked.isascii() and asked.isdigit() and len(asked) <= 9):  # "²" is a digit int() refuses
        asked = ""
    old = version_for_citation(document=document, number=int(asked)) if asked else None
    version_note = ""
    if old is not None:
        version_note = gettext("You are reading version %(old)s, which an answer quoted; a newer version exists "
                               "(version %(current)s).") % {"old": old.number, "current": document.version}
    elif asked and int(asked) != document.version:
        version_note = gettext("Version %(asked)s is no longer kept; this is the current version (%(current)s), so the "
                               "cited passage may have changed.") % {"asked": asked, "current": document.version}
    text = old if old is not None else DocumentText.objects.filter(document=document).first()
    sections: list[dict] = []
    toc: list[dict] = []
    if text is not None:
        if old is not None:
            chunks = [(c[0], c[1], c[2], c[4] or []) for c in old.segments]
        else:
            chunks = list(Chunk.objects.visible_to(request.user).filter(document=document).order_by("chunk_index")
                          .values_list("chunk_index", "start_offset", "end_offset", "heading_path"))
        mime_type = old.mime_type if old is not None else document.mime_type
        sections, toc = layout_text(
            text.text, pages=text.pages or [], chunks=chunks,
            markdown=mime_type == "text/markdown",
            reflow=mime_type in ("application/pdf", "text/plain"),
            pages_total=document.pages_total if old is None else None,
            empty_pages=(document.empty_pages or []) if old is None else [],
        )
        # The label printed on each page (PDF /PageLabels or its printed number), kept in the indexing stats.
        shown_stats = (old if old is not None else document).index_stats or {}
        labels = {int(page): str(label) for page, label in (shown_stats.get("page_labels") or {}).items()}
        if not labels and old is None:  # indexed before the stats kept them: the chunks' labels, as the chat cites them
            labels = {int(page): str(label) for page, label in Chunk.objects.filter(
                document=document, page_number__isnull=False, metadata__has_key="page_label")
                .values_list("page_number", "metadata__page_label").distinct() if label}
        # A spreadsheet's page is a sheet, named by its first line; a deck's page is a slide.
        kind = {MIME_XLSX: "sheet", MIME_PPTX: "slide"}.get(mime_type, "page")
        firsts = {int(page): text.text[start:end].split("\n", 1)[0].strip() for page, start, end in (text.pages or [])}
        # layout_text escapes every piece of the document's text; only its own tags are markup.
        sections = [{**s, "html": mark_safe(s["html"]), "label": labels.get(s["number"]) or "",  # noqa: S308
                     "number_text": str(s["number"]), "kind": kind,
                     "sheet": firsts.get(s["number"], "") if kind == "sheet" else ""} for s in sections]
    shown: Document | DocumentVersion = old if old is not None else document
    audit_record(action=AuditAction.VIEW, user=request.user, via="page", document=document,
                 version=old.number if old is not None else document.version)
    return render(request, "documents/viewer.html", {
        "nav": "library",
        "document": document,
        "version_note": version_note,
        "has_text": text is not None,
        "sections": sections,
        "toc": toc,
        "paged": any(s["number"] is not None for s in sections),
        # What a "page" of this file is, for the count under its title: a workbook's sheets, a deck's slides.
        "page_kind": {MIME_XLSX: "sheet", MIME_PPTX: "slide"}.get(shown.mime_type, "page"),
        # An earlier version's citation opens its kept text and, for a PDF, its kept file's pages.
        "show_pages": shown.mime_type == "application/pdf" and _original_stored(shown),
        # The pages and the Download button read the same file: the version the citation quoted.
        "pages_src": reverse("document-download", args=[document.pk]) + (f"?version={old.number}" if old else ""),
        "download_name": shown.original_filename,
        # The download redirects to the bucket (another origin): the page says so if the bucket refuses it.
        "pages_from_bucket": uses_object_storage() and shown.size >= settings.S3_DOWNLOAD_REDIRECT_MIN_SIZE,
        "status_json": DocumentSerializer(document).data,
    })


@login_required
@require_GET
def document_download(request, document_id: int):
    """The original file (or `?version=N`: a superseded version's), for those who see the document
    (anyone else gets a 404)."""
    document = get_object_or_404(Document.objects.visible_to(request.user), pk=document_id)
    # ?version=N: a superseded version's kept file (the viewer draws the pages an old citation quoted).
    response = download_response(document, version=request.GET.get("version"))
    if response is None:
        raise Http404(gettext("The original file is no longer stored."))
    audit_download(request.user, document, request.GET.get("version"), via="page")
    return response


def _original_stored(document: Document | DocumentVersion) -> bool:
    try:
        return bool(document.file) and document.file.storage.exists(document.file.name)
    except (OSError, ValueError):
        return False
