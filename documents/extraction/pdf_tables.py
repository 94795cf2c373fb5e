"""Tables in PDFs with pdfplumber: ruled tables become `| a | b |` rows, the text around them stays text.

pypdf reads a table as loose words in reading order, so a row's cells run together; pdfplumber
finds ruled tables from the page's lines and rectangles. It is slower (pdfminer parses the page
again), so only pages whose drawing looks like a grid (PDFium counts their path objects in
`documents.extraction.pdf_ocr.PdfOcr.plan`) are given to it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from documents.extraction.pdf_layout_tables import is_figure_row, tidy_cells
from documents.extraction.types import table_rows

logger = logging.getLogger(__name__)

MIN_PATHS = 4  # a ruled table has at least a frame of four lines (or one rectangle per cell)
_SETTINGS = {"vertical_strategy": "lines", "horizontal_strategy": "lines"}


@dataclass(slots=True)
class PageRegion:
    kind: str  # "text" | "table"
    text: str  # for "text": the region's raw text
    rows: list[str] | None = None  # for "table": "| a | b |" lines, the header first
    header: str | None = None  # the header row; None when the first row is already figures


class PdfTables:
    """Opens the PDF with pdfplumber on the first page that needs it; closed with `close()`."""

    def __init__(self, path: Path):
        self.path = path
        self._pdf: Any = None  # a pdfplumber.PDF once opened
        self.failed = False

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None

    def regions(self, index: int) -> list[PageRegion] | None:
        """The page cut into text and table regions, top to bottom; None when it has no table."""
        if self.failed:
            return None
        try:
            if self._pdf is None:
                import pdfplumber

                self._pdf = pdfplumber.open(str(self.path))
            page = self._pdf.pages[index]
            try:
                return _regions(page)
            finally:
                page.close()  # drops the page's parsed objects: memory stays flat
        except Exception as exc:  # noqa: BLE001 - pypdf's text is the fallback for odd pages
            logger.info("pdfplumber could not read page %d: %s", index + 1, exc)
            if self._pdf is None:
                self.failed = True
            return None


def _regions(page) -> list[PageRegion] | None:
    found = [t for t in page.find_tables(table_settings=_SETTINGS) if t.bbox]
    tables = []
    for table in sorted(found, key=lambda t: t.bbox[1]):
        cells = [tidy_cells([c or "" for c in row]) for row in table.extract()]
        rows = table_rows(cells)
        # One row or one column is a box or a rule, not a table.
        if len(rows) >= 2 and max(len(r) for r in table.extract()) >= 2:
            first = next(c for c in cells if any(x.strip() for x in c))
            tables.append((table.bbox, rows, None if is_figure_row(first) else rows[0]))
    if not tables:
        return None
    regions: list[PageRegion] = []
    top = 0.0
    width, height = float(page.width), float(page.height)
    for (x0, t_top, x1, t_bottom), rows, header in tables:
        if t_top > top:
            text = page.crop((0, top, width, t_top), strict=False).extract_text() or ""
            if text.strip():
                regions.append(PageRegion("text", text))
        regions.append(PageRegion("table", "", rows, header))
        top = max(top, t_bottom)
    if top < height:
        text = page.crop((0, top, width, height), strict=False).extract_text() or ""
        if text.strip():
            regions.append(PageRegion("text", text))
    return regions
