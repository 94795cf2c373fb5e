"""Where text may be cut: paragraph, table-row, sentence, word and character boundaries.

All functions take absolute positions into one big string and only look at a
bounded window of it (no copies of the whole text).
"""

from __future__ import annotations

import re
import unicodedata

# Closing quotes/brackets that may follow a sentence terminator.
_CLOSERS = "\"'”’»)\\]」』"
# ASCII/Latin, Arabic (؟ ۔), Devanagari (। ॥), ellipsis: a terminator then whitespace.
# CJK full-width terminators need no space after them.
_SENTENCE = rf"(?:[.!?…؟۔।॥][{_CLOSERS}]*(?=\s)|[。！？][{_CLOSERS}]*)"

_LAST_PARAGRAPH_RE = re.compile(r"(?s:.*)(\n[ \t]*\n)")
_LAST_SENTENCE_RE = re.compile(rf"(?s:.*){_SENTENCE}")
_LAST_SPACE_RE = re.compile(r"(?s:.*)(\s)")
_SENTENCE_RE = re.compile(_SENTENCE)
_NON_SPACE_RE = re.compile(r"\S")
_SPACE_RE = re.compile(r"\s")
_LAST_WORD_START_RE = re.compile(r"(?s:.*)\s(\S)")
_WORD_START_RE = re.compile(r"(?<=\s)\S")

_ZWJ = "\u200d"
_JOINERS = {"\u200d", "\u200c", "\u034f", "\ufe0e", "\ufe0f"}


def last_paragraph_break(text: str, lo: int, hi: int) -> int:
    """Start of the last blank-line separator fully inside [lo, hi), or -1."""
    if hi - lo < 2:
        return -1
    m = _LAST_PARAGRAPH_RE.match(text, lo, hi)
    return m.start(1) if m else -1


def last_sentence_end(text: str, lo: int, hi: int) -> int:
    """Position just after the last sentence terminator in [lo, hi) that is followed by
    whitespace (or a CJK terminator), or -1."""
    if hi <= lo:
        return -1
    m = _LAST_SENTENCE_RE.match(text, lo, min(len(text), hi + 1))
    if m and m.end() <= hi:
        return m.end()
    m = _LAST_SENTENCE_RE.match(text, lo, hi)
    return m.end() if m else -1


def last_space(text: str, lo: int, hi: int) -> int:
    """Position of the last whitespace character in [lo, hi), or -1."""
    if hi <= lo:
        return -1
    m = _LAST_SPACE_RE.match(text, lo, hi)
    return m.start(1) if m else -1


def next_non_space(text: str, pos: int, end: int) -> int:
    """First non-whitespace position in [pos, end), or -1."""
    m = _NON_SPACE_RE.search(text, pos, end)
    return m.start() if m else -1


def last_word_start(text: str, lo: int, hi: int) -> int:
    """Start of the last word (non-space after a space) in [lo, hi), or -1."""
    if hi - lo < 1:
        return -1
    m = _LAST_WORD_START_RE.match(text, max(0, lo - 1), hi)
    return m.start(1) if m and m.start(1) >= lo else -1


def next_space(text: str, pos: int, end: int) -> int:
    """First whitespace position in [pos, end), or -1."""
    m = _SPACE_RE.search(text, pos, end)
    return m.start() if m else -1


def first_sentence_start(text: str, lo: int, hi: int) -> int:
    """First position in [lo, hi) where a new sentence starts (after a terminator), or -1."""
    for m in _SENTENCE_RE.finditer(text, max(0, lo - 8), hi):
        start = next_non_space(text, m.end(), hi)
        if start >= lo:
            return start
        if start < 0:
            return -1
    return -1


def first_word_start(text: str, lo: int, hi: int) -> int:
    """First position in [lo, hi) where a word starts (non-space preceded by space), or -1."""
    if lo < hi and lo > 0 and text[lo - 1].isspace() and not text[lo].isspace():
        return lo
    m = _WORD_START_RE.search(text, lo, hi)
    return m.start() if m else -1


def is_continuation(text: str, pos: int) -> bool:
    """True when a cut at ``pos`` would separate text[pos] from the character before it
    (combining marks, joiners, variation selectors)."""
    if pos <= 0 or pos >= len(text):
        return False
    ch = text[pos]
    if ch in _JOINERS or text[pos - 1] == _ZWJ:
        return True
    return unicodedata.category(ch) in ("Mn", "Mc", "Me") or "\U0001f3fb" <= ch <= "\U0001f3ff"


def back_to_cluster_start(text: str, pos: int, floor: int) -> int:
    """Move ``pos`` left (not below ``floor``) until it is not inside a combining sequence.
    Returns ``pos`` unchanged if that is impossible."""
    p = pos
    while p > floor and is_continuation(text, p):
        p -= 1
    return p if p > floor else pos


def cluster_start(text: str, pos: int, floor: int) -> int:
    """Start of the combining sequence that contains ``pos`` (never below ``floor``)."""
    while pos > floor and is_continuation(text, pos):
        pos -= 1
    return pos


def forward_to_cluster_start(text: str, pos: int, ceiling: int) -> int:
    """Move ``pos`` right (up to ``ceiling``) until it is not inside a combining sequence."""
    while pos < ceiling and is_continuation(text, pos):
        pos += 1
    return pos
