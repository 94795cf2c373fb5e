"""Which pages of a PDF need OCR, reading them, and what to tell the user about it.

Used by `documents.extract_pdf.PdfExtraction`: `PdfOcr.plan()` looks at every page once with
PDFium (characters in the text layer, area covered by images) before the text pass, so the
progress can say "OCR 12 of 40 pages" from the first scanned page on.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from documents.extract_types import format_page_list
from documents.ocr import OcrConfig, OcrEngine, OcrPage, OcrStatus, ocr_status

logger = logging.getLogger(__name__)

# A page with no text layer is only worth OCR when images cover at least this much of it
# (a blank separator page is not).
MIN_SCAN_COVERAGE = 0.1

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
        self.results: dict[int, OcrPage] = {}  # 1-based page number -> result
        self.done = 0
        self._engine: OcrEngine | None = None

    @property
    def available(self) -> bool:
        return self.status.available

    def plan(self, page_count: int) -> None:
        """Find the scanned pages: no text (or a thin one) and mostly covered by images."""
        if not self.available:
            return
        try:
            import pypdfium2 as pdfium
            import pypdfium2.raw as raw
        except ImportError:
            self.status = OcrStatus(False, reason="OCR is not available on this server (pypdfium2 is missing)")
            return
        try:
            pdf = pdfium.PdfDocument(str(self.path))
        except Exception as exc:  # noqa: BLE001 - pypdf read it; PDFium may still refuse it
            logger.info("PDFium cannot open the PDF for OCR: %s", exc)
            return
        try:
            for index in range(min(page_count, len(pdf))):
                page = pdf[index]
                try:
                    textpage = page.get_textpage()
                    try:
                        text = textpage.get_text_range() if textpage.count_chars() else ""
                    finally:
                        textpage.close()
                    chars = len("".join(text.split()))
                    if chars > self.config.thin_text_chars:
                        continue
                    width, height = page.get_size()
                    area = max(width * height, 1.0)
                    covered = 0.0
                    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=3):
                        left, bottom, right, top = obj.get_bounds()
                        covered += max(0.0, min(right, width) - max(left, 0.0)) * \
                            max(0.0, min(top, height) - max(bottom, 0.0))
                    coverage = min(1.0, covered / area)
                    if (chars == 0 and coverage >= MIN_SCAN_COVERAGE) or coverage >= self.config.image_coverage:
                        self.planned.add(index)
                except Exception as exc:  # noqa: BLE001 - one odd page only loses its OCR
                    logger.info("PDFium could not inspect page %d: %s", index + 1, exc)
                finally:
                    page.close()
        finally:
            pdf.close()

    def read(self, index: int) -> OcrPage | None:
        """OCR page ``index`` (0-based) when it was planned; None otherwise."""
        if index not in self.planned:
            return None
        if self._engine is None:
            self._engine = OcrEngine(self.status, self.config, language_hint=self.language_hint)
        if self.on_status is not None:
            self.on_status(f"OCR {self.done + 1} of {len(self.planned)} pages")
        try:
            result = self._engine.read(self.path, index)
        except Exception as exc:  # noqa: BLE001 - a page the renderer cannot draw stays unread
            logger.info("OCR of page %d failed: %s", index + 1, exc)
            result = OcrPage("", 0.0, "", error="the page could not be rendered for OCR")
        self.done += 1
        self.results[index + 1] = result
        if self.done == len(self.planned) and self.on_status is not None:
            self.on_status(f"OCR done: {self.done} of {len(self.planned)} pages")
        return result

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

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
            out.append(f"{_pages(sorted(read))} had no text layer and {_were(read)} read by OCR "
                       f"({name}; mean confidence {self.summary()['confidence']:.0f}%).")
        low = sorted(p for p, r in read.items() if r.confidence < self.config.low_confidence)
        if low:
            out.append(f"{_pages(low)} {_were(low)} read by OCR with low confidence (under "
                       f"{self.config.low_confidence:.0f}%); the text may contain errors.")
        failed: dict[str, list[int]] = {}
        for page, result in self.results.items():
            if result.error:
                failed.setdefault(result.error, []).append(page)
        for error, pages in failed.items():
            out.append(f"{_pages(sorted(pages))}: {error}; not searchable.")
        return out


def _pages(pages: list[int]) -> str:
    return f"Page {pages[0]}" if len(pages) == 1 else f"Pages {format_page_list(pages)}"


def _were(pages) -> str:
    return "was" if len(pages) == 1 else "were"
