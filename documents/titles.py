"""A document's own title: its metadata (a PDF's /Title, a DOCX's core properties title) or, when its
text opens with a heading, that heading. Indexing gives it to a document still named after its file
(retrieval.indexing.pipeline); a title someone chose is kept."""
from __future__ import annotations

import html
import logging
import re
import zipfile
from pathlib import Path, PurePath

from documents.extraction.types import clean_field

logger = logging.getLogger(__name__)

MIME_PDF = "application/pdf"
MIME_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

MAX_TITLE = 255
_CORE_XML_LIMIT = 256 * 1024  # docProps/core.xml is a few hundred bytes; a bigger one is not read
_DC_TITLE = re.compile(r"<dc:title(?:\s[^>]*)?>(.*?)</dc:title>", re.S)
# Titles that name nothing: a tool's placeholder or the file's own name.
_PLACEHOLDER = re.compile(r"^(?:untitled|no title|title|document\d*|microsoft word - .*|.*\.(?:pdf|docx?|tex|dvi|txt|md|rtf|odt))$",
                          re.I)


# A "title" without a single letter is an identifier a tool filled in (a filing's accession number
# "0001018724-18-000005", "2023-04-01_12"): it names no subject.
_WORD = re.compile(r"[^\W\d_]")


def clean_title(value: object) -> str:
    """One line, at most 255 characters; "" for a placeholder ("Untitled", "report.docx") or an
    identifier without a letter ("0001018724-18-000005")."""
    text = clean_field(value)
    if len(text) < 2 or _PLACEHOLDER.match(text) or not _WORD.search(text):
        return ""
    return text[:MAX_TITLE]


def metadata_title(path: Path, mime_type: str) -> str:
    """The title a PDF or DOCX file gives itself, or ""; an unreadable one is simply untitled."""
    try:
        if mime_type == MIME_PDF:
            from pypdf import PdfReader

            reader = PdfReader(str(path))
            if reader.is_encrypted:
                return ""
            meta = reader.metadata
            return clean_title(meta.title if meta else "")
        if mime_type == MIME_DOCX:
            with zipfile.ZipFile(path) as zf:
                info = zf.getinfo("docProps/core.xml")
                if info.file_size > _CORE_XML_LIMIT:
                    return ""
                found = _DC_TITLE.search(zf.read(info).decode("utf-8", "replace"))
            return clean_title(html.unescape(found.group(1))) if found else ""
    except Exception:  # noqa: BLE001 - a damaged file's title is not worth failing the indexing for
        logger.info("No title read from %s (%s)", path.name, mime_type, exc_info=True)
    return ""


# A slide deck's headings read "Slide 1: Quarterly results" (documents/extraction/slides.py): the
# title is the slide's own title text; a slide with none ("Slide 1") gives no title.
_SLIDE_PREFIX = re.compile(r"^Slide \d+(?::\s*|$)")


def opening_heading(text: str, spans) -> str:
    """The heading the text opens with (the layout's first block), or ""."""
    if not spans or spans[0].kind != "heading":
        return ""
    return clean_title(_SLIDE_PREFIX.sub("", text[spans[0].start:spans[0].end].lstrip("#").strip()))


def upload_filename(filename: str) -> str:
    """The name an uploaded file is kept under: its last path part, cleaned like every string a document
    brings (no NUL, control characters or lone surrogates, one line), at most 255 characters."""
    return clean_field(PurePath(clean_field(filename) or "upload").name)[:MAX_TITLE] or "upload"


def named_after_file(title: str, filename: str) -> bool:
    """True while a document's title is the one given at upload from its file name."""
    return title == (PurePath(filename).stem or filename)[:MAX_TITLE]


def context_title(title: str, filenames) -> str:
    """The title a document's chunks are embedded and indexed with: its own, never one made from the file name.

    A title copied from the file name ("scan_0042", "xquad.en-00-Super_Bowl_50") is a label, not words of
    the subject; in every chunk's embedded text it moved the vector arm away from the passage (XQuAD
    English hybrid hit@1 0.953 -> 0.938, docs/retrieval.md), so until the document has a title of its own
    (given, or found in its metadata or opening heading) its chunks carry none. `filenames`: the
    document's file name and its versions' (a new version's file may be named otherwise).
    """
    names = [filenames] if isinstance(filenames, str) else list(filenames)
    return "" if any(named_after_file(title, name) for name in names) else title
