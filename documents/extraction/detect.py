"""Turn an uploaded file into a lazy stream of text `Block`s.

Public API::

    detect_type(head: bytes, *, filename="") -> mime type        # from content
    detect_type_path(path) -> mime type                           # same, opens the zip for .docx
    extract(path, mime_type, *, on_progress=None, limits=Limits()) -> Extraction
    Extraction.blocks() -> Iterator[Block]                        # lazy generator

All permanent problems raise `documents.extraction.errors.ExtractionError` (with a `code`
and a user-facing `message`); they may be raised by `extract()` (opening,
encryption, zip bombs) or while iterating `blocks()` (no text, damaged pages...).
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

from documents.extraction.errors import (
    CorruptFileError,
    EncryptedError,
    EmptyFileError,
    ExtractionError,
    TooLargeError,
    UnsupportedTypeError,
    gettext_noop,
    phrase,
)
from documents.extraction.types import (
    BLOCK_KINDS,
    FILE_TYPES,
    MIME_CSV,
    MIME_DOCX,
    MIME_EML,
    MIME_EPUB,
    MIME_HTML,
    MIME_MARKDOWN,
    MIME_ODT,
    MIME_PDF,
    MIME_PPTX,
    MIME_TEXT,
    MIME_XLSX,
    SUPPORTED_MIME_TYPES,
    Block,
    Extraction,
    Limits,
    ProgressCallback,
    StatusCallback,
    human_size,
    upload_types_phrase,
)
from documents.extraction.email import EmlExtraction, looks_like_email
from documents.extraction.epub import EpubExtraction
from documents.extraction.html import HtmlExtraction, looks_like_html
from documents.extraction.odt import OdtExtraction
from documents.extraction.slides import PptxExtraction
from documents.extraction.spreadsheet import CsvExtraction, XlsxExtraction, sniff_csv
from documents.extraction.text import decode_sample, looks_like_markdown
from documents.extraction.ocr import OcrConfig

__all__ = [
    "BLOCK_KINDS",
    "Block",
    "Extraction",
    "ExtractionError",
    "Limits",
    "MIME_DOCX",
    "MIME_MARKDOWN",
    "MIME_PDF",
    "MIME_TEXT",
    "SUPPORTED_MIME_TYPES",
    "detect_type",
    "detect_type_path",
    "extract",
]

# The readers of the formats without options of their own (PDF, .docx and text take more).
_READERS: dict[str, Callable[..., Extraction]] = {
    MIME_XLSX: XlsxExtraction, MIME_CSV: CsvExtraction, MIME_PPTX: PptxExtraction, MIME_HTML: HtmlExtraction,
    MIME_EML: EmlExtraction, MIME_EPUB: EpubExtraction, MIME_ODT: OdtExtraction,
}
HEAD_BYTES = 64 * 1024  # how much of a file detect_type_path() reads
NOT_A_VALID_ZIP = gettext_noop("This file looks like a Word document or ZIP archive, but it is damaged and cannot be opened.")
_TYPES = upload_types_phrase()
_MARKDOWN_SUFFIXES = next(t.suffixes for t in FILE_TYPES if t.mime_type == MIME_MARKDOWN)
_TEXT_SUFFIXES = tuple(s for t in FILE_TYPES if t.mime_type in (MIME_TEXT, MIME_MARKDOWN) for s in t.suffixes)

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
# magic prefix -> what to call it in the error message (a phrase, translated where the reason is shown)


def _kind(text: str) -> dict:
    return phrase("kind.other", text)


_KNOWN_BINARIES: tuple[tuple[bytes, dict | None], ...] = (
    (b"\x89PNG\r\n\x1a\n", _kind(gettext_noop("a PNG image"))),
    (b"\xff\xd8\xff", _kind(gettext_noop("a JPEG image"))),
    (b"GIF87a", _kind(gettext_noop("a GIF image"))),
    (b"GIF89a", _kind(gettext_noop("a GIF image"))),
    (b"II*\x00", _kind(gettext_noop("a TIFF image"))),
    (b"MM\x00*", _kind(gettext_noop("a TIFF image"))),
    (b"BM", None),  # too short to trust on its own; only if the rest is binary
    (b"\x1f\x8b", _kind(gettext_noop("a gzip-compressed file"))),
    (b"7z\xbc\xaf\x27\x1c", _kind(gettext_noop("a 7-Zip archive"))),
    (b"Rar!\x1a\x07", _kind(gettext_noop("a RAR archive"))),
    (b"\x7fELF", _kind(gettext_noop("a program (executable)"))),
    (b"MZ", None),
    (b"%!PS", _kind(gettext_noop("a PostScript file"))),
    (b"{\\rtf", _kind(gettext_noop("an RTF document"))),
    (b"ID3", _kind(gettext_noop("an MP3 audio file"))),
    (b"OggS", _kind(gettext_noop("an Ogg audio/video file"))),
    (b"fLaC", _kind(gettext_noop("a FLAC audio file"))),
)


def _unsupported(what: dict | None) -> UnsupportedTypeError:
    if what:
        return UnsupportedTypeError(gettext_noop("This file looks like %(what)s; only %(types)s files are supported."),
                                    what=what, types=_TYPES)
    return UnsupportedTypeError(gettext_noop("The type of this file could not be recognised; only %(types)s files "
                                             "are supported."), types=_TYPES)


def _classify_zip_names(names: set[str] | list[str], mimetype: str | None = None) -> str:
    """The type of an Office/ebook zip from its part names (and its `mimetype` member, if read)."""
    names = set(names)
    if "[Content_Types].xml" in names and "word/document.xml" in names:
        return MIME_DOCX
    if "xl/workbook.xml" in names:
        return MIME_XLSX
    if "ppt/presentation.xml" in names:
        return MIME_PPTX
    if "META-INF/container.xml" in names and "content.xml" not in names:
        return MIME_EPUB
    if "content.xml" in names and (mimetype or "").strip() == MIME_ODT:
        return MIME_ODT
    if "mimetype" in names or "content.xml" in names:
        raise _unsupported(_kind(gettext_noop("an OpenDocument file other than text (.ods/.odp); save it as .xlsx, .pptx or PDF first")))
    if any(n.startswith("word/") for n in names):
        raise CorruptFileError(gettext_noop("This file is not a valid Word document (its main text part is missing)."))
    raise _unsupported(_kind(gettext_noop("a ZIP archive but not a Word document (.docx)")))


def _zip_local_names(head: bytes, limit: int = 64) -> list[str]:
    """File names of the local headers found in ``head`` (works on a truncated zip)."""
    names: list[str] = []
    pos = head.find(b"PK\x03\x04")
    while 0 <= pos and len(names) < limit and pos + 30 <= len(head):
        name_len, extra_len = struct.unpack_from("<HH", head, pos + 26)
        names.append(head[pos + 30: pos + 30 + name_len].decode("utf-8", "replace"))
        pos = head.find(b"PK\x03\x04", pos + 30 + name_len + extra_len)
    return names


def _detect_zip_head(head: bytes) -> str:
    # OpenDocument and EPUB store their type uncompressed as the first member, "mimetype".
    if b"mimetypeapplication/epub+zip" in head[:200]:
        return MIME_EPUB
    if f"mimetype{MIME_ODT}".encode() in head[:200]:
        return MIME_ODT
    try:
        with zipfile.ZipFile(io.BytesIO(head)) as zf:
            return _classify_zip_names(zf.namelist())
    except zipfile.BadZipFile:
        pass  # possibly just a truncated head of a bigger file
    names = _zip_local_names(head)
    if not names:
        raise CorruptFileError(NOT_A_VALID_ZIP)
    if "word/document.xml" in names or any(n.startswith("word/") for n in names):
        return MIME_DOCX
    if any(n.startswith("xl/") for n in names):
        return MIME_XLSX
    if any(n.startswith("ppt/") for n in names):
        return MIME_PPTX
    if "[Content_Types].xml" in names or any(n.startswith(("_rels/", "docProps/")) for n in names):
        return MIME_DOCX  # an Office file whose word/ part lies beyond the head
    raise _unsupported(_kind(gettext_noop("a ZIP archive but not a Word document (.docx)")))



def detect_type(head: bytes, *, filename: str = "", complete: bool | None = None) -> str:
    """The document type from the first bytes of a file (content decides, not the name).

    ``head`` should hold the first 64 KB or so; ``complete`` says whether it is the
    whole file (guessed from its size when omitted).  The file name only matters for
    text: a text or Markdown name (.txt, .md) keeps a file that quotes HTML or an
    e-mail as text, and chooses between text/plain and text/markdown.  Raises `ExtractionError` with code
    ``empty_file``, ``unsupported_type`` or ``corrupt``.
    """
    if complete is None:
        complete = len(head) < HEAD_BYTES
    if not head or (complete and not head.strip()):
        raise EmptyFileError(gettext_noop("This file is empty."))
    if b"%PDF-" in head[:1024]:
        return MIME_PDF
    if head.startswith(_ZIP_MAGICS):
        return _detect_zip_head(head)
    if head.startswith(_OLE_MAGIC):
        if "EncryptedPackage".encode("utf-16-le") in head:
            raise EncryptedError(gettext_noop("This Office file is password-protected; upload it without a password."))
        raise _unsupported(_kind(gettext_noop("an old-format Office file (.doc/.xls/.ppt); save it as .docx or PDF first")))
    if head[8:12] == b"WEBP" and head.startswith(b"RIFF"):
        raise _unsupported(_kind(gettext_noop("a WebP image")))
    decoded = decode_sample(head, complete=complete)
    if decoded is None:
        for magic, what in _KNOWN_BINARIES:
            if what and head.startswith(magic):
                raise _unsupported(what)
        raise _unsupported(None)
    text, _codec = decoded
    for magic, what in _KNOWN_BINARIES:  # text-like formats we still do not accept
        if what and magic in (b"%!PS", b"{\\rtf") and head.startswith(magic):
            raise _unsupported(what)
    if complete and not text.strip():
        raise EmptyFileError(gettext_noop("This file is empty."))
    # A name that says text (.txt, .md) is kept: such a file may quote a web page or an e-mail. The markup
    # is sniffed only when the name says nothing or says HTML.
    named_text = filename.lower().endswith(_TEXT_SUFFIXES)
    if not named_text and looks_like_html(text):
        return MIME_HTML
    if not named_text and looks_like_email(text):
        return MIME_EML
    if sniff_csv(text if complete else text[: text.rfind("\n") + 1],
                 named_csv=filename.lower().endswith((".csv", ".tsv"))):
        return MIME_CSV
    if looks_like_markdown(text) or filename.lower().endswith(_MARKDOWN_SUFFIXES):
        return MIME_MARKDOWN
    return MIME_TEXT


def detect_type_path(path: str | Path, *, filename: str = "") -> str:
    """`detect_type()` for a file on disk; a zip is checked through its central directory."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    complete = size <= len(head)
    if head.startswith(_ZIP_MAGICS):
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
                mimetype = None
                if "mimetype" in names and zf.getinfo("mimetype").file_size < 200:
                    mimetype = zf.read("mimetype").decode("ascii", "replace")
                return _classify_zip_names(names, mimetype)
        except zipfile.BadZipFile as exc:
            raise CorruptFileError(NOT_A_VALID_ZIP) from exc
    return detect_type(head, filename=filename or path.name, complete=complete)


