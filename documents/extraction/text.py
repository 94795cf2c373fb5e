"""Plain-text and Markdown extraction: encoding detection, paragraphs, Markdown structure."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import EmptyFileError, Note, gettext_noop
from documents.extraction.types import (
    MIME_MARKDOWN,
    MIME_TEXT,
    Block,
    Extraction,
    Limits,
    clean_text,
)

_BOMS = (  # longest first: the UTF-32-LE BOM starts with the UTF-16-LE one
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# C0/C1 control characters that do not occur in real text (tab, LF, CR, FF, VT, ESC are allowed).
_CONTROL_RE = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
_MAX_CONTROL_RATIO = 0.01


def sniff_bom(data: bytes) -> tuple[str, int] | None:
    """(codec, BOM length) when ``data`` starts with a Unicode byte-order mark."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec, len(bom)
    return None


def _sniff_utf16_without_bom(sample: bytes) -> str | None:
    """Guess BOM-less UTF-16 from the position of NUL bytes (ASCII-heavy text)."""
    if len(sample) < 4 or sample.count(0) < len(sample) // 4:
        return None
    pairs = len(sample) // 2
    odd_nuls = sample[1::2].count(0)
    even_nuls = sample[0::2].count(0)
    if odd_nuls > 0.4 * pairs and even_nuls < 0.05 * pairs:
        return "utf-16-le"
    if even_nuls > 0.4 * pairs and odd_nuls < 0.05 * pairs:
        return "utf-16-be"
    return None


def guess_encoding(sample: bytes, *, complete: bool) -> str | None:
    """Best codec for ``sample`` (no BOM handling), or None when it does not look like text.

    ``complete`` says whether the sample is the whole file (if not, a multi-byte
    character may be cut at its end).
    """
    utf16 = _sniff_utf16_without_bom(sample)
    if utf16:
        return utf16
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=complete)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    import charset_normalizer

    best = charset_normalizer.from_bytes(sample).best()
    return best.encoding if best is not None else None


def looks_like_text(text: str) -> bool:
    """True when ``text`` has (almost) no control characters."""
    if not text:
        return True
    controls = len(_CONTROL_RE.findall(text, 0, min(len(text), 1 << 20)))
    return controls <= _MAX_CONTROL_RATIO * min(len(text), 1 << 20)


def decode_sample(head: bytes, *, complete: bool) -> tuple[str, str] | None:
    """(decoded text, codec) of a file head, or None if it is not text."""
    bom = sniff_bom(head)
    codec: str | None
    if bom:
        codec, skip = bom
        text = codecs.getincrementaldecoder(codec)(errors="replace").decode(head[skip:], final=complete)
    else:
        codec = guess_encoding(head, complete=complete)
        if codec is None:
            return None
        try:
            text = codecs.getincrementaldecoder(codec)(errors="replace").decode(head, final=complete)
        except LookupError:
            return None
    if not looks_like_text(text):
        return None
    return text, codec


def decode_bytes(data: bytes, *, sample_bytes: int = 1 << 20) -> tuple[str, str, list[str]]:
    """Decode a whole text file: BOM, strict UTF-8, charset detection on a sample, then
    UTF-8 with replacement characters as the last resort.  Never raises on bad bytes.

    Returns (text, codec, warnings).
    """
    warnings: list[str] = []
    bom = sniff_bom(data)
    codec: str | None
    if bom:
        codec, skip = bom
        return data[skip:].decode(codec, errors="replace"), codec, warnings
    sample = data[:sample_bytes]
    utf16 = _sniff_utf16_without_bom(sample)
    if utf16:
        return data.decode(utf16, errors="replace"), utf16, warnings
    try:
        return data.decode("utf-8"), "utf-8", warnings
    except UnicodeDecodeError:
        pass
    codec = guess_encoding(sample, complete=len(sample) == len(data))
    if codec and codec != "utf-8":
        try:
            return data.decode(codec, errors="replace"), codec, warnings
        except LookupError:
            pass
    warnings.append(Note("replaced_characters", gettext_noop(
        "Some characters could not be decoded and were replaced with �.")))
    return data.decode("utf-8", errors="replace"), "utf-8", warnings


# --- Markdown sniffing ----------------------------------------------------------------

_MD_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.M)
_MD_FENCE_RE = re.compile(r"^ {0,3}(?:```|~~~)", re.M)
_MD_LINK_RE = re.compile(r"\[[^\]\n]{1,200}\]\([^)\s]{1,500}\)")
_MD_LIST_RE = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S", re.M)


def looks_like_markdown(text: str) -> bool:
    """ATX headings, fenced code or links mark Markdown; so do several list items."""
    text = text[: 256 * 1024]
    if _MD_HEADING_RE.search(text) or _MD_FENCE_RE.search(text) or _MD_LINK_RE.search(text):
        return True
    return len(_MD_LIST_RE.findall(text, 0, 64 * 1024)) >= 3


