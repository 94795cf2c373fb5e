"""OCR for PDF pages without a text layer: PDFium (pypdfium2) renders a page, Tesseract reads it.

Tesseract runs as a child process (through pytesseract) one page at a time, so the worker only
ever holds one rendered page; each call has a time cap (pytesseract's timeout) and a memory
cap (the `tesseract-capped` wrapper sets `ulimit -v` before it starts Tesseract).

Public API::

    ocr_status(config) -> OcrStatus          # available? which languages? why not?
    OcrEngine(status, config, language_hint=...).read(pdf_path, page_index) -> OcrPage
"""
from __future__ import annotations

import logging
import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from documents.extraction.errors import gettext_noop, phrase

logger = logging.getLogger(__name__)

WRAPPER = Path(__file__).resolve().parents[1] / "bin" / "tesseract-capped"

# ISO 639-1 (the document's language field) -> Tesseract language data.
TESSERACT_LANGS = {
    "en": "eng", "de": "deu", "cs": "ces", "ru": "rus", "vi": "vie", "es": "spa", "fr": "fra",
    "zh": "chi_sim", "it": "ita", "pt": "por", "nl": "nld", "pl": "pol", "uk": "ukr",
}
# The Latin-script languages tried together in the first pass when no language was given.
LATIN_FIRST_PASS = ("eng", "deu", "fra", "spa", "ces", "vie")
_HAN_SCRIPTS = {"Han", "HanS", "HanT", "Japanese", "Hangul"}
# Letters only Vietnamese uses among the Latin languages above: a first-pass vote for "vie".
_VIETNAMESE = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")
_CJK_RE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@dataclass(frozen=True, slots=True)
class OcrConfig:
    """How pages are read: the command, resolution and the caps of one page."""

    command: str = "tesseract"
    dpi: int = 300
    max_pixels: int = 25_000_000  # a bigger page is rendered at a lower resolution
    page_seconds: float = 60.0  # time cap of one page (Tesseract is killed after it)
    page_memory_mb: int = 1024  # address-space cap of the Tesseract process
    low_confidence: float = 60.0  # mean word confidence (0-100) under which a page is reported
    # A page with at most this many characters in its text layer is OCRed when images cover
    # at least `image_coverage` of it (a scan with a stamped header, say).
    thin_text_chars: int = 200
    image_coverage: float = 0.5


@dataclass(slots=True)
class OcrStatus:
    available: bool
    languages: frozenset[str] = frozenset()
    reason: dict | None = None  # why OCR is not available, for users: a phrase (errors.phrase)


@dataclass(slots=True)
class OcrPage:
    text: str
    confidence: float  # mean word confidence, 0-100
    language: str
    words: int = 0
    error: str = ""  # set when the page could not be read (time/memory cap, Tesseract error)


@dataclass(slots=True)
class _Choice:
    language: str | None = None
    decided_by: str = ""
    notes: list[str] = field(default_factory=list)


_STATUS_CACHE: dict[str, OcrStatus] = {}


def ocr_status(config: OcrConfig = OcrConfig()) -> OcrStatus:
    """Whether Tesseract can be run here, and its installed languages (cached per command)."""
    cached = _STATUS_CACHE.get(config.command)
    if cached is not None:
        return cached
    status = _probe(config.command)
    _STATUS_CACHE[config.command] = status
    return status


def _probe(command: str) -> OcrStatus:
    if shutil.which(command) is None:
        return OcrStatus(False, reason=phrase("ocr.missing", gettext_noop(
            "OCR is not available on this server (Tesseract is not installed)")))
    try:
        import pytesseract

        pytesseract.pytesseract.tesseract_cmd = command
        langs = frozenset(pytesseract.get_languages(config="")) - {"osd"}
    except Exception as exc:  # noqa: BLE001 - a broken install is "not available", not a crash
        logger.warning("Tesseract unusable: %s", exc)
        return OcrStatus(False, reason=phrase("ocr.broken", gettext_noop(
            "OCR is not available on this server (Tesseract does not run)")))
    if not langs:
        return OcrStatus(False, reason=phrase("ocr.no_languages", gettext_noop(
            "OCR is not available on this server (no Tesseract language data)")))
    return OcrStatus(True, langs)


def _join_words(words: list[str]) -> str:
    out = ""
    for word in words:
        if out and not (_CJK_RE.match(out[-1]) and _CJK_RE.match(word[0])):
            out += " "
        out += word
    return out


def _data_to_page(data: dict, language: str) -> OcrPage:
    """pytesseract's image_to_data dictionary -> text (lines, blank line between paragraphs)."""
    paragraphs: list[list[str]] = []
    lines: dict[tuple, list[str]] = {}
    order: list[tuple] = []
    confidences: list[float] = []
    for i, word in enumerate(data.get("text", [])):
        word = (word or "").strip()
        if not word:
            continue
        try:
            conf = float(data["conf"][i])
        except (TypeError, ValueError):
            conf = -1.0
        if conf >= 0:
            confidences.append(conf)
        key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
        if key not in lines:
            lines[key] = []
            order.append(key)
        lines[key].append(word)
    current_par = None
    for key in order:
        par = key[:2]
        if par != current_par:
            paragraphs.append([])
            current_par = par
        paragraphs[-1].append(_join_words(lines[key]))
    text = "\n\n".join("\n".join(p) for p in paragraphs)
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrPage(text=text, confidence=round(mean, 1), language=language, words=len(confidences))


