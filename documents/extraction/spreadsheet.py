"""Spreadsheets (.xlsx, CSV), slide decks (.pptx) and web pages (HTML) as text blocks.

A sheet or a slide is a "page" (`Block.page_number`, counted in `pages_total`): citations say
"sheet 2" or "slide 7" through the page number. Rows become `| a | b |` lines with the first
non-empty row as the header. Office files go through the same zip-bomb check as .docx first.
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import CorruptFileError, EncryptedError, NoTextError
from documents.extraction.types import (MIME_CSV, MIME_HTML, MIME_PPTX, MIME_XLSX, Block, Extraction, Limits,
                                     clean_text, table_row)


MAX_SHEET_CELLS = 2_000_000  # cells read per workbook; a bigger one is cut with a warning
_WS_RE = re.compile(r"[^\S\n]+")


def _line(text: str) -> str:
    return _WS_RE.sub(" ", clean_text(text or "")).strip()


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


def _read(path: Path, limits: Limits, extraction: Extraction) -> str:
    from documents.extraction.errors import EmptyFileError
    from documents.extraction.text import decode_bytes

    data = path.read_bytes()
    if not data.strip():
        raise EmptyFileError("This file is empty.")
    text, extraction.encoding, warnings = decode_bytes(data, sample_bytes=limits.encoding_sample_bytes)
    extraction.warnings.extend(warnings)
    return clean_text(text)


def _open_office(path: Path, limits: Limits, what: str, opener):
    from documents.extraction.docx import check_zip

    check_zip(path, limits, what=what, main_part=None)
    try:
        return opener(str(path))
    except Exception as exc:  # noqa: BLE001 - the libraries raise many kinds
        reason = str(exc) or type(exc).__name__
        raise CorruptFileError(f"This {what} is damaged and cannot be read ({reason[:117]}).") from exc


class XlsxExtraction(Extraction):
    mime_type = MIME_XLSX

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        import openpyxl

        self._book = _open_office(Path(path), limits, "Excel file",
                                  lambda p: openpyxl.load_workbook(p, read_only=True, data_only=True))
        self.pages_total = len(self._book.worksheets)

    def _iter_blocks(self) -> Iterator[Block]:
        cells = 0
        try:
            for number, sheet in enumerate(self._book.worksheets, 1):
                title = _line(sheet.title) or f"Sheet {number}"
                rows = []
                for row in sheet.iter_rows(values_only=True):
                    cells += len(row)
                    if cells > MAX_SHEET_CELLS:
                        self.warnings.append(f"Only the first {MAX_SHEET_CELLS:,} cells were read; the rest of "
                                             f"the workbook (from sheet '{title}') is not searchable.")
                        break
                    values = [_cell(v) for v in row]
                    while values and not values[-1]:
                        values.pop()
                    if any(values):
                        rows.append(table_row(values))
                yield Block(title, number, (title,), "heading")
                if rows:
                    yield Block("\n".join(rows), number, (title,), "table", table_header=rows[0])
                if self.on_progress is not None:
                    self.on_progress(number, len(self._book.worksheets))
                if cells > MAX_SHEET_CELLS:
                    break
        finally:
            self._book.close()

    def _no_text_error(self) -> Exception:
        return NoTextError("This spreadsheet has no filled cells.")

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This Excel file is damaged and cannot be read.")


class PptxExtraction(Extraction):
    mime_type = MIME_PPTX

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        import pptx

        self._deck = _open_office(Path(path), limits, "PowerPoint file", pptx.Presentation)
        self.pages_total = len(self._deck.slides)

    def _iter_blocks(self) -> Iterator[Block]:
        for number, slide in enumerate(self._deck.slides, 1):
            title_shape = slide.shapes.title
            title = _line(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
            path = (title or f"Slide {number}",)
            yield Block(f"Slide {number}: {title}" if title else f"Slide {number}", number, path, "heading")
            for shape in _shapes(slide.shapes):
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                if getattr(shape, "has_table", False) and shape.has_table:
                    rows = [table_row([_line(c.text) for c in r.cells]) for r in shape.table.rows]
                    rows = [r for r in rows if r.strip("| ")]
                    if rows:
                        yield Block("\n".join(rows), number, path, "table", table_header=rows[0])
                elif shape.has_text_frame:
                    lines = [_line(p.text) for p in shape.text_frame.paragraphs]
                    text = "\n".join(x for x in lines if x)
                    if text:
                        yield Block(text, number, path, "paragraph")
            if slide.has_notes_slide:
                notes = _line(slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else "")
                if notes:
                    yield Block(f"Notes: {notes}", number, path, "paragraph")
            if self.on_progress is not None:
                self.on_progress(number, len(self._deck.slides))

    def _no_text_error(self) -> Exception:
        return NoTextError("This presentation contains no text (only pictures?).")

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This PowerPoint file is damaged and cannot be read.")


def _shapes(shapes, depth: int = 0):
    """Shapes in slide order, looking inside groups."""
    for shape in shapes:
        if shape.shape_type == 6 and depth < 10:  # MSO_SHAPE_TYPE.GROUP
            yield from _shapes(shape.shapes, depth + 1)
        else:
            yield shape


def sniff_csv(text: str, *, named_csv: bool = False) -> str | None:
    """The delimiter when ``text`` (a sample) is a table: the same 2+ fields on every line.

    Prose has commas too, so without a .csv/.tsv name it takes 5+ lines of short fields
    (25 characters on average) that mostly do not end like sentences.
    """
    lines = [line for line in text.splitlines()[:50] if line.strip()]
    if len(lines) < (2 if named_csv else 5):
        return None
    complete = lines[:-1] if len(lines) > 5 else lines  # the sample's last line may be cut
    for delimiter in (",", ";", "\t", "|"):
        try:
            rows = list(csv.reader(complete, delimiter=delimiter))
        except csv.Error:
            continue
        counts = {len(row) for row in rows}
        if len(counts) != 1 or counts.pop() < 2:
            continue
        if named_csv:
            return delimiter
        fields = [f for row in rows for f in row]
        sentences = sum(line.rstrip().endswith((".", "!", "?")) for line in complete)
        if sum(len(f) for f in fields) / len(fields) <= 25 and sentences * 2 < len(complete):
            return delimiter
    return None


class CsvExtraction(Extraction):
    mime_type = MIME_CSV

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(pages_total=1, on_progress=on_progress, limits=limits)
        self.text = _read(Path(path), limits, self)

    def _iter_blocks(self) -> Iterator[Block]:
        delimiter = sniff_csv(self.text[:64 * 1024], named_csv=True) or ","
        rows = [table_row([_cell(v) for v in row]) for row in csv.reader(io.StringIO(self.text), delimiter=delimiter)
                if any(v.strip() for v in row)]
        if rows:
            yield Block("\n".join(rows), 1, (), "table", table_header=rows[0])


# --- HTML ----------------------------------------------------------------------------------------

_DROP = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "iframe",
         "svg", "button", "select", "menu")
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "li", "pre", "blockquote", "dd", "dt", "figcaption", "caption", "address", "summary"}


def looks_like_html(text: str) -> bool:
    head = text[:2048].lstrip().lower()
    return head.startswith(("<!doctype html", "<html")) or ("<html" in head and "<body" in text[:65536].lower())


class HtmlExtraction(Extraction):
    mime_type = MIME_HTML

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        self.text = _read(Path(path), limits, self)

    def _iter_blocks(self) -> Iterator[Block]:
        yield from html_blocks(self.text)

    def _no_text_error(self) -> Exception:
        return NoTextError("This web page has no text in its main content.")

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This web page could not be read.")


def html_blocks(html: str, path: tuple[str, ...] = ()) -> Iterator[Block]:
    """The main content of an HTML page as blocks; headings nest below ``path``."""
    import lxml.html

    if not html.strip():
        return
    root = lxml.html.document_fromstring(html.encode("utf-8"),
                                         parser=lxml.html.HTMLParser(encoding="utf-8", no_network=True))
    for element in root.xpath("//*[@role='navigation' or @role='banner' or @role='contentinfo' "
                              "or @aria-hidden='true' or @hidden]"):
        element.drop_tree()
    for element in [e for e in root.iter(*_DROP) if e.getparent() is not None]:
        element.drop_tree()
    # The main content when the page marks it; else the body (navigation already dropped).
    main = (root.xpath("//main") or root.xpath("//*[@role='main']") or root.xpath("//article")
            or root.xpath("//body") or [root])[0]
    base = path
    stack: list[tuple[int, str]] = []
    for element in main.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag in _HEADINGS:
            text = _line(element.text_content())
            if text:
                level = _HEADINGS[tag]
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
                path = base + tuple(t for _, t in stack)
                yield Block(text, None, path, "heading")
        elif tag == "table":
            rows = [table_row([_line(c.text_content()) for c in tr.xpath("./th|./td")])
                    for tr in element.iter("tr") if _nearest_table(tr) is element]
            rows = [r for r in rows if r.strip("| ")]
            if rows:
                yield Block("\n".join(rows), None, path, "table", table_header=rows[0])
        elif tag in _BLOCKS and not _inside(element, _BLOCKS | {"table"}):
            text = _line(element.text_content()) if tag != "pre" else clean_text(element.text_content()).strip("\n")
            if text:
                yield Block(text, None, path, "code" if tag == "pre" else "paragraph")
        elif tag == "div" and element.text and element.text.strip():
            # Text written straight into a <div> (no <p>) is content too.
            yield Block(_line(element.text), None, path, "paragraph")


def _nearest_table(element):
    parent = element.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def _inside(element, tags: set[str]) -> bool:
    parent = element.getparent()
    while parent is not None:
        if parent.tag in tags:
            return True
        parent = parent.getparent()
    return False


__all__ = ["MIME_CSV", "MIME_HTML", "MIME_PPTX", "MIME_XLSX", "CsvExtraction", "EncryptedError", "HtmlExtraction",
           "PptxExtraction", "XlsxExtraction", "looks_like_html", "sniff_csv"]
