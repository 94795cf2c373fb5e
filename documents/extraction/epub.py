"""EPUB books (ebooklib) as text blocks: the spine's documents in reading order through the HTML reader."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from documents.extraction.docx import check_zip
from documents.extraction.errors import CorruptFileError, NoTextError, gettext_noop
from documents.extraction.helpers import squeeze_spaces
from documents.extraction.html import html_blocks
from documents.extraction.types import EPUB_BOOK, MIME_EPUB, Block, Extraction, Limits


class EpubExtraction(Extraction):
    mime_type = MIME_EPUB

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        self.path = Path(path)
        check_zip(self.path, limits, what=EPUB_BOOK, main_part=None)
        try:
            from ebooklib import epub

            self._book = epub.read_epub(str(self.path), options={"ignore_ncx": True})
        except Exception as exc:  # noqa: BLE001
            raise CorruptFileError(gettext_noop("This EPUB book is damaged and cannot be read (%(reason)s)."),
                                   reason=str(exc)[:117]) from exc

    def _iter_blocks(self) -> Iterator[Block]:
        title = squeeze_spaces(str((self._book.get_metadata("DC", "title") or [("",)])[0][0]))
        path = (title,) if title else ()
        for item_id, _linear in self._book.spine:
            item = self._book.get_item_with_id(item_id)
            if item is None:
                continue
            html = item.get_content().decode("utf-8", "replace")
            yield from html_blocks(html, path)

    def _no_text_error(self) -> Exception:
        return NoTextError(gettext_noop("This EPUB book contains no text."))

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This EPUB book is damaged and cannot be read.")
