"""OpenDocument text (.odt, odfpy) as text blocks: headings with their outline levels, paragraphs,
list items and tables in order."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from documents.extraction.docx import check_zip
from documents.extraction.errors import CorruptFileError, NoTextError, gettext_noop
from documents.extraction.helpers import squeeze_spaces
from documents.extraction.types import MIME_ODT, OPENDOCUMENT_FILE, Block, Extraction, Limits, table_row


class OdtExtraction(Extraction):
    mime_type = MIME_ODT

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        self.path = Path(path)
        check_zip(self.path, limits, what=OPENDOCUMENT_FILE, main_part=None)
        try:
            from odf.opendocument import load

            self._doc = load(str(self.path))
        except Exception as exc:  # noqa: BLE001
            raise CorruptFileError(gettext_noop("This OpenDocument file is damaged and cannot be read (%(reason)s)."),
                                   reason=str(exc)[:117]) from exc

    def _iter_blocks(self) -> Iterator[Block]:
        stack: list[tuple[int, str]] = []
        path: tuple[str, ...] = ()
        for kind, level, text in _odt_walk(self._doc.text):
            if kind == "heading":
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
                path = tuple(t for _, t in stack)
                yield Block(text, None, path, "heading")
            elif kind == "table":
                yield Block("\n".join(text), None, path, "table", table_header=text[0])
            else:
                yield Block(text, None, path, "paragraph")

    def _no_text_error(self) -> Exception:
        return NoTextError(gettext_noop("This OpenDocument file contains no text."))

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This OpenDocument file is damaged and cannot be read.")


def _odt_walk(element, depth: int = 0):
    from odf import teletype

    for child in element.childNodes:
        name = getattr(child, "qname", (None, None))[1]
        if name == "h":
            text = squeeze_spaces(teletype.extractText(child))
            if text:
                yield "heading", outline_level(child.getAttribute("outlinelevel")), text
        elif name == "p":
            text = squeeze_spaces(teletype.extractText(child))
            if text:
                yield "paragraph", 0, text
        elif name == "table":
            rows = []
            for row in child.getElementsByType(_odf_table_row()):
                cells = [squeeze_spaces(teletype.extractText(c)) for c in row.childNodes
                         if getattr(c, "qname", (None, None))[1] == "table-cell"]
                if any(cells):
                    rows.append(table_row(cells))
            if rows:
                yield "table", 0, rows
        elif depth < 20 and name in ("list", "list-item", "section", "list-header", "span"):
            yield from _odt_walk(child, depth + 1)


def _odf_table_row():
    from odf.table import TableRow

    return TableRow


def outline_level(value: str | None) -> int:
    """A heading's outline level, 1 to 10 as ODF allows; anything odd ("²", "0", "99") is clamped, never
    a reason to refuse the whole file."""
    try:
        level = int(value or "1")
    except ValueError:
        return 1
    return min(10, max(1, level))