def extract(
    path: str | Path,
    mime_type: str,
    *,
    on_progress: ProgressCallback | None = None,
    limits: Limits = Limits(),
    on_status: StatusCallback | None = None,
    language: str = "",
    ocr: OcrConfig | None = None,
) -> Extraction:
    """Open ``path`` as ``mime_type`` and return an `Extraction` whose `blocks()` is lazy.

    ``language`` (ISO 639-1, the document's field) picks the OCR language for scanned pages;
    ``on_status`` hears stages such as "OCR 12 of 40 pages".
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ExtractionError(gettext_noop("The uploaded file could not be found on the server.")) from exc
    if size == 0:
        raise EmptyFileError(gettext_noop("This file is empty."))
    if size > limits.max_file_bytes:
        raise TooLargeError(
            gettext_noop("This file is %(size)s; the limit is %(limit)s."), size=human_size(size),
            limit=human_size(limits.max_file_bytes)
        )
    if mime_type == MIME_PDF:
        from documents.extraction.pdf import PdfExtraction

        return PdfExtraction(path, limits=limits, on_progress=on_progress, on_status=on_status,
                             language=language, ocr=ocr)
    if mime_type == MIME_DOCX:
        from documents.extraction.docx import DocxExtraction

        return DocxExtraction(path, limits=limits, on_progress=on_progress)
    if mime_type in _READERS:
        return _READERS[mime_type](path, limits=limits, on_progress=on_progress)
    if mime_type in (MIME_TEXT, MIME_MARKDOWN):
        from documents.extraction.text import TextExtraction

        return TextExtraction(path, mime_type, limits=limits, on_progress=on_progress)
    raise _unsupported(None)
