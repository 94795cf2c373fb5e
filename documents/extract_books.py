"""E-mail (.eml), EPUB and OpenDocument text (.odt) as text blocks.

* e-mail (stdlib `email`): a header block (From, To, Cc, Date, Subject), then the body (the
  plain-text part, else the HTML part's main content); attachments are *not* indexed — the
  warnings name them so they can be uploaded on their own;
* EPUB (ebooklib): the spine's documents in reading order through the HTML extractor;
* ODT (odfpy): headings with their outline levels, paragraphs, list items and tables in order.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from documents.errors import CorruptFileError, NoTextError
from documents.extract_more import _line, _read, html_blocks
from documents.extract_types import Block, Extraction, Limits, clean_text, table_row

MIME_EML = "message/rfc822"
MIME_EPUB = "application/epub+zip"
MIME_ODT = "application/vnd.oasis.opendocument.text"

_HEADER_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,40}:[ \t]?\S?")
_SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def looks_like_email(text: str) -> bool:
    """RFC 5322 headers up to the first blank line, with From and a Subject, Date or Message-ID."""
    head = text[:16384].split("\n\n", 1)[0].replace("\r", "")
    lines = [line for line in head.split("\n") if line and not line[0] in " \t"]
    if len(lines) < 2 or not all(_HEADER_RE.match(line) for line in lines):
        return False
    names = {line.split(":", 1)[0].lower() for line in lines}
    return "from" in names and bool(names & {"subject", "date", "message-id"})


class EmlExtraction(Extraction):
    mime_type = MIME_EML

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        self.path = Path(path)

    def _iter_blocks(self) -> Iterator[Block]:
        import email
        from email import policy

        message = email.message_from_bytes(self.path.read_bytes(), policy=policy.default)
        subject = _line(str(message.get("Subject") or "")) or "(no subject)"
        path = (subject,)
        header = [f"{name}: {_line(str(message.get(name)))}" for name in _SHOWN_HEADERS if message.get(name)]
        yield Block(subject, None, path, "heading")
        if header:
            yield Block("\n".join(header), None, path, "paragraph")
        body = message.get_body(preferencelist=("plain", "html"))
        if body is not None:
            content = clean_text(body.get_content())
            if body.get_content_subtype() == "html":
                yield from html_blocks(content, path)
            else:
                for para in re.split(r"\n\s*\n", content):
                    if para.strip():
                        yield Block(para.strip(), None, path, "paragraph")
        skipped = []
        for part in message.iter_attachments():
            name = part.get_filename() or "(unnamed)"
            skipped.append(f"{name} ({part.get_content_type()})")
        if skipped:
            self.warnings.append(f"Attachments were not indexed: {', '.join(skipped[:20])}"
                                 f"{' and more' if len(skipped) > 20 else ''}; upload them on their own.")

    def _no_text_error(self) -> Exception:
        return NoTextError("This e-mail has no text.")

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This e-mail could not be read.")


class EpubExtraction(Extraction):
    mime_type = MIME_EPUB

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        from documents.extract_docx import check_zip

        self.path = Path(path)
        check_zip(self.path, limits, what="EPUB book", main_part=None)
        try:
            from ebooklib import epub

            self._book = epub.read_epub(str(self.path), options={"ignore_ncx": True})
        except Exception as exc:  # noqa: BLE001
            raise CorruptFileError(f"This EPUB book is damaged and cannot be read ({str(exc)[:117]}).") from exc

    def _iter_blocks(self) -> Iterator[Block]:
        title = _line(str((self._book.get_metadata("DC", "title") or [("",)])[0][0]))
        path = (title,) if title else ()
        for item_id, _linear in self._book.spine:
            item = self._book.get_item_with_id(item_id)
            if item is None:
                continue
            html = item.get_content().decode("utf-8", "replace")
            yield from html_blocks(html, path)

    def _no_text_error(self) -> Exception:
        return NoTextError("This EPUB book contains no text.")

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This EPUB book is damaged and cannot be read.")


class OdtExtraction(Extraction):
    mime_type = MIME_ODT

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        from documents.extract_docx import check_zip

        self.path = Path(path)
        check_zip(self.path, limits, what="OpenDocument file", main_part=None)
        try:
            from odf.opendocument import load

            self._doc = load(str(self.path))
        except Exception as exc:  # noqa: BLE001
            raise CorruptFileError(f"This OpenDocument file is damaged and cannot be read ({str(exc)[:117]}).") from exc

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
        return NoTextError("This OpenDocument file contains no text.")

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This OpenDocument file is damaged and cannot be read.")


def _odt_walk(element, depth: int = 0):
    from odf import teletype

    for child in element.childNodes:
        name = getattr(child, "qname", (None, None))[1]
        if name == "h":
            text = _line(teletype.extractText(child))
            if text:
                yield "heading", _outline_level(child.getAttribute("outlinelevel")), text
        elif name == "p":
            text = _line(teletype.extractText(child))
            if text:
                yield "paragraph", 0, text
        elif name == "table":
            rows = []
            for row in child.getElementsByType(_odf_table_row()):
                cells = [_line(teletype.extractText(c)) for c in row.childNodes
                         if getattr(c, "qname", (None, None))[1] == "table-cell"]
                if any(cells):
                    rows.append(table_row(cells))
            if rows:
                yield "table", 0, rows
        elif depth < 20 and name in ("list", "list-item", "section", "list-header", "span"):
            yield from _odt_walk(child, depth + 1)


def _outline_level(value: str | None) -> int:
    """A heading's outline level, 1 to 10 as ODF allows; anything odd ("²", "0", "99") is clamped, never
    a reason to refuse the whole file."""
    try:
        level = int(value or "1")
    except ValueError:
        return 1
    return min(10, max(1, level))


def _odf_table_row():
    from odf.table import TableRow

    return TableRow


__all__ = ["MIME_EML", "MIME_EPUB", "MIME_ODT", "EmlExtraction", "EpubExtraction", "OdtExtraction",
           "looks_like_email", "_read"]