# --- Blocks ---------------------------------------------------------------------------

_BLANK_LINES_RE = re.compile(r"\n[ \t]*\n")


def iter_paragraphs(text: str) -> Iterator[str]:
    """Paragraphs separated by blank lines, stripped, without building a list of them all."""
    pos = 0
    for match in _BLANK_LINES_RE.finditer(text):
        piece = text[pos:match.start()].strip()
        if piece:
            yield piece
        pos = match.end()
    piece = text[pos:].strip()
    if piece:
        yield piece


def _iter_lines(text: str) -> Iterator[str]:
    """Lines without their "\\n" (no big list in memory)."""
    pos = 0
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        if nl < 0:
            yield text[pos:]
            return
        yield text[pos:nl]
        pos = nl + 1


_ATX_RE = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT_RE = re.compile(r" {0,3}(=+|-+)[ \t]*$")


def _atx_title(line: str, marker_end: int) -> str:
    title = line[marker_end:].strip()
    without_closing = title.rstrip("#")
    if not without_closing:
        return ""
    if without_closing != title and without_closing[-1] in " \t":
        return without_closing.rstrip()
    return title


class _HeadingStack:
    """Heading path as a stack of (level, title): a level-n heading pops levels >= n."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self.path: tuple[str, ...] = ()

    def push(self, level: int, title: str) -> tuple[str, ...]:
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, title))
        self.path = tuple(t for _, t in self._stack)
        return self.path


def iter_markdown_blocks(text: str) -> Iterator[Block]:
    """Linear-time Markdown reader: ATX/setext headings, fenced code kept whole, paragraphs."""
    headings = _HeadingStack()
    para: list[str] = []
    fence: list[str] = []
    fence_marker = ""
    fence_close = _FENCE_RE

    def flush_para() -> Iterator[Block]:
        if para:
            body = "\n".join(para).strip()
            para.clear()
            if body:
                yield Block(body, None, headings.path, "paragraph")

    for line in _iter_lines(text):
        if fence_marker:
            fence.append(line)
            if fence_close.match(line):
                yield Block("\n".join(fence).strip("\n"), None, headings.path, "code")
                fence.clear()
                fence_marker = ""
            continue
        m = _FENCE_RE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in line[m.end():]):
            yield from flush_para()
            fence_marker = m.group(1)
            fence_close = re.compile(
                r" {0,3}%s{%d,}[ \t]*$" % (re.escape(fence_marker[0]), len(fence_marker)))
            fence.append(line)
            continue
        m = _ATX_RE.match(line)
        if m:
            title = _atx_title(line, m.end())
            if title:
                yield from flush_para()
                path = headings.push(len(m.group(1)), title)
                yield Block(line.strip(), None, path, "heading")
                continue
        if not line.strip():
            yield from flush_para()
            continue
        if len(para) == 1 and _SETEXT_RE.match(line) and para[0].strip():
            title = para[0].strip()
            para.clear()
            level = 1 if line.strip()[0] == "=" else 2
            path = headings.push(level, title)
            yield Block(f"{title}\n{line.strip()}", None, path, "heading")
            continue
        para.append(line)
    if fence_marker:  # unclosed fence: the rest of the file is code
        body = "\n".join(fence).strip("\n")
        if body.strip():
            yield Block(body, None, headings.path, "code")
    yield from flush_para()


class TextExtraction(Extraction):
    """text/plain and text/markdown."""

    def __init__(self, path: Path, mime_type: str, *, limits: Limits, on_progress=None):
        super().__init__(pages_total=None, on_progress=on_progress, limits=limits)
        self.path = Path(path)
        self.mime_type = mime_type

    def _iter_blocks(self) -> Iterator[Block]:
        data = self.path.read_bytes()
        if not data.strip():
            raise EmptyFileError(gettext_noop("This file is empty."))
        text, self.encoding, warnings = decode_bytes(data, sample_bytes=self.limits.encoding_sample_bytes)
        self.warnings.extend(warnings)
        del data
        text = clean_text(text)
        if not text.strip():
            raise EmptyFileError(gettext_noop("This file is empty."))
        if self.mime_type == MIME_MARKDOWN:
            yield from iter_markdown_blocks(text)
        else:
            for para in iter_paragraphs(text):
                yield Block(para, None, (), "paragraph")

    def _no_text_error(self) -> Exception:
        return EmptyFileError(gettext_noop("This file is empty."))


__all__ = [
    "MIME_TEXT",
    "MIME_MARKDOWN",
    "TextExtraction",
    "decode_bytes",
    "decode_sample",
    "iter_markdown_blocks",
    "iter_paragraphs",
    "looks_like_markdown",
    "looks_like_text",
]
