"""The page label printed on a PDF page: the PDF's own `/PageLabels`, else the page's printed number when it
is clearly there, else nothing (callers fall back to the page's index).

A printed number counts only when it stands alone on the first or last line of the page ("7", "- 7 -",
"Page 7", "Strana 7", "Seite 7", "Стр. 7"; roman numerals of front matter too: "iii", "- XII -", "Page iv")
and a neighbouring page carries a number of the same kind (roman or arabic) with the same offset from its
index: one stray number (a table's last row, a year, a lone "I") never renames a page.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

_PRINTED_RE = re.compile(
    r"(?:(?:page|p\.|pg\.|strana|str\.|seite|s\.|стр\.|страница|pagina|página|strona)\s*)?"
    r"[-\u2013\u2014]?\s*([0-9]{1,5})\s*[-\u2013\u2014]?",
    re.IGNORECASE,
)


_ROMAN_RE = re.compile(
    r"(?:(?:page|p\.|pg\.|strana|str\.|seite|s\.|стр\.|страница|pagina|página|strona)\s*)?"
    r"[-\u2013\u2014]?\s*([ivxlcdm]{1,8}|[IVXLCDM]{1,8})\s*[-\u2013\u2014]?",
    re.IGNORECASE,
)
_ROMAN_VALID = re.compile(r"m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})")
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


class PrintedNumber(NamedTuple):
    """A page number printed on the page: its kind ("arabic" or "roman"), value and text as printed."""

    kind: str
    value: int
    label: str


def roman_value(text: str) -> int | None:
    """The value of a well-formed roman numeral in one case ("xiv", "XIV"), else None ("iiii", "Xiv")."""
    if not text or not (text.islower() or text.isupper()) or not _ROMAN_VALID.fullmatch(text.lower()):
        return None
    values = [_ROMAN_VALUES[c] for c in text.lower()]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def printed_page_number(lines: list[str]) -> PrintedNumber | None:
    """The page number (arabic or roman) printed alone on the first or last non-blank line of `lines`."""
    nonblank = [line.strip() for line in lines if line and line.strip()]
    if len(nonblank) < 2:  # a page that is only a number has no header or footer to tell apart
        return None
    for line in (nonblank[-1], nonblank[0]):  # footers first: they carry the number more often
        match = _PRINTED_RE.fullmatch(line)
        if match and 0 < int(match.group(1)):
            return PrintedNumber("arabic", int(match.group(1)), str(int(match.group(1))))
        match = _ROMAN_RE.fullmatch(line)
        value = roman_value(match.group(1)) if match else None
        if match and value:
            return PrintedNumber("roman", value, match.group(1))
    return None


def printed_number(lines: list[str]) -> int | None:
    """The arabic page number printed alone on the first or last non-blank line of `lines`, or None."""
    found = printed_page_number(lines)
    return found.value if found is not None and found.kind == "arabic" else None


def printed_labels(numbers: Sequence[PrintedNumber | int | None]) -> dict[int, str]:
    """1-based page -> label from each page's printed number (`numbers[i]` for page i+1; an int is arabic),
    kept only where a neighbouring page (the one before or after) has a number of the same kind with the
    same offset from its index."""
    found = [PrintedNumber("arabic", n, str(n)) if isinstance(n, int) else n for n in numbers]
    labels: dict[int, str] = {}
    for i, number in enumerate(found):
        if number is None:
            continue
        neighbours = [(n.kind, n.value - j) for j in (i - 1, i + 1) if 0 <= j < len(found)
                      and (n := found[j]) is not None]
        if (number.kind, number.value - i) in neighbours:
            labels[i + 1] = number.label
    return labels


def pdf_page_labels(reader) -> dict[int, str] | None:
    """1-based page -> label from the PDF's `/PageLabels` (None when it has none or it is unreadable)."""
    try:
        root = reader.trailer["/Root"]
        if "/PageLabels" not in root:
            return None
        labels = list(reader.page_labels)
    except Exception:  # noqa: BLE001 - a broken label tree only loses the labels
        return None
    return {i + 1: str(label).strip() for i, label in enumerate(labels) if str(label).strip()}
