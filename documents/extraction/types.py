"""Shared data types and helpers for the extractors (kept apart to avoid import cycles)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from documents.extraction.errors import CorruptFileError, ExtractionError, NoTextError, gettext_noop, phrase

logger = logging.getLogger(__name__)

MIME_PDF = "application/pdf"
MIME_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MIME_TEXT = "text/plain"
MIME_MARKDOWN = "text/markdown"
MIME_XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MIME_PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
MIME_CSV = "text/csv"
MIME_HTML = "text/html"
MIME_EML = "message/rfc822"
MIME_EPUB = "application/epub+zip"
MIME_ODT = "application/vnd.oasis.opendocument.text"


@dataclass(slots=True, frozen=True)
class FileType:
    """A kind of file ragsite reads: its content type, its name for people and its file name endings."""

    mime_type: str
    label: str  # "PowerPoint": what the pages say
    suffixes: tuple[str, ...]  # ".pptx": the file pickers' `accept` and the error messages


# THE list of what ragsite reads, in the order people are told. The library page, the admin's upload
# pages, the OpenAPI schema and the "not supported" messages are all made from it (upload_accept,
# upload_types_label), so a format added here is accepted everywhere at once.
FILE_TYPES = (
    FileType(MIME_PDF, "PDF", (".pdf",)),
    FileType(MIME_DOCX, "Word", (".docx",)),
    FileType(MIME_PPTX, "PowerPoint", (".pptx",)),
    FileType(MIME_XLSX, "Excel", (".xlsx",)),
    FileType(MIME_CSV, "CSV", (".csv",)),
    FileType(MIME_HTML, "HTML", (".html", ".htm")),
    FileType(MIME_EPUB, "EPUB", (".epub",)),
    FileType(MIME_ODT, "ODT", (".odt",)),
    FileType(MIME_EML, "e-mail", (".eml",)),
    FileType(MIME_TEXT, "text", (".txt", ".text")),
    FileType(MIME_MARKDOWN, "Markdown", (".md", ".markdown", ".mdown", ".mkd")),
)
SUPPORTED_MIME_TYPES = tuple(t.mime_type for t in FILE_TYPES)


def upload_accept() -> str:
    """A file input's `accept`: every file name ending, then every content type."""
    return ",".join([s for t in FILE_TYPES for s in t.suffixes] + [t.mime_type for t in FILE_TYPES])


def upload_types_phrase() -> dict:
    """"PDF (.pdf), Word (.docx), … and Markdown (.md, …)" as a phrase for reasons (the "and" translated)."""
    names = [f"{t.label} ({', '.join(t.suffixes)})" for t in FILE_TYPES]
    return phrase("types.list", gettext_noop("%(types)s and %(last)s"), types=", ".join(names[:-1]), last=names[-1])


def upload_types_label(*, suffixes: bool = False) -> str:
    """"PDF, Word, …, text, Markdown"; with `suffixes`: "PDF (.pdf), Word (.docx), …"."""
    names = [f"{t.label} ({', '.join(t.suffixes)})" if suffixes else t.label for t in FILE_TYPES]
    return ", ".join(names[:-1]) + " and " + names[-1] if suffixes else ", ".join(names)

BLOCK_KINDS = ("paragraph", "heading", "table", "code", "page")

MB = 1024 * 1024

# What error messages call a file of each kind ("This %(what)s is damaged…"), as phrases for the catalogue.
WORD_FILE = phrase("kind.docx", gettext_noop("Word file"))
EXCEL_FILE = phrase("kind.xlsx", gettext_noop("Excel file"))
POWERPOINT_FILE = phrase("kind.pptx", gettext_noop("PowerPoint file"))
EPUB_BOOK = phrase("kind.epub", gettext_noop("EPUB book"))
OPENDOCUMENT_FILE = phrase("kind.odt", gettext_noop("OpenDocument file"))

ProgressCallback = Callable[[int, int], None]
StatusCallback = Callable[[str], None]  # a stage for people: "OCR 12 of 40 pages"


@dataclass(slots=True)
class Block:
    """One piece of document text, in reading order."""

    text: str  # no leading/trailing blank lines
    page_number: int | None  # 1-based for PDFs, None otherwise
    heading_path: tuple[str, ...]
    kind: str  # "paragraph" | "heading" | "table" | "code" | "page"
    table_header: str | None = None  # for kind == "table": the rendered header row
    ocr_confidence: float | None = None  # set when the page was read by OCR (0-100)


@dataclass(slots=True, frozen=True)
class Limits:
    """Safety limits applied while extracting."""

    max_file_bytes: int = 200 * MB  # any file type
    max_pages: int = 20_000  # PDF pages
    max_docx_uncompressed: int = 200 * MB  # sum of the declared sizes of all .docx parts
    max_docx_ratio: float = 100.0  # compression ratio allowed for a big member ...
    docx_ratio_min_member: int = 10 * MB  # ... "big" meaning larger than this (uncompressed)
    max_docx_members: int = 10_000  # number of entries in the .docx zip
    encoding_sample_bytes: int = 1 * MB  # bytes given to the charset detector


