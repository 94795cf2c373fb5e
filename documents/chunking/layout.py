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
    table_caption: str | None = None  # a table's caption: the short line just before it on its page


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
                               block.table_header, _caption(spans, parts, block)))
        if block.page_number is not None:
            if block.ocr_confidence is not None:
                ocr_pages[block.page_number] = block.ocr_confidence
            if pages and pages[-1][0] == block.page_number:
                pages[-1] = (block.page_number, pages[-1][1], pos)
            else:
                pages.append((block.page_number, start, pos))
    return TextLayout("".join(parts), spans, pages, ocr_pages)


CAPTION_MAX = 200  # characters: a longer block before a table is a paragraph, not its caption
CAPTION_LINES = 6  # a statement's title block: company, statement, units, period, the columns' dates
SENTENCE_ENDS = (".", "!", "?", "…")


def _caption(spans: list[BlockSpan], parts: list[str], block: Block) -> str | None:
    """The caption of a table block: the previous block, if it is a short title on the same page (one
    line, or a title block of up to `CAPTION_LINES` lines, none of them a sentence, such as a financial
    statement's company, statement and period, joined with " · ")."""
    if block.kind != "table" or not spans or len(parts) < 3:
        return None
    previous, text = spans[-1], parts[-3]  # parts: [..., previous text, SEPARATOR, this text]
    if previous.kind == "table" or previous.page_number != block.page_number:
        return None
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) > 1 and any(line.endswith(SENTENCE_ENDS) for line in lines):
        return None  # several lines with a sentence among them: a paragraph, not a title block
    caption = " · ".join(lines)
    return caption if lines and len(lines) <= CAPTION_LINES and len(caption) <= CAPTION_MAX else None


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


def chunk_context(*, heading_path: tuple[str, ...] | list[str] = (), table_header: str | None = None,
                  title: str = "", page_label: str = "", table_caption: str | None = None) -> str:
    """The text a reader sees around a passage, which its chunk is embedded and full-text indexed with.

    One line each: the document's title and the heading path ("Title > Chapter > Section"; a title
    the path already opens with is not repeated), the page label ("[12]", when given), and for a
    table chunk its caption (the cutter gives it to every chunk that starts in the table) and, when
    it starts below the table's first row, the header row. Computed from
    stored fields only, so `rebuild_chunk_context` can recompute it for chunks already indexed.
    """
    path = [p for p in heading_path if p]
    if title and (not path or path[0].strip().casefold() != title.strip().casefold()):
        path.insert(0, title.strip())
    lines = [" > ".join(path)] if path else []
    if page_label:
        lines.append(f"[{page_label}]")
    if table_caption:
        lines.append(table_caption)
    if table_header:
        lines.append(table_header)
    return "\n".join(lines)


def embed_text_for(content: str, heading_path: tuple[str, ...], table_header: str | None, **context) -> str:
    """The text a chunk is embedded with: its context (`chunk_context`), a newline, its content."""
    prefix = chunk_context(heading_path=heading_path, table_header=table_header, **context)
    return f"{prefix}\n{content}" if prefix else content
