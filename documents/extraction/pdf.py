"""PDF extraction with pypdf: page by page, lazily, with outline-based heading paths."""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import (CorruptFileError, EncryptedError, NoTextError, Note, TooLargeError,
                                         gettext_noop, phrase)
from documents.extraction.ocr import OcrConfig
from documents.extraction.page_labels import PrintedNumber, pdf_page_labels, printed_labels, printed_page_number
from documents.extraction.pdf_layout_tables import find_tables, looks_tabular
from documents.extraction.pdf_ocr import EDGE_LINES, PdfOcr, edge_key
from documents.extraction.pdf_tables import PdfTables
from documents.extraction.types import (
    MIME_PDF,
    Block,
    Extraction,
    Limits,
    clean_field,
    clean_text,
    format_page_list,
)

logger = logging.getLogger(__name__)

ENCRYPTED_MESSAGE = gettext_noop("This PDF is encrypted; upload it without a password.")

_MAX_OUTLINE_ENTRIES = 50_000
_MAX_OUTLINE_DEPTH = 32

_SPACES_RE = re.compile(r"[^\S\n]+")
_TABLE_MARK = "\x00table:"  # never in page text: clean_text() removes NUL
# Presentation forms (ligatures such as "ﬁ", Arabic contextual forms) are folded to plain
# letters so that the text can be searched; the rest of the text is left untouched.
_PRESENTATION_FORMS_RE = re.compile("[\ufb00-\ufdff\ufe70-\ufefe]+")
_SENTENCE_END_RE = re.compile(r"[.!?:;。！？؟…][\"'”’»)\]]*$")
_NUMBERING_RE = re.compile(
    r"(?:(?:chapter|section|part|appendix|kapitel|chapitre)\s+)?[0-9ivxlcdm]{0,6}(?:\.[0-9]{1,3})*\.?",
    re.I,
)


def _corrupt(exc: BaseException) -> CorruptFileError:
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if "ended unexpectedly" in lowered or "eof" in lowered or "truncat" in lowered:
        reason = phrase("pdf.truncated", gettext_noop("the file is incomplete — it may have been cut off while uploading"))
    elif "xref" in lowered or "startxref" in lowered or "trailer" in lowered:
        reason = phrase("pdf.xref", gettext_noop("its table of contents (cross-reference table) is broken"))
    elif "/pages" in lowered or "page tree" in lowered or "/kids" in lowered:
        reason = phrase("pdf.pages", gettext_noop("its list of pages is broken"))
    elif "header" in lowered and "pdf" in lowered:
        reason = phrase("pdf.header", gettext_noop("it does not start like a PDF file"))
    else:
        return CorruptFileError(gettext_noop("This PDF is damaged and cannot be read (%(reason)s)."),
                                reason=text if len(text) <= 120 else text[:117] + "...")
    return CorruptFileError(gettext_noop("This PDF is damaged and cannot be read (%(reason)s)."), reason=reason)


def normalise_page_text(raw: str) -> list[str]:
    """Page text -> non-empty lines with collapsed whitespace and no control characters."""
    text = clean_text(raw)
    text = _PRESENTATION_FORMS_RE.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    lines = []
    for line in text.split("\n"):
        line = _SPACES_RE.sub(" ", line).strip()
        lines.append(line)
    return lines


def _norm_title(title: str) -> str:
    return _SPACES_RE.sub(" ", title).strip().casefold()


def _line_is_title(line: str, title_norm: str) -> bool:
    line_norm = line.casefold()
    if line_norm == title_norm:
        return True
    if not line_norm.endswith(title_norm):
        return False
    prefix = line_norm[: len(line_norm) - len(title_norm)]
    return prefix.endswith(" ") and bool(_NUMBERING_RE.fullmatch(prefix.strip()))


def _outline_paths(reader) -> list[tuple[int, tuple[str, ...]]]:
    """(0-based page index, heading path) for every outline entry, in outline order."""
    entries: list[tuple[int, tuple[str, ...]]] = []

    def walk(items, parents: tuple[str, ...], depth: int) -> None:
        if depth > _MAX_OUTLINE_DEPTH:
            return
        last_title: str | None = None
        for item in items:
            if len(entries) >= _MAX_OUTLINE_ENTRIES:
                return
            if isinstance(item, list):
                walk(item, parents + ((last_title,) if last_title else ()), depth + 1)
                continue
            try:
                title = _SPACES_RE.sub(" ", clean_text(str(item.title or ""))).strip()
            except Exception:  # noqa: BLE001 - a broken entry must not break the document
                title = ""
            last_title = title or None
            if not title:
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # noqa: BLE001
                page = None
            if page is not None and page >= 0:
                entries.append((page, parents + (title,)))

    walk(reader.outline, (), 0)
    return entries


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Group a page's lines into paragraphs: blank lines, or a short line ending a sentence."""
    widths = sorted(len(line) for line in lines if line)
    typical = widths[int(0.9 * (len(widths) - 1))] if len(widths) >= 3 else 0
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if not line:
            if current:
                paragraphs.append(current)
                current = []
            continue
        current.append(line)
        if typical and len(line) < 0.8 * typical and _SENTENCE_END_RE.search(line):
            paragraphs.append(current)
            current = []
    if current:
        paragraphs.append(current)
    return paragraphs


