"""Spreadsheets (.xlsx, CSV) as text blocks.

A sheet is a "page" (`Block.page_number`, counted in `pages_total`): citations say "sheet 2"
through the page number. Rows become `| a | b |` lines with the first non-empty row as the header.
An .xlsx goes through the same zip-bomb check as .docx first.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import CorruptFileError, NoTextError, Note, gettext_noop
from documents.extraction.helpers import open_office, read_text_file, squeeze_spaces
from documents.extraction.types import EXCEL_FILE, MIME_CSV, MIME_XLSX, Block, Extraction, Limits, table_row


MAX_SHEET_CELLS = 2_000_000  # cells read per workbook; a bigger one is cut with a warning


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


class XlsxExtraction(Extraction):
    mime_type = MIME_XLSX

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        import openpyxl

        self._book = open_office(Path(path), limits, EXCEL_FILE,
                                  lambda p: openpyxl.load_workbook(p, read_only=True, data_only=True))
        self.pages_total = len(self._book.worksheets)

    def _iter_blocks(self) -> Iterator[Block]:
        cells = 0
        try:
            for number, sheet in enumerate(self._book.worksheets, 1):
                title = squeeze_spaces(sheet.title) or f"Sheet {number}"
                rows = []
                for row in sheet.iter_rows(values_only=True):
                    cells += len(row)
                    if cells > MAX_SHEET_CELLS:
                        self.warnings.append(Note("cells_limit", gettext_noop(
                            "Only the first %(limit)s cells were read; the rest of the workbook (from sheet "
                            "'%(sheet)s') is not searchable."), limit=MAX_SHEET_CELLS, sheet=title))
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
        return NoTextError(gettext_noop("This spreadsheet has no filled cells."))

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This Excel file is damaged and cannot be read.")


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
        self.text = read_text_file(Path(path), limits, self)

    def _iter_blocks(self) -> Iterator[Block]:
        delimiter = sniff_csv(self.text[:64 * 1024], named_csv=True) or ","
        rows = [table_row([_cell(v) for v in row]) for row in csv.reader(io.StringIO(self.text), delimiter=delimiter)
                if any(v.strip() for v in row)]
        if rows:
            yield Block("\n".join(rows), 1, (), "table", table_header=rows[0])


__all__ = ["CsvExtraction", "XlsxExtraction", "sniff_csv"]
