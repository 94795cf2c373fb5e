"""Slide decks (.pptx) as text blocks.

A slide is a "page" (`Block.page_number`, counted in `pages_total`): citations say "slide 7"
through the page number. Tables become `| a | b |` lines with the first row as the header; the
speaker notes follow their slide. The deck goes through the same zip-bomb check as .docx first.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import CorruptFileError, NoTextError, gettext_noop
from documents.extraction.helpers import open_office, squeeze_spaces
from documents.extraction.types import MIME_PPTX, POWERPOINT_FILE, Block, Extraction, Limits, table_row


class PptxExtraction(Extraction):
    mime_type = MIME_PPTX

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        import pptx

        self._deck = open_office(Path(path), limits, POWERPOINT_FILE, pptx.Presentation)
        self.pages_total = len(self._deck.slides)

    def _iter_blocks(self) -> Iterator[Block]:
        for number, slide in enumerate(self._deck.slides, 1):
            title_shape = slide.shapes.title
            title = squeeze_spaces(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
            path = (title or f"Slide {number}",)
            yield Block(f"Slide {number}: {title}" if title else f"Slide {number}", number, path, "heading")
            for shape in _shapes(slide.shapes):
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                if getattr(shape, "has_table", False) and shape.has_table:
                    rows = [table_row([squeeze_spaces(c.text) for c in r.cells]) for r in shape.table.rows]
                    rows = [r for r in rows if r.strip("| ")]
                    if rows:
                        yield Block("\n".join(rows), number, path, "table", table_header=rows[0])
                elif shape.has_text_frame:
                    lines = [squeeze_spaces(p.text) for p in shape.text_frame.paragraphs]
                    text = "\n".join(x for x in lines if x)
                    if text:
                        yield Block(text, number, path, "paragraph")
            if slide.has_notes_slide:
                notes = squeeze_spaces(slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else "")
                if notes:
                    yield Block(f"Notes: {notes}", number, path, "paragraph")
            if self.on_progress is not None:
                self.on_progress(number, len(self._deck.slides))

    def _no_text_error(self) -> Exception:
        return NoTextError(gettext_noop("This presentation contains no text (only pictures?)."))

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This PowerPoint file is damaged and cannot be read.")


def _shapes(shapes, depth: int = 0):
    """Shapes in slide order, looking inside groups."""
    for shape in shapes:
        if shape.shape_type == 6 and depth < 10:  # MSO_SHAPE_TYPE.GROUP
            yield from _shapes(shape.shapes, depth + 1)
        else:
            yield shape