class Extraction:
    """The result of `extract()`: metadata plus a lazy `blocks()` generator.

    `pages_total` is known as soon as the document is opened (PDF only).
    `empty_pages` and `warnings` are complete once `blocks()` is exhausted.
    """

    mime_type: str = ""

    def __init__(self, *, pages_total: int | None = None,
                 on_progress: ProgressCallback | None = None, limits: Limits | None = None):
        self.pages_total = pages_total
        self.empty_pages: list[int] = []
        self.warnings: list[str] = []
        self.encoding: str | None = None  # detected text encoding (text/Markdown)
        self.ocr: dict = {}  # pages read by OCR, mean confidence, language (PDF only)
        self.on_progress = on_progress
        self.limits = limits or Limits()

    def blocks(self) -> Iterator[Block]:
        """Yield the document's blocks lazily; raises ExtractionError on unreadable content."""
        self.empty_pages = []
        self.warnings = list(self._open_warnings())
        produced = False
        try:
            for block in self._iter_blocks():
                clean_block(block)
                if block.text and not block.text.isspace():
                    produced = True
                    yield block
        except (ExtractionError, MemoryError, GeneratorExit):
            raise
        except Exception as exc:  # noqa: BLE001 - parser bugs on hostile input end up here
            logger.warning("Extraction of a %s failed", self.mime_type, exc_info=True)
            raise self._damaged_error(exc) from exc
        if not produced:
            raise self._no_text_error()

    def labels_so_far(self) -> dict[int, str]:
        """The page labels known while `blocks()` is still being read (final for every page but the
        last one read); formats without labels have none."""
        return dict(getattr(self, "page_labels", None) or {})

    # -- for subclasses -------------------------------------------------
    def _open_warnings(self) -> list[str]:
        return []

    def _iter_blocks(self) -> Iterator[Block]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _no_text_error(self) -> Exception:
        return NoTextError(gettext_noop("This document contains no text."))

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This file is damaged and cannot be read.")


# --- text clean-up -------------------------------------------------------


def clean_block(block: Block) -> None:
    """The one boundary every extractor's output passes (`Extraction.blocks()`): text, heading path and
    table header cleaned of what PostgreSQL or a page cannot hold, whatever the format's reader did."""
    block.text = clean_field(block.text, one_line=False)
    block.heading_path = tuple(part for part in (clean_field(p) for p in block.heading_path) if part)
    if block.table_header is not None:
        block.table_header = clean_field(block.table_header, one_line=False)

# Line-breaking characters that are not "\n": vertical tab, form feed, NEL, LS, PS.
_LINE_BREAKS_RE = re.compile("\r\n?|[\x0b\x0c\x85\u2028\u2029]")
# Control characters (C0 except tab/newline, DEL, C1), BOM/ZWNBSP, non-characters and lone
# surrogates: they carry no meaning and NUL in particular cannot be stored in PostgreSQL text.
_JUNK_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\ufeff\ufffe\uffff\ud800-\udfff]+")


def clean_text(text: str) -> str:
    """Normalise line breaks to "\\n" and drop control characters (keeps tabs)."""
    text = _LINE_BREAKS_RE.sub("\n", text)
    return _JUNK_RE.sub("", text)


_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_FIELD_JUNK_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\ufeff\ufffe\uffff]+")


def clean_field(value: object, *, one_line: bool = True) -> str:
    """A string a document brings along (title, author, heading, sheet or slide name, e-mail header, file
    name, page label), safe to store and to show: control characters other than tab and newline, the BOM
    and non-characters removed, a lone surrogate replaced by U+FFFD; `one_line` folds every run of
    whitespace (line breaks too) into one space and strips the ends. PostgreSQL refuses NUL in text and
    jsonb, and a surrogate cannot be encoded at all, so every such string passes here before it is kept."""
    text = _SURROGATE_RE.sub("\ufffd", str(value or ""))
    text = _FIELD_JUNK_RE.sub("", _LINE_BREAKS_RE.sub("\n", text))
    return " ".join(text.split()) if one_line else text


def table_row(cells: list[str]) -> str:
    """Cells -> "| a | b |": a row stays one line, its cells kept apart ("|" inside a cell becomes "/")."""
    cleaned = [" ".join(clean_text(c or "").split()).replace("|", "/") for c in cells]
    return "| " + " | ".join(cleaned) + " |"


def table_rows(rows: list[list[str]]) -> list[str]:
    """Non-empty rows of a table as `table_row` lines (the first one is the header row)."""
    return [table_row(r) for r in rows if any((c or "").strip() for c in r)]


def human_size(n: int) -> dict:
    """`209715200` -> a phrase reading "200 MB" (the number and unit written the reader's way)."""
    if n >= MB:
        value = n / MB
        size: int | float = round(value) if value >= 10 or value.is_integer() else round(value, 1)
        return phrase("size.mb", gettext_noop("%(size)s MB"), size=size)
    if n >= 1024:
        return phrase("size.kb", gettext_noop("%(size)s KB"), size=round(n / 1024))
    return phrase("size.bytes", gettext_noop("%(size)s bytes"), size=n)


def format_page_list(pages: list[int], limit: int = 20) -> str | dict:
    """`[3, 7]` -> "3, 7"; a long list is shortened to a phrase "3, 7, … and 12 more"."""
    shown = ", ".join(str(p) for p in pages[:limit])
    if len(pages) > limit:
        return phrase("pages.more", gettext_noop("%(pages)s and %(more)s more"), pages=shown, more=len(pages) - limit)
    return shown
