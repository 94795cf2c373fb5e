"""Which pages of a PDF need OCR, reading them, and what to tell the user about it.

Used by `documents.extraction.pdf.PdfExtraction`: `PdfOcr.plan()` looks at every page once with
PDFium (characters in the text layer, area covered by images) before the text pass, so the
progress can say "OCR 12 of 40 pages" from the first scanned page on.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from documents.extraction.errors import Note, gettext_noop, phrase
from documents.extraction.types import format_page_list
from documents.extraction.ocr import OcrConfig, OcrEngine, OcrPage, OcrStatus, ocr_status
from documents.extraction.pdf_tables import MIN_PATHS

logger = logging.getLogger(__name__)

# A page with no text layer is only worth OCR when images cover at least this much of it
# (a blank separator page is not).
MIN_SCAN_COVERAGE = 0.1

EDGE_LINES = 2  # lines at the top and at the bottom of a page that may be a header/footer
SURVEY_WINDOW = 100  # pages surveyed ahead of extraction at a time
EDGE_SAMPLE_PAGES = 40  # pages whose text is read to find running headers/footers
MAX_OBJECTS = 5000  # objects looked at per page (a hostile page may hold millions)
REPEATED_SHARE = 0.6  # on this share of the pages (or more) such a line is a running header/footer
_DIGITS_RE = re.compile(r"\d+")


def edge_key(line: str) -> str:
    """A line compared across pages: spaces collapsed, case folded, numbers ("Page 3 of 9") folded."""
    return _DIGITS_RE.sub("#", " ".join(line.split()).casefold())


def _survey(page, raw) -> tuple[float, int]:
    """(share of the page covered by images, number of path objects) from PDFium's object list.

    The raw API on top-level objects is about 0.5 ms a page; only pages drawing through form
    XObjects are walked deeper.
    """
    width, height = page.get_size()
    area = max(width * height, 1.0)
    covered, paths, forms = 0.0, 0, False
    for k in range(min(raw.FPDFPage_CountObjects(page.raw), MAX_OBJECTS)):
        obj = raw.FPDFPage_GetObject(page.raw, k)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == raw.FPDF_PAGEOBJ_PATH:
            paths += 1
        elif kind == raw.FPDF_PAGEOBJ_FORM:
            forms = True
        elif kind == raw.FPDF_PAGEOBJ_IMAGE:
            covered += _area(_bounds(obj, raw), width, height)
    if forms and covered < area / 2:
        covered = sum(_area(o.get_bounds(), width, height)
                      for o in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=3))
    return min(1.0, covered / area), paths


def _bounds(obj, raw) -> tuple[float, float, float, float]:
    import ctypes

    values = [ctypes.c_float() for _ in range(4)]
    if not raw.FPDFPageObj_GetBounds(obj, *(ctypes.byref(v) for v in values)):
        return (0.0, 0.0, 0.0, 0.0)
    left, bottom, right, top = (v.value for v in values)
    return left, bottom, right, top


def _area(bounds, width: float, height: float) -> float:
    left, bottom, right, top = bounds
    return max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))


LANGUAGE_NAMES = {"eng": "English", "deu": "German", "fra": "French", "spa": "Spanish", "ces": "Czech",
                  "rus": "Russian", "vie": "Vietnamese", "chi_sim": "Chinese (simplified)"}


class PdfOcr:
    def __init__(self, path: Path, *, config: OcrConfig, language_hint: str = "",
                 on_status: Callable[[str], None] | None = None):
        self.path = path
        self.config = config
        self.status: OcrStatus = ocr_status(config)
        self.language_hint = language_hint
        self.on_status = on_status
        self.planned: set[int] = set()  # 0-based indexes of the pages to OCR
        self.table_pages: set[int] = set()  # 0-based indexes of pages with drawn lines (tables?)
        self.coverage: dict[int, float] = {}  # 0-based index -> share of the page under images
        self._pdfium: Any = None  # a pypdfium2.PdfDocument once opened
        self._count = 0
        self._surveyed = 0
        self._edge_counts: dict[str, int] = {}
        self._pages_seen = 0
        self.results: dict[int, OcrPage] = {}  # 1-based page number -> result
        self.done = 0
        self._engine: OcrEngine | None = None

    @property
    def available(self) -> bool:
        return self.status.available

    def plan(self, page_count: int) -> None:
        """Open the PDF with PDFium and read a sample of pages for running headers/footers.

        Pages are surveyed (images, drawn lines) a window at a time as extraction reaches them,
        so a 3,000-page PDF starts producing text at once.
        """
        try:
            import pypdfium2 as pdfium
        except ImportError:
            self.status = OcrStatus(False, reason=phrase("ocr.no_pdfium", gettext_noop(
                "OCR is not available on this server (pypdfium2 is missing)")))
            return
        try:
            self._pdfium = pdfium.PdfDocument(str(self.path))
        except Exception as exc:  # noqa: BLE001 - pypdf read it; PDFium may still refuse it
            logger.info("PDFium cannot open the PDF: %s", exc)
            return
        self._count = min(page_count, len(self._pdfium))
        # Running headers show on any sample of pages: reading the text of a few is enough.
        step = max(1, self._count // EDGE_SAMPLE_PAGES)
        for index in range(0, self._count if self._count >= 3 else 0, step):
            page = self._pdfium[index]
            try:
                textpage = page.get_textpage()
                try:
                    self._edge_lines(textpage.get_text_range() if textpage.count_chars() else "")
                finally:
                    textpage.close()
            except Exception as exc:  # noqa: BLE001 - one odd page only loses its vote
                logger.info("PDFium could not read page %d: %s", index + 1, exc)
            finally:
                page.close()

    def _survey_to(self, index: int) -> None:
        """Survey pages up to a window past ``index``: images (scans?) and drawn lines (tables?)."""
        if index < self._surveyed or self._pdfium is None:
            return
        import pypdfium2.raw as raw

        end = min(self._count, index + SURVEY_WINDOW)
        for i in range(self._surveyed, end):
            page = self._pdfium[i]
            try:
                coverage, paths = _survey(page, raw)
                if paths >= MIN_PATHS:
                    self.table_pages.add(i)
                if coverage >= MIN_SCAN_COVERAGE:
                    self.coverage[i] = coverage
                    if self.available and coverage >= self.config.image_coverage:
                        self.planned.add(i)  # what the progress counts against; read() decides
            except Exception as exc:  # noqa: BLE001 - one odd page only loses its OCR
                logger.info("PDFium could not inspect page %d: %s", i + 1, exc)
            finally:
                page.close()
        self._surveyed = end

    def has_grid(self, index: int) -> bool:
        self._survey_to(index)
        return index in self.table_pages

    def _edge_lines(self, text: str) -> None:
        """Count the first and last lines of a page (numbers folded): page headers/footers repeat."""
        lines = [line for line in (edge_key(x) for x in text.splitlines()) if line]
        self._pages_seen += 1
        for key in set(lines[:EDGE_LINES] + lines[-EDGE_LINES:]):
            self._edge_counts[key] = self._edge_counts.get(key, 0) + 1

    def repeated_lines(self) -> set[str]:
        """Edge lines found on most pages (at least 3): running headers and footers."""
        if self._pages_seen < 3:
            return set()
        need = max(3, int(self._pages_seen * REPEATED_SHARE + 0.999))
        return {key for key, n in self._edge_counts.items() if n >= need}

    def read(self, index: int, chars: int) -> OcrPage | None:
        """OCR page ``index`` (0-based) when its text layer (``chars`` non-space characters, from
        pypdf) is empty or thin and images cover it; None otherwise."""
        if not self.available:
            return None
        self._survey_to(index)
        coverage = self.coverage.get(index, 0.0)
        if not ((chars == 0 and coverage >= MIN_SCAN_COVERAGE)
                or (chars <= self.config.thin_text_chars and coverage >= self.config.image_coverage)):
            return None
        self.planned.add(index)
        if self._engine is None:
            self._engine = OcrEngine(self.status, self.config, language_hint=self.language_hint)
        if self.on_status is not None:
            self.on_status(Note("ocr_progress", gettext_noop("OCR %(done)s of %(total)s pages"), done=self.done + 1,
                                total=max(len(self.planned), self.done + 1)))
        try:
            result = self._engine.read(self.path, index)
        except Exception as exc:  # noqa: BLE001 - a page the renderer cannot draw stays unread
            logger.info("OCR of page %d failed: %s", index + 1, exc)
            result = OcrPage("", 0.0, "", error="the page could not be rendered for OCR")
        self.done += 1
        self.results[index + 1] = result
        if self.done == len(self.planned) and self.on_status is not None:
            self.on_status(Note("ocr_done", gettext_noop("OCR done: %(done)s of %(total)s pages"), done=self.done,
                                total=len(self.planned)))
        return result

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
        if self._pdfium is not None:
            self._pdfium.close()
            self._pdfium = None

    # -- what to tell the user ----------------------------------------------------------------
    @property
    def language(self) -> str:
        return (self._engine.choice.language or "") if self._engine else ""

    def summary(self) -> dict:
        """For the document: pages read by OCR, their mean confidence and the language used."""
        read = {p: r for p, r in self.results.items() if r.text}
        if not read:
            return {}
        return {
            "pages": sorted(read),
            "confidence": round(sum(r.confidence for r in read.values()) / len(read), 1),
            "language": self.language,
            "language_decided_by": self._engine.choice.decided_by if self._engine else "",
        }

    def warnings(self) -> list[str]:
        out: list[str] = []
        if self._engine is not None:
            out.extend(self._engine.choice.notes)
        read = {p: r for p, r in self.results.items() if r.text}
        if read:
            name = LANGUAGE_NAMES.get(self.language, self.language)
            pages = sorted(read)
            out.append(Note("ocr_read", gettext_noop(
                "Page %(pages)s had no text layer and was read by OCR (%(language)s; mean confidence %(confidence)s%%).")
                if len(pages) == 1 else gettext_noop(
                "Pages %(pages)s had no text layer and were read by OCR (%(language)s; mean confidence "
                "%(confidence)s%%)."), pages=format_page_list(pages), language=name,
                confidence=f"{self.summary()['confidence']:.0f}"))
        low = sorted(p for p, r in read.items() if r.confidence < self.config.low_confidence)
        if low:
            out.append(Note("ocr_low_confidence", gettext_noop(
                "Page %(pages)s was read by OCR with low confidence (under %(limit)s%%); the text may contain errors.")
                if len(low) == 1 else gettext_noop(
                "Pages %(pages)s were read by OCR with low confidence (under %(limit)s%%); the text may contain "
                "errors."), pages=format_page_list(low), limit=f"{self.config.low_confidence:.0f}"))
        failed: dict[str, list[int]] = {}
        for page, result in self.results.items():
            if result.error:
                failed.setdefault(result.error, []).append(page)
        for error, pages in failed.items():
            out.append(Note("ocr_failed", gettext_noop("Page %(pages)s: %(error)s; not searchable.") if len(pages) == 1
                            else gettext_noop("Pages %(pages)s: %(error)s; not searchable."),
                            pages=format_page_list(sorted(pages)), error=error))
        return out
