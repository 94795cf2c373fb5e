"""The document text as one string of blocks joined by "\\n\\n", with each block's span, page and
heading path (`build_layout`), and the chunk drafts cut from it (`ChunkDraft`, `embed_text_for`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from documents.extraction.types import Block

SEPARATOR = "\n\n"


@dataclass(slots=True)
class BlockSpan:
    start: int
    end: int
    page_number: int | None
    heading_path: tuple[str, ...]
    kind: str
    table_header: str | None = None


@dataclass(slots=True)
class TextLayout:
    text: str
    spans: list[BlockSpan]
    pages: list[tuple[int, int, int]] = field(default_factory=list)  # (page_number, start, end)
    ocr_pages: dict[int, float] = field(default_factory=dict)  # page read by OCR -> mean confidence


def build_layout(blocks: Iterable[Block]) -> TextLayout:
    """Consume ``blocks`` (a generator is fine) into one text with block spans.

    Blocks are joined with "\\n\\n"; whitespace-only blocks are skipped.  The text is
    assembled with a single "".join at the end.
    """
    parts: list[str] = []
    spans: list[BlockSpan] = []
    pages: list[tuple[int, int, int]] = []
    ocr_pages: dict[int, float] = {}
    pos = 0
    for block in blocks:
        text = block.text
        if not text or text.isspace():
            continue
        if parts:
            parts.append(SEPARATOR)
            pos += len(SEPARATOR)
        start, pos = pos, pos + len(text)
        parts.append(text)
        spans.append(BlockSpan(start, pos, block.page_number, tuple(block.heading_path), block.kind,
                               block.table_header))
        if block.page_number is not None:
            if block.ocr_confidence is not None:
                ocr_pages[block.page_number] = block.ocr_confidence
            if pages and pages[-1][0] == block.page_number:
                pages[-1] = (block.page_number, pages[-1][1], pos)
            else:
                pages.append((block.page_number, start, pos))
    return TextLayout("".join(parts), spans, pages, ocr_pages)


@dataclass(slots=True)
class ChunkDraft:
    index: int
    content: str  # == layout.text[start:end], exactly
    start: int
    end: int
    page_number: int | None  # page the chunk starts on
    heading_path: tuple[str, ...]
    token_count: int
    metadata: dict
    embed_text: str  # context prefix (heading path, table header) + content


def embed_text_for(content: str, heading_path: tuple[str, ...], table_header: str | None) -> str:
    prefix = []
    if heading_path:
        prefix.append(" > ".join(heading_path))
    if table_header:
        prefix.append(table_header)
    return "\n".join(prefix + [content]) if prefix else content
