"""Helpers the format readers share (public names: no module imports another's private ones)."""
from __future__ import annotations

import re
from pathlib import Path

from documents.extraction.docx import check_zip
from documents.extraction.errors import CorruptFileError, EmptyFileError, gettext_noop
from documents.extraction.text import decode_bytes
from documents.extraction.types import Extraction, Limits, clean_text

_WS_RE = re.compile(r"[^\S\n]+")


def squeeze_spaces(text: str) -> str:
    """``text`` cleaned, each run of spaces and tabs made one space, stripped (line breaks stay)."""
    return _WS_RE.sub(" ", clean_text(text or "")).strip()


def read_text_file(path: Path, limits: Limits, extraction: Extraction) -> str:
    """A text file whole, decoded (its encoding and any warnings recorded on ``extraction``)."""
    data = path.read_bytes()
    if not data.strip():
        raise EmptyFileError(gettext_noop("This file is empty."))
    text, extraction.encoding, warnings = decode_bytes(data, sample_bytes=limits.encoding_sample_bytes)
    extraction.warnings.extend(warnings)
    return clean_text(text)


def open_office(path: Path, limits: Limits, what: dict, opener):
    """``opener(path)`` after the zip-bomb check; anything it raises becomes a `CorruptFileError`."""
    check_zip(path, limits, what=what, main_part=None)
    try:
        return opener(str(path))
    except Exception as exc:  # noqa: BLE001 - the libraries raise many kinds
        reason = str(exc) or type(exc).__name__
        raise CorruptFileError(gettext_noop("This %(what)s is damaged and cannot be read (%(reason)s)."),
                               what=what, reason=reason[:117]) from exc
