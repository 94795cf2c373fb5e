"""Web pages for documents: the library, the document viewer and the download of the original."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from documents.collections import library_collections
from documents.downloads import download_response
from documents.extract_types import upload_accept
from documents.storage import uses_object_storage
from documents.models import Chunk, Document, DocumentText, DocumentVersion
from documents.serializers import DocumentSerializer
from documents.versions import version_for_citation

LIBRARY_FIRST_PAGE = 100
MD_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
PARAGRAPH_RE = re.compile(r"[^\n]+(?:\n[^\n]+)*")  # runs of non-empty lines
MAX_HEADING_CHARS = 200


@login_required
@require_GET
def library(request):
    """The signed-in user's documents, newest first (the page keeps itself up to date), then a section
    per collection they read: read-only, except that curators upload there."""
    documents = Document.objects.visible_to(request.user).filter(collection__isnull=True).order_by("-created_at", "-id")
    total = documents.count()
    first = DocumentSerializer(documents[:LIBRARY_FIRST_PAGE], many=True).data
    return render(request, "documents/library.html", {
        "nav": "library",
        "library": {"documents": first, "total": total, "page_size": LIBRARY_FIRST_PAGE,
                    "max_upload_size": settings.MAX_UPLOAD_SIZE,
                    # Files this big go straight to the bucket (documents/direct_upload.py); null: never.
                    "direct_upload_min_size": (settings.DIRECT_UPLOAD_MIN_SIZE if uses_object_storage() else None),
                    "max_upload_label": f"{settings.MAX_UPLOAD_SIZE / (1024 * 1024):g} MB",
                    "upload_accept": upload_accept()},  # the "Upload new version" picker's, as the page's own
        "collections": library_collections(user=request.user, limit=LIBRARY_FIRST_PAGE),
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
        version_note = (f"You are reading version {old.number}, which an answer quoted; "
                        f"a newer version exists (version {document.version}).")
    elif asked and int(asked) != document.version:
        version_note = (f"Version {asked} is no longer kept; this is the current version ({document.version}), "
                        "so the cited passage may have changed.")
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
    shown: Document | DocumentVersion = old if old is not None else document
    return render(request, "documents/viewer.html", {
        "nav": "library",
        "document": document,
        "version_note": version_note,
        "has_text": text is not None,
        "sections": sections,
        "toc": toc,
        "paged": any(s["number"] is not None for s in sections),
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
        raise Http404("The original file is no longer stored.")
    return response


def _original_stored(document: Document | DocumentVersion) -> bool:
    try:
        return bool(document.file) and document.file.storage.exists(document.file.name)
    except (OSError, ValueError):
        return False


# --- laying out the text ------------------------------------------------------------------------


@dataclass(slots=True)
class _Heading:
    start: int
    end: int
    level: int
    mark_end: int  # end of a Markdown "## " prefix (== start when there is none)
    title: str


def _headings(text: str, chunks: list[tuple], markdown: bool) -> list[_Heading]:
    """Paragraphs that are headings: Markdown ATX lines, or paragraphs equal to a chunk's heading name."""
    depth: dict[str, int] = {}
    for *_, path in chunks:
        for level, name in enumerate(path or [], start=1):
            depth.setdefault(" ".join(name.split()), level)
    found: list[_Heading] = []
    for m in PARAGRAPH_RE.finditer(text):
        para = m.group()
        if "\n" in para or len(para) > MAX_HEADING_CHARS:
            continue
        stripped = para.strip()
        md = MD_HEADING_RE.match(stripped) if markdown else None
        if md:
            lead = len(para) - len(para.lstrip())
            mark_end = m.start() + lead + len(md.group(1))
            while mark_end < m.end() and text[mark_end] in " \t":
                mark_end += 1
            found.append(_Heading(m.start(), m.end(), len(md.group(1)), mark_end, md.group(2).strip()))
            continue
        name = " ".join(stripped.split())
        if name in depth:
            found.append(_Heading(m.start(), m.end(), depth[name], m.start(), name))
    return found


def _reflow(text: str) -> str:
    """Line breaks that only wrap a full line become spaces, so text reflows on any screen.

    The result has the same length as `text`: chunk offsets still point at the same characters.
    A break after a short line (a heading, a list item, the end of a paragraph) stays.
    """
    out = list(text)
    for m in PARAGRAPH_RE.finditer(text):
        lines = m.group().split("\n")
        if len(lines) < 2:
            continue
        longest = max(len(line.rstrip()) for line in lines)
        if longest < 40:
            continue
        pos = m.start()
        for line in lines[:-1]:
            pos += len(line)
            if len(line.rstrip()) >= 0.6 * longest:
                out[pos] = " "
            pos += 1
    return "".join(out)


