"""The page label printed on a PDF page: the PDF's own `/PageLabels`, else the page's printed number when it
is clearly there, else nothing (callers fall back to the page's index).

A printed number counts only when it stands alone on the first or last line of the page ("7", "- 7 -",
"Page 7", "Strana 7", "Seite 7", "Стр. 7") and a neighbouring page carries a number with the same offset
from its index: one stray number (a table's last row, a year) never renames a page.
"""
from __future__ import annotations

import re

_PRINTED_RE = re.compile(
    r"(?:(?:page|p\.|pg\.|strana|str\.|seite|s\.|стр\.|страница|pagina|página|strona)\s*)?"
    r"[-\u2013\u2014]?\s*([0-9]{1,5})\s*[-\u2013\u2014]?",
    re.IGNORECASE,
)


def printed_number(lines: list[str]) -> int | None:
    """The page number printed alone on the first or last non-blank line of `lines`, or None."""
    nonblank = [line.strip() for line in lines if line and line.strip()]
    if len(nonblank) < 2:  # a page that is only a number has no header or footer to tell apart
        return None
    found = None
    for line in (nonblank[-1], nonblank[0]):  # footers first: they carry the number more often
        match = _PRINTED_RE.fullmatch(line)
        if match and 0 < int(match.group(1)):
            found = int(match.group(1))
            break
    return found


def printed_labels(numbers: list[int | None]) -> dict[int, str]:
    """1-based page -> label from each page's printed number (`numbers[i]` for page i+1), kept only where a
    neighbouring page (the one before or after) has a number with the same offset from its index."""
    labels: dict[int, str] = {}
    for i, number in enumerate(numbers):
        if number is None:
            continue
        offset = number - i
        neighbours = [n - j for j in (i - 1, i + 1) if 0 <= j < len(numbers) and (n := numbers[j]) is not None]
        if offset in neighbours:
            labels[i + 1] = str(number)
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
