"""Word (.docx) extraction with python-docx: body in document order, headings, tables."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import CorruptFileError, NoTextError, ZipBombError, gettext_noop
from documents.extraction.types import (
    MIME_DOCX,
    WORD_FILE,
    Block,
    Extraction,
    Limits,
    clean_text,
    human_size,
    table_row,
)

NOT_A_ZIP_MESSAGE = gettext_noop("This file is not a valid Word document (it is not a ZIP archive).")

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _TBL, _TR, _TC = _W + "p", _W + "tbl", _W + "tr", _W + "tc"
_SDT, _SDT_CONTENT, _CUSTOM_XML = _W + "sdt", _W + "sdtContent", _W + "customXml"
_VAL = _W + "val"
_HEADING_NAME_RE = re.compile(r"heading\s*([1-9])", re.I)
_WS_RE = re.compile(r"[^\S\n]+")


def encrypted_office(path: Path) -> bool:
    """An encrypted Office file is an OLE container (not a zip) holding 'EncryptedPackage'."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        return False
    return "EncryptedPackage".encode("utf-16-le") in data


def check_zip(path: Path, limits: Limits, *, what: dict = WORD_FILE, main_part: str | None = "word/") -> None:
    """Refuse non-zips and zip bombs using only the central directory (nothing is inflated).

    ``what`` names the file in messages (a phrase: EXCEL_FILE…); ``main_part`` is the folder a valid
    file must have (None: no check)."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        if main_part is None:
            if encrypted_office(path):
                from documents.extraction.errors import EncryptedError

                raise EncryptedError(gettext_noop("This %(what)s is password-protected; upload it without a password."),
                                     what=what) from exc
            raise CorruptFileError(gettext_noop("This %(what)s is damaged and cannot be read (it is not a ZIP archive)."),
                                   what=what) from exc
        raise CorruptFileError(NOT_A_ZIP_MESSAGE) from exc
    limit = limits.max_docx_uncompressed
    if len(infos) > limits.max_docx_members:
        raise ZipBombError(
            gettext_noop("This %(what)s contains %(parts)s parts (the limit is %(limit)s); "
                         "it was refused to protect the server."),
            what=what, parts=len(infos), limit=limits.max_docx_members)
    total = 0
    for info in infos:
        total += info.file_size
        if total > limit:
            raise ZipBombError(
                gettext_noop("This %(what)s expands to more than %(limit)s when unpacked; "
                             "it was refused to protect the server."),
                what=what, limit=human_size(limit))
        if info.file_size > limits.docx_ratio_min_member:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > limits.max_docx_ratio:
                raise ZipBombError(
                    gettext_noop("This %(what)s contains a part that expands %(ratio)s times when unpacked "
                                 "(%(packed)s to %(unpacked)s); it was refused to protect the server."),
                    what=what, ratio=round(ratio), packed=human_size(info.compress_size),
                    unpacked=human_size(info.file_size))
    if main_part is None:
        return
    names = {info.filename for info in infos}
    if "word/document.xml" not in names and not any(n.startswith("word/") for n in names):
        raise CorruptFileError("This file is not a valid Word document (its main text part is missing).")


def _iter_content(parent) -> Iterator:
    """Child w:p / w:tbl / w:tr / w:tc elements, looking through content-control wrappers."""
    for child in parent.iterchildren():
        tag = child.tag
        if tag in (_P, _TBL, _TR, _TC):
            yield child
        elif tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from _iter_content(content)
        elif tag == _CUSTOM_XML:
            yield from _iter_content(child)


def _para_text(p) -> str:
    text = clean_text(p.text or "")
    return "\n".join(_WS_RE.sub(" ", line).strip() for line in text.split("\n")).strip()


def _cell_text(tc) -> str:
    parts: list[str] = []
    for child in _iter_content(tc):
        if child.tag == _P:
            text = _para_text(child)
            if text:
                parts.append(text.replace("\n", " "))
        elif child.tag == _TBL:
            # A nested table flattens into its cell: one " / "-joined part per row.
            parts.extend(" / ".join(c for c in cells if c) for cells in _table_cells(child))
    return " / ".join(parts).replace("|", "/")


def _table_cells(tbl) -> list[list[str]]:
    rows = []
    for tr in _iter_content(tbl):
        if tr.tag != _TR:
            continue
        cells = [_cell_text(tc) for tc in _iter_content(tr) if tc.tag == _TC]
        if any(cells):
            rows.append(cells)
    return rows


def _table_rows(tbl) -> list[str]:
    return [table_row(cells) for cells in _table_cells(tbl)]


class DocxExtraction(Extraction):
    mime_type = MIME_DOCX

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(pages_total=None, on_progress=on_progress, limits=limits)
        self.path = Path(path)
        check_zip(self.path, self.limits)
        self._document = self._open()
        self._levels: dict[str | None, int | None] = {}

    def _open(self):
        import docx

        try:
            return docx.Document(str(self.path))
        except Exception as exc:  # noqa: BLE001 - python-docx/lxml raise many types
            reason = str(exc) or type(exc).__name__
            if "content type" in reason.lower():
                reason = "it is a template or macro file, not a normal document"
            elif len(reason) > 120:
                reason = reason[:117] + "..."
            raise CorruptFileError(gettext_noop("This Word document is damaged and cannot be read (%(reason)s)."),
                                   reason=reason) from exc

    # -- headings --------------------------------------------------------------
    def _style_level(self, style_id: str | None) -> int | None:
        """Heading level of a paragraph style (Title = 0, Heading n = n), following base styles."""
        if style_id in self._levels:
            return self._levels[style_id]
        level = None
        try:
            from docx.enum.style import WD_STYLE_TYPE

            style = self._document.part.get_style(style_id, WD_STYLE_TYPE.PARAGRAPH)
            for _ in range(10):
                if style is None:
                    break
                name = (style.name or "").strip()
                match = _HEADING_NAME_RE.fullmatch(name)
                if match:
                    level = int(match.group(1))
                    break
                if name.lower() == "title":
                    level = 0
                    break
                outline = style.element.find(f"{_W}pPr/{_W}outlineLvl")
                if outline is not None and (outline.get(_VAL) or "").isascii() and (outline.get(_VAL) or "").isdigit():
                    value = int(outline.get(_VAL))
                    level = value + 1 if value < 9 else None
                    break
                style = style.base_style
        except Exception:  # noqa: BLE001 - odd styles just mean "not a heading"
            level = None
        self._levels[style_id] = level
        return level

    def _heading_level(self, p) -> int | None:
        outline = p.find(f"{_W}pPr/{_W}outlineLvl")
        if outline is not None and (outline.get(_VAL) or "").isascii() and (outline.get(_VAL) or "").isdigit():
            value = int(outline.get(_VAL))
            return value + 1 if value < 9 else None
        return self._style_level(p.style)

    # -- body --------------------------------------------------------------------
    def _iter_blocks(self) -> Iterator[Block]:
        stack: list[tuple[int, str]] = []
        path: tuple[str, ...] = ()
        body = self._document.element.body
        for child in _iter_content(body):
            if child.tag == _P:
                text = _para_text(child)
                if not text:
                    continue
                level = self._heading_level(child)
                if level is not None:
                    title = " ".join(text.split())
                    while stack and stack[-1][0] >= level:
                        stack.pop()
                    stack.append((level, title))
                    path = tuple(t for _, t in stack)
                    yield Block(text, None, path, "heading")
                else:
                    yield Block(text, None, path, "paragraph")
            elif child.tag == _TBL:
                rows = _table_rows(child)
                if rows:
                    yield Block("\n".join(rows), None, path, "table", table_header=rows[0])

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This Word document is damaged and cannot be read.")

    def _no_text_error(self) -> Exception:
        return NoTextError(gettext_noop("This Word document contains no text (only images, empty tables or blank pages?)."))