class PdfExtraction(Extraction):
    mime_type = MIME_PDF

    def __init__(self, path: Path, *, limits: Limits, on_progress=None, on_status=None,
                 language: str = "", ocr: OcrConfig | None = None):
        super().__init__(on_progress=on_progress, limits=limits)
        self.path = Path(path)
        self._ocr_config = ocr or OcrConfig()
        self._language = language
        self._on_status = on_status
        self._pdf_ocr: PdfOcr | None = None
        self._failed_pages: list[int] = []
        self._repeated: set[str] = set()
        self._outline_warning: str | None = None
        # 1-based page -> the label printed on it, where known (complete once blocks() is exhausted).
        self.page_labels: dict[int, str] = {}
        self._reader = self._open()
        self.pages_total = self._count_pages()

    # -- opening ---------------------------------------------------------------
    def _open(self):
        from pypdf import PdfReader
        from pypdf import PasswordType
        from pypdf.errors import FileNotDecryptedError

        try:
            reader = PdfReader(self.path)
        except FileNotDecryptedError as exc:
            raise EncryptedError(ENCRYPTED_MESSAGE) from exc
        except Exception as exc:  # noqa: BLE001 - pypdf raises many exception types
            raise _corrupt(exc) from exc
        try:
            encrypted = reader.is_encrypted
        except Exception as exc:  # noqa: BLE001
            raise _corrupt(exc) from exc
        if encrypted:
            try:
                result = reader.decrypt("")
            except Exception as exc:  # noqa: BLE001 - unsupported algorithm, missing crypto...
                raise EncryptedError(ENCRYPTED_MESSAGE) from exc
            if result == PasswordType.NOT_DECRYPTED:
                raise EncryptedError(ENCRYPTED_MESSAGE)
        return reader

    def _count_pages(self) -> int:
        from pypdf.errors import FileNotDecryptedError

        try:
            count = len(self._reader.pages)
        except FileNotDecryptedError as exc:
            raise EncryptedError(ENCRYPTED_MESSAGE) from exc
        except Exception as exc:  # noqa: BLE001
            raise _corrupt(exc) from exc
        if count == 0:
            raise CorruptFileError("This PDF is damaged and cannot be read (its list of pages is empty or broken).")
        if count > self.limits.max_pages:
            raise TooLargeError(gettext_noop("This PDF has %(count)s pages; the limit is %(limit)s pages."),
                                count=count, limit=self.limits.max_pages)
        return count

    def _outline_by_page(self) -> dict[int, list[tuple[str, ...]]]:
        try:
            entries = _outline_paths(self._reader)
        except Exception as exc:  # noqa: BLE001 - a broken outline only loses headings
            logger.info("PDF outline unreadable: %s", exc)
            self._outline_warning = Note("outline", gettext_noop(
                "The PDF's bookmarks could not be read; section titles are missing."))
            return {}
        by_page: dict[int, list[tuple[str, ...]]] = {}
        for page, path in sorted(entries, key=lambda e: e[0]):  # stable: keeps outline order
            by_page.setdefault(page, []).append(path)
        return by_page

    # -- pages -----------------------------------------------------------------
    def _page_lines(self, index: int) -> list[str] | None:
        try:
            raw = self._reader.pages[index].extract_text() or ""
        except Exception as exc:  # noqa: BLE001 - one broken page must not kill the document
            logger.info("PDF page %d unreadable: %s", index + 1, exc)
            return None
        return self._without_page_number(normalise_page_text(raw), index)

    @staticmethod
    def _without_page_number(lines: list[str], index: int) -> list[str]:
        """A first or last line holding just this page's number (header/footer) is noise: blanked."""
        number = str(index + 1)
        nonblank = [i for i, line in enumerate(lines) if line]
        for i in (nonblank[-1:] + nonblank[:1]) if len(nonblank) > 1 else []:
            if lines[i] == number:
                lines[i] = ""
        return lines

    def _drop_running_lines(self, lines: list[str]) -> list[str]:
        """Running headers and footers (the same line at the top or bottom of most pages) would
        repeat in every chunk and drown the search: they are left out."""
        nonblank = [i for i, line in enumerate(lines) if line and not line.startswith(_TABLE_MARK)]
        if self._repeated and len(nonblank) > 2 * EDGE_LINES:
            edges = nonblank[:EDGE_LINES] + nonblank[-EDGE_LINES:]
            # A line that also fills the middle of the page is content, not a header.
            middle = {edge_key(lines[i]) for i in nonblank[EDGE_LINES:-EDGE_LINES]}
            for i in edges:
                key = edge_key(lines[i])
                if key in self._repeated and key not in middle:
                    lines[i] = ""
        return lines

    def _iter_blocks(self) -> Iterator[Block]:
        self._failed_pages = []
        outline = self._outline_by_page()
        path: tuple[str, ...] = ()
        total = self.pages_total or 0
        self._pdf_ocr = PdfOcr(self.path, config=self._ocr_config, language_hint=self._language,
                               on_status=self._on_status)
        self._pdf_ocr.plan(total)
        self._repeated = self._pdf_ocr.repeated_lines()
        self._tables = PdfTables(self.path)
        self._printed: list[PrintedNumber | None] = []
        try:
            yield from self._pages(self._pdf_ocr, outline, path, total)
        finally:
            self._pdf_ocr.close()
            self._tables.close()
        labels = pdf_page_labels(self._reader) or printed_labels(self._printed)
        self.page_labels = {page: clean_field(label) for page, label in labels.items()}
        self.ocr = self._pdf_ocr.summary()
        self._finish_warnings()

    def labels_so_far(self) -> dict[int, str]:
        """As `page_labels` will be, for the pages read so far (a printed number needs a neighbour's
        to agree, so the last page read may still gain or lose its label)."""
        return pdf_page_labels(self._reader) or printed_labels(getattr(self, "_printed", []))

    def _pages(self, ocr: PdfOcr, outline, path: tuple[str, ...], total: int) -> Iterator[Block]:
        for index in range(total):
            page_number = index + 1
            lines = self._page_lines(index)
            ocr_page = ocr.read(index, sum(len(x.replace(" ", "")) for x in lines or ()))
            confidence = None
            if ocr_page is not None and ocr_page.text:
                lines, confidence = normalise_page_text(ocr_page.text), ocr_page.confidence
            self._printed.append(printed_page_number(lines or []))
            tables: list[tuple[list[str], str | None]] = []  # rows, and the header rows (None: none)
            if ocr_page is None and lines and ocr.has_grid(index):
                lines = self._with_tables(index, lines, tables)
            if ocr_page is None and lines and not tables and looks_tabular(lines):
                lines = self._with_layout_tables(index, lines, tables)
            if ocr_page is None and lines:
                lines = self._drop_running_lines(lines)
            if lines is None:
                self._failed_pages.append(page_number)
                lines = []
            if not any(lines):
                self.empty_pages.append(page_number)
            # Where on this page does each outline entry start?  Titles found as a line
            # become heading blocks; the others take effect at the top of the page.
            starts: dict[int, list[tuple[tuple[str, ...], bool]]] = {}
            cursor = 0
            for entry_path in outline.get(index, ()):
                title = _norm_title(entry_path[-1])
                found = next((j for j in range(cursor, len(lines))
                              if lines[j] and _line_is_title(lines[j], title)), None)
                if found is None:
                    starts.setdefault(cursor, []).append((entry_path, False))
                else:
                    starts.setdefault(found, []).append((entry_path, True))
                    cursor = found + 1
            segment: list[str] = []
            segment_path = path
            for j, line in enumerate(lines + [""]):
                if line.startswith(_TABLE_MARK):  # a table found by pdfplumber, in its place
                    yield from self._page_paragraphs(segment, page_number, segment_path, confidence)
                    segment = []
                    rows, header = tables[int(line[len(_TABLE_MARK):])]
                    yield Block("\n".join(rows), page_number, path, "table", table_header=header)
                    continue
                changes = starts.get(j)
                if changes:
                    yield from self._page_paragraphs(segment, page_number, segment_path, confidence)
                    segment = []
                    heading_line = None
                    for entry_path, located in changes:
                        path = entry_path
                        if located:
                            heading_line = line
                    segment_path = path
                    if heading_line:
                        yield Block(heading_line, page_number, path, "heading", ocr_confidence=confidence)
                        continue
                segment.append(line)
            yield from self._page_paragraphs(segment, page_number, segment_path, confidence)
            if self.on_progress is not None:
                self.on_progress(page_number, total)

    def _with_tables(self, index: int, lines: list[str], tables: list[tuple[list[str], str | None]]) -> list[str]:
        """The page's lines from pdfplumber, each table replaced by a marker line (its rows go to
        ``tables``); pypdf's ``lines`` when pdfplumber finds no table."""
        regions = self._tables.regions(index)
        if not regions:
            return lines
        out: list[str] = []
        for region in regions:
            if region.kind == "table":
                out.extend(["", f"{_TABLE_MARK}{len(tables)}", ""])
                tables.append((region.rows or [], region.header))
            else:
                out.extend(normalise_page_text(region.text))
        return out

    def _with_layout_tables(self, index: int, lines: list[str],
                            tables: list[tuple[list[str], str | None]]) -> list[str]:
        """The page's lines from pypdf's layout mode, each table without rules replaced by a marker line
        (documents/extraction/pdf_layout_tables.py); pypdf's plain ``lines`` when it finds none."""
        try:
            raw = self._reader.pages[index].extract_text(extraction_mode="layout") or ""
        except Exception as exc:  # noqa: BLE001 - the plain text is the fallback
            logger.info("PDF page %d: no layout text: %s", index + 1, exc)
            return lines
        layout = clean_text(raw).split("\n")
        found = find_tables(layout)
        if not found:
            return lines
        out: list[str] = []
        at = 0
        for table in found:
            out.extend(normalise_page_text("\n".join(layout[at:table.first])))
            out.extend(["", f"{_TABLE_MARK}{len(tables)}", ""])
            tables.append((table.rows, "\n".join(table.rows[:table.header_rows]) or None))
            at = table.last + 1
        out.extend(normalise_page_text("\n".join(layout[at:])))
        return self._without_page_number(out, index)

    @staticmethod
    def _page_paragraphs(lines: list[str], page_number: int, path: tuple[str, ...],
                         confidence: float | None = None) -> Iterator[Block]:
        for para in _paragraphs(lines):
            yield Block("\n".join(para), page_number, path, "paragraph", ocr_confidence=confidence)

    def _finish_warnings(self) -> None:
        if self._outline_warning:
            self.warnings.append(self._outline_warning)
        failed = set(self._failed_pages)
        if failed and len(failed) < (self.pages_total or 0):
            pages = sorted(failed)
            self.warnings.append(Note("damaged_pages", gettext_noop(
                "Page %(pages)s could not be read (damaged?); it is not searchable.") if len(pages) == 1 else
                gettext_noop("Pages %(pages)s could not be read (damaged?); they are not searchable."),
                pages=format_page_list(pages)))
        ocr = self._pdf_ocr
        if ocr is not None:
            self.warnings.extend(ocr.warnings())
        ocr_failed = {p for p, r in ocr.results.items() if r.error} if ocr is not None else set()
        blank = [p for p in self.empty_pages if p not in failed and p not in ocr_failed]
        if blank and len(self.empty_pages) < (self.pages_total or 0):
            why = ocr.status.reason if ocr is not None and not ocr.available else ""
            one = len(blank) == 1
            if why:
                self.warnings.append(Note("blank_pages", gettext_noop(
                    "Page %(pages)s has no text layer (scanned?); it is not searchable. %(why)s.") if one else
                    gettext_noop("Pages %(pages)s have no text layer (scanned?); they are not searchable. %(why)s."),
                    pages=format_page_list(blank), why=why))
            else:
                self.warnings.append(Note("blank_pages", gettext_noop(
                    "Page %(pages)s has no text layer (scanned?); it is not searchable.") if one else
                    gettext_noop("Pages %(pages)s have no text layer (scanned?); they are not searchable."),
                    pages=format_page_list(blank)))

    def _damaged_error(self, exc: Exception) -> Exception:
        return _corrupt(exc)

    def _no_text_error(self) -> Exception:
        total = self.pages_total or 0
        if total and len(self._failed_pages) == total:
            return CorruptFileError("This PDF is damaged and cannot be read (none of its pages could be read).")
        if total == 0:
            return NoTextError(gettext_noop("This PDF has no pages."))
        one = total == 1
        ocr = self._pdf_ocr
        if ocr is None or not ocr.available:
            reason: dict | str = (ocr.status.reason or "") if ocr is not None else phrase("ocr.unavailable", gettext_noop(
                "OCR is not available"))
            return NoTextError(gettext_noop("No text layer on the only page — scanned PDF? %(reason)s.") if one else
                               gettext_noop("No text layer on any of the %(count)s pages — scanned PDF? %(reason)s."),
                               count=total, reason=reason)
        errors = sorted({r.error for r in ocr.results.values() if r.error})
        if errors:
            return NoTextError(
                gettext_noop("No text layer on the only page, and OCR could not read it: %(errors)s.") if one else
                gettext_noop("No text layer on any of the %(count)s pages, and OCR could not read it: %(errors)s."),
                count=total, errors="; ".join(errors))
        if not ocr.results:
            return NoTextError(
                gettext_noop("No text layer on the only page, and no scanned image on it for OCR to read.") if one else
                gettext_noop("No text layer on any of the %(count)s pages, and no scanned image on them for OCR "
                             "to read."), count=total)
        return NoTextError(gettext_noop("No text layer on the only page, and OCR found no words on it.") if one else
                           gettext_noop("No text layer on any of the %(count)s pages, and OCR found no words on them."),
                           count=total)