def layout_text(text: str, *, pages: list, chunks: list[tuple], markdown: bool = False, reflow: bool = False,
                pages_total: int | None = None, empty_pages: list | None = None) -> tuple[list[dict], list[dict]]:
    """Split a document's text into page sections of HTML, each chunk in a `#chunk-<index>` element.

    Chunks overlap, so the text is cut at every chunk, page and heading boundary into pieces; a
    piece is wrapped in `<span class="seg" data-c="4 5">` naming every chunk that covers it (the
    page highlights a chunk with `[data-c~="5"]`). The element with id `chunk-<index>` wraps the
    text from that chunk's start up to the next chunk's start. Returns (sections, contents):
    sections `[{"number": page or None, "empty": bool, "html": SafeString}]`, contents
    `[{"anchor", "title", "level"}]` for the headings found.
    """
    n = len(text)
    shown = _reflow(text) if reflow else text
    chunk_rows = sorted(((int(i), max(0, min(s, n)), max(0, min(e, n))) for i, s, e, *_ in chunks),
                        key=lambda c: (c[1], c[0]))
    headings = _headings(text, chunks, markdown)
    page_rows = sorted(((int(p), max(0, min(s, n)), max(0, min(e, n))) for p, s, e in pages), key=lambda p: p[1])

    cuts = {0, n}
    for _, s, e in chunk_rows:
        cuts.update((s, e))
    for _, s, e in page_rows:
        cuts.update((s, e))
    for h in headings:
        cuts.update((h.start, h.end, h.mark_end))
        # The blank lines around a heading become their own pieces (dropped below: the heading is a block).
        after, before = h.end, h.start
        while after < n and text[after] in " \t\r\n":
            after += 1
        while before > 0 and text[before - 1] in " \t\r\n":
            before -= 1
        cuts.update((after, before))
    bounds = sorted(cuts)

    page_starts = [p[1] for p in page_rows]
    heading_starts = [h.start for h in headings]
    heading_edges = {h.start for h in headings} | {h.end for h in headings}
    sections: list[dict] = []
    current: dict | None = None
    parts: list[str] = []
    open_owner: int | None = None  # chunk index of the open `.chunk` span
    open_heading: _Heading | None = None
    seen_chunks: set[int] = set()
    active: list[tuple[int, int, int]] = []  # chunks covering the current position
    next_chunk = 0
    owner: int | None = None

    def close_heading():
        nonlocal open_heading
        if open_heading is not None:
            parts.append("</span>")
            open_heading = None

    def close_owner():
        nonlocal open_owner
        close_heading()
        if open_owner is not None:
            parts.append("</span>")
            open_owner = None

    def finish_section():
        close_owner()
        if current is not None:
            html = "".join(parts).rstrip()
            current["html"] = mark_safe(html)  # noqa: S308 - every piece of text is escaped below
            current["empty"] = not html
            sections.append(current)
        parts.clear()

    for a, b in zip(bounds, bounds[1:]):
        # Which page this piece belongs to (gaps between pages stay with the page before).
        page = None
        if page_rows:
            k = bisect.bisect_right(page_starts, a) - 1
            page = page_rows[max(k, 0)][0]
        if current is None or current["number"] != page:
            finish_section()
            current = {"number": page}
        # Chunks covering [a, b) and the chunk that owns this stretch of text.
        while next_chunk < len(chunk_rows) and chunk_rows[next_chunk][1] <= a:
            active.append(chunk_rows[next_chunk])
            owner = chunk_rows[next_chunk][0]
            next_chunk += 1
        active = [c for c in active if c[2] > a]
        covering = [c[0] for c in active if c[1] <= a and c[2] >= b]
        piece = text[a:b]
        if not piece.strip() and (not parts or a in heading_edges or b in heading_edges):
            continue  # no blank lines at the top of a section; headings are blocks with their own margins
        if owner != open_owner:
            close_owner()
            if owner is not None:
                ident = f' id="chunk-{owner}"' if owner not in seen_chunks else ""
                seen_chunks.add(owner)
                parts.append(f'<span class="chunk"{ident} data-chunk="{owner}">')
                open_owner = owner
        k = bisect.bisect_right(heading_starts, a) - 1
        heading = headings[k] if k >= 0 and headings[k].start <= a < headings[k].end else None
        if heading is not open_heading:
            close_heading()
            if heading is not None:
                level = min(heading.level, 5)
                parts.append(f'<span class="hd hd-{level}" role="heading" aria-level="{level + 1}" '
                             f'id="h-{heading.start}">')
                open_heading = heading
        escaped = escape(shown[a:b])
        if heading is not None and a < heading.mark_end:
            escaped = f'<span class="md-mark" aria-hidden="true">{escaped}</span>'
        if covering:
            parts.append(f'<span class="seg" data-c="{" ".join(map(str, covering))}">{escaped}</span>')
        else:
            parts.append(escaped)
    finish_section()

    if page_rows:
        sections = [s for s in sections if s["number"] is not None or not s["empty"]]
        known = {s["number"] for s in sections}
        missing = set(int(p) for p in (empty_pages or []))
        if pages_total:
            missing |= set(range(1, int(pages_total) + 1)) - known
        for number in missing - known:
            sections.append({"number": number, "empty": True, "html": SafeString("")})
        sections.sort(key=lambda s: (s["number"] is None, s["number"] or 0))
    contents = [{"anchor": f"h-{h.start}", "title": h.title, "level": h.level} for h in headings]
    return sections, contents