class OcrEngine:
    """Reads the pages of one PDF; keeps the PDFium document open between pages."""

    def __init__(self, status: OcrStatus, config: OcrConfig, *, language_hint: str = ""):
        import pypdfium2  # noqa: F401 - fail early if the renderer is missing

        self.status = status
        self.config = config
        self.choice = _Choice()
        hint = (language_hint or "").strip().lower()
        code = TESSERACT_LANGS.get(hint.split("-")[0]) if hint else None
        if code and code in status.languages:
            self.choice.language = code
            self.choice.decided_by = "document language"
        elif hint:
            self.choice.notes.append(
                f"No OCR language data for the document's language '{hint}'; the language was guessed from the first scanned page.")
        self._pdf = None
        self._path: Path | None = None

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None

    # -- rendering ----------------------------------------------------------------------------
    def _document(self, path: Path):
        import pypdfium2 as pdfium

        if self._pdf is None or self._path != path:
            self.close()
            self._pdf = pdfium.PdfDocument(str(path))
            self._path = path
        return self._pdf

    def render(self, path: Path, index: int):
        """The page as a greyscale PIL image at `dpi`, smaller when it would pass `max_pixels`."""
        page = self._document(path)[index]
        try:
            width, height = page.get_size()
            scale = self.config.dpi / 72
            pixels = width * height * scale * scale
            if pixels > self.config.max_pixels:
                scale *= math.sqrt(self.config.max_pixels / pixels)
            bitmap = page.render(scale=scale, grayscale=True)
            try:
                return bitmap.to_pil().copy()  # a copy owns its pixels: the bitmap can go
            finally:
                bitmap.close()
        finally:
            page.close()

    # -- Tesseract --------------------------------------------------------------------------
    def _run(self, call, image, **kwargs):
        import pytesseract

        # The wrapper caps Tesseract's memory; it reads the cap and the real command from the
        # environment because pytesseract builds the command line itself.
        os.environ["RAGSITE_TESSERACT"] = self.config.command
        os.environ["RAGSITE_OCR_MEMORY_KB"] = str(self.config.page_memory_mb * 1024)
        # One thread per page: the server is shared, and OpenMP threads multiply the memory.
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")
        pytesseract.pytesseract.tesseract_cmd = str(WRAPPER)
        return call(image, timeout=self.config.page_seconds, **kwargs)

    def _ocr(self, image, language: str) -> OcrPage:
        import pytesseract

        try:
            data = self._run(pytesseract.image_to_data, image, lang=language, config="--psm 3",
                             output_type=pytesseract.Output.DICT)
        except (pytesseract.TesseractError, subprocess.CalledProcessError, OSError) as exc:
            # Over the memory cap Tesseract dies while starting or reading (or its version
            # check, which pytesseract runs first, does). TesseractError is a RuntimeError:
            # it is caught before the timeout below.
            logger.info("Tesseract failed: %s", exc)
            return OcrPage("", 0.0, language,
                           error=f"OCR failed (over the {self.config.page_memory_mb} MB memory cap, or unreadable image)")
        except RuntimeError as exc:  # pytesseract's timeout
            if "timeout" in str(exc).lower():
                return OcrPage("", 0.0, language, error=f"OCR took longer than {self.config.page_seconds:g} s")
            raise
        return _data_to_page(data, language)

    def _script(self, image) -> str:
        import pytesseract

        try:
            osd = self._run(pytesseract.image_to_osd, image, output_type=pytesseract.Output.DICT)
        except Exception:  # noqa: BLE001 - too few characters, no osd data: script unknown
            return ""
        return str(osd.get("script") or "")

    def _first_pass(self, image) -> OcrPage:
        """Decide the language from this page: its script (OSD), then the words Tesseract reads."""
        from documents.language.detection import detect_language

        langs = self.status.languages
        script = self._script(image)
        if script == "Cyrillic" and "rus" in langs:
            self.choice.language, self.choice.decided_by = "rus", "script (Cyrillic)"
        elif script in _HAN_SCRIPTS and "chi_sim" in langs:
            self.choice.language, self.choice.decided_by = "chi_sim", f"script ({script})"
        if self.choice.language:
            return self._ocr(image, self.choice.language)
        trial = "+".join(lang for lang in LATIN_FIRST_PASS if lang in langs) or sorted(langs)[0]
        page = self._ocr(image, trial)
        letters = [c for c in page.text.lower() if c.isalpha()]
        code = ""
        if letters and sum(c in _VIETNAMESE for c in letters) / len(letters) > 0.02:
            code = "vi"
        code = code or detect_language(page.text)
        chosen = TESSERACT_LANGS.get(code)
        if chosen and chosen in langs:
            self.choice.language, self.choice.decided_by = chosen, "first pass"
            return self._ocr(image, chosen)
        self.choice.language = "eng" if "eng" in langs else sorted(langs)[0]
        self.choice.decided_by = "first pass (unclear; default)"
        return page if self.choice.language == trial else self._ocr(image, self.choice.language)

    def read(self, path: Path, index: int) -> OcrPage:
        """OCR one page (0-based ``index``)."""
        image = self.render(path, index)
        try:
            if self.choice.language is None:
                return self._first_pass(image)
            return self._ocr(image, self.choice.language)
        finally:
            image.close()
