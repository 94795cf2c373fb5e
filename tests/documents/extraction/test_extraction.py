"""Tests for documents.extraction.detect on real sample files and hostile input (no Django, no DB)."""

from __future__ import annotations

import io
import logging
import random
import re
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from documents.chunking import build_layout, chunk_layout
from documents.extraction.errors import ExtractionError
from documents.extraction.detect import (
    MIME_DOCX,
    MIME_MARKDOWN,
    MIME_PDF,
    MIME_TEXT,
    Block,
    Limits,
    detect_type,
    detect_type_path,
    extract,
)

DOCS = Path(__file__).resolve().parents[2] / "data"  # tests/data: real samples kept in the repository
PDFS = DOCS / "pdf"
DOCXS = DOCS / "docx"

ALL_SAMPLES = sorted([*PDFS.glob("*.pdf"), *DOCXS.glob("*.docx")])
assert len(ALL_SAMPLES) == 15, ALL_SAMPLES  # never an empty parametrisation that passes by collecting nothing

ENCRYPTED_MESSAGE = "This PDF is encrypted; upload it without a password."

logging.getLogger("pypdf").setLevel(logging.ERROR)  # damaged test PDFs are noisy


def blocks_of(path: Path, mime: str | None = None, **kw) -> list[Block]:
    return list(extract(path, mime or detect_type_path(path), **kw).blocks())


def error_of(fn, *args, **kw) -> ExtractionError:
    with pytest.raises(ExtractionError) as info:
        result = fn(*args, **kw)
        if hasattr(result, "blocks"):
            list(result.blocks())
    return info.value


# --- helpers that build test files ------------------------------------------------------

def make_pdf(pages: list[str | None], outline: tuple[tuple[str, int, str | None], ...] = ()) -> bytes:
    """A PDF with one Helvetica text line per "\\n"; None = a page without any text layer.
    ``outline`` holds (title, page index, parent title)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"),
        NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
        NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
    }))
    for text in pages:
        page = writer.add_blank_page(612, 792)
        if text:
            ops = ["BT", "/F1 11 Tf", "14 TL", "72 740 Td"]
            for line in text.split("\n"):
                escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
                ops.append(f"({escaped}) Tj T*")
            ops.append("ET")
            stream = DecodedStreamObject()
            stream.set_data("\n".join(ops).encode("cp1252"))
            page[NameObject("/Contents")] = writer._add_object(stream)
            page[NameObject("/Resources")] = DictionaryObject(
                {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    items: dict[str, object] = {}
    for title, page_index, parent in outline:
        items[title] = writer.add_outline_item(title=title, page_number=page_index, parent=items.get(parent))
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def write(tmp_path: Path, name: str, data: bytes | str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode(encoding) if isinstance(data, str) else data)
    return path


# --- every sample file --------------------------------------------------------------------

EXPECTED_ERRORS = {
    "libreoffice-writer-password.pdf": "encrypted",
    "tbl-having-tables.docx": "no_text",  # its three tables have only empty cells (see below)
}


@pytest.mark.parametrize("path", ALL_SAMPLES, ids=lambda p: p.name)
def test_every_sample_extracts_or_fails_with_a_clear_error(path):
    mime = detect_type_path(path)
    assert mime == {".pdf": MIME_PDF, ".docx": MIME_DOCX}[path.suffix]
    try:
        extraction = extract(path, mime)
        blocks = list(extraction.blocks())
    except ExtractionError as exc:
        # A sample that pypdf cannot parse (e.g. a broken /Pages tree) must be "corrupt".
        expected = EXPECTED_ERRORS.get(path.name, "corrupt")
        assert exc.code == expected, (exc.code, exc.message)
        assert exc.message and "Traceback" not in exc.message
        return
    assert path.name not in EXPECTED_ERRORS
    assert blocks and all(b.text.strip() == b.text and b.text for b in blocks)
    assert all("\x00" not in b.text for b in blocks)
    if mime == MIME_PDF:
        assert extraction.pages_total >= 1
        assert all(1 <= b.page_number <= extraction.pages_total for b in blocks)
    else:
        assert all(b.page_number is None for b in blocks)
    layout = build_layout(blocks)
    chunks = list(chunk_layout(layout, size=128, overlap=16))
    assert chunks
    assert all(layout.text[c.start:c.end] == c.content for c in chunks)


def test_pdf_page_numbers_and_progress():
    calls = []
    extraction = extract(PDFS / "pdflatex-4-pages.pdf", MIME_PDF, on_progress=lambda d, t: calls.append((d, t)))
    assert extraction.pages_total == 4
    blocks = list(extraction.blocks())
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert sorted({b.page_number for b in blocks}) == [1, 2, 3, 4]
    first = {}
    for b in blocks:
        first.setdefault(b.page_number, b.text)
    # the text that starts each page (read from the PDF) is attributed to that page
    assert first[1].startswith("Hello, here is some text without a meaning.")
    assert first[2].startswith("information. Really? Is there no information?")
    assert first[3].startswith("you information about the selected font")
    assert first[4].startswith("in of the original language.")
    # the printed page number at the bottom of each page is dropped
    assert not any(re.fullmatch(r"\d", b.text) for b in blocks)
    assert extraction.empty_pages == [] and extraction.warnings == []


def test_pdf_outline_gives_heading_paths():
    blocks = blocks_of(PDFS / "pdflatex-outline.pdf")
    headings = [(b.page_number, b.text, b.heading_path) for b in blocks if b.kind == "heading"]
    assert headings == [
        (2, "1 Foo", ("Foo",)), (2, "2 Bar", ("Bar",)), (2, "3 Baz", ("Baz",)), (2, "4 Foo", ("Foo",)),
        (3, "5 Bar", ("Bar",)), (3, "6 Baz", ("Baz",)), (3, "7 Foo", ("Foo",)),
        (4, "8 Bar", ("Bar",)), (4, "9 Baz", ("Baz",)),
    ]
    toc = blocks[0]
    assert toc.page_number == 1 and toc.heading_path == () and toc.text.startswith("Contents")
    # page 3 starts with the rest of section "4 Foo" (begun on page 2)
    page3 = [b for b in blocks if b.page_number == 3]
    assert page3[0].kind == "paragraph" and page3[0].heading_path == ("Foo",)
    # each paragraph carries the heading that precedes it
    current = ()
    for b in blocks:
        if b.kind == "heading":
            current = b.heading_path
        assert b.heading_path == current


def test_pdf_nested_outline_and_partly_empty_pages(tmp_path):
    data = make_pdf(
        ["Chapter One\nIntro text of the first chapter.", None,
         "Section 1.1\nDetails about the first section.", "Chapter Two\nClosing words here.", None],
        outline=(("Chapter One", 0, None), ("Section 1.1", 2, "Chapter One"), ("Chapter Two", 3, None)),
    )
    path = write(tmp_path, "nested.pdf", data)
    extraction = extract(path, detect_type_path(path))
    blocks = list(extraction.blocks())
    by_text = {b.text: b for b in blocks}
    assert by_text["Chapter One"].kind == "heading"
    assert by_text["Intro text of the first chapter."].heading_path == ("Chapter One",)
    assert by_text["Section 1.1"].heading_path == ("Chapter One", "Section 1.1")
    assert by_text["Details about the first section."].heading_path == ("Chapter One", "Section 1.1")
    assert by_text["Details about the first section."].page_number == 3
    assert by_text["Closing words here."].heading_path == ("Chapter Two",)
    assert extraction.empty_pages == [2, 5]
    assert extraction.warnings == ["Pages 2, 5 have no text layer (scanned?); they are not searchable."]


def test_pdf_single_empty_page_warning(tmp_path):
    path = write(tmp_path, "one-empty.pdf", make_pdf(["Some words.", None, "More words."]))
    extraction = extract(path, MIME_PDF)
    assert [b.text for b in extraction.blocks()] == ["Some words.", "More words."]
    assert extraction.empty_pages == [2]
    assert extraction.warnings == ["Page 2 has no text layer (scanned?); it is not searchable."]


def test_pdf_without_text_layer_is_no_text(tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(3):
        writer.add_blank_page(612, 792)
    buf = io.BytesIO()
    writer.write(buf)
    path = write(tmp_path, "scan.pdf", buf.getvalue())
    extraction = extract(path, detect_type_path(path))
    assert extraction.pages_total == 3
    with pytest.raises(ExtractionError) as info:
        list(extraction.blocks())
    assert info.value.code == "no_text"
    # Blank pages hold no image either, so OCR has nothing to read (tests/documents/extraction/test_ocr.py reads scans).
    assert info.value.message == ("No text layer on any of the 3 pages, and no scanned image on them "
                                  "for OCR to read.")
    assert extraction.empty_pages == [1, 2, 3]


def test_pdf_page_that_fails_to_parse_is_skipped_with_a_warning(tmp_path, monkeypatch):
    from pypdf import PageObject

    path = write(tmp_path, "three.pdf", make_pdf(["Page one text.", "Page two text.", "Page three text."]))
    original = PageObject.extract_text

    def flaky(self, *args, **kwargs):
        text = original(self, *args, **kwargs)
        if "two" in text:
            raise ValueError("broken content stream")
        return text

    monkeypatch.setattr(PageObject, "extract_text", flaky)
    extraction = extract(path, MIME_PDF)
    assert [(b.page_number, b.text) for b in extraction.blocks()] == [(1, "Page one text."), (3, "Page three text.")]
    assert extraction.empty_pages == [2]
    assert any("Page 2 could not be read" in w for w in extraction.warnings)


def test_encrypted_pdf_is_refused_with_a_clear_message():
    err = error_of(extract, PDFS / "libreoffice-writer-password.pdf", MIME_PDF)
    assert err.code == "encrypted"
    assert err.message == ENCRYPTED_MESSAGE


def test_arabic_pdf_has_text():
    text = "\n".join(b.text for b in blocks_of(PDFS / "habibi.pdf"))
    assert "habibi" in text
    assert len(re.findall(r"[\u0600-\u06FF]", text)) >= 8  # Arabic letters, not presentation forms
    assert not re.search(r"[\uFB50-\uFDFF\uFE70-\uFEFF]", text)


def test_truncated_pdf_is_corrupt(tmp_path):
    data = (PDFS / "pdflatex-4-pages.pdf").read_bytes()
    path = write(tmp_path, "half.pdf", data[: len(data) // 2])
    assert detect_type_path(path) == MIME_PDF  # the magic is still there
    err = error_of(extract, path, MIME_PDF)
    assert err.code == "corrupt"
    assert err.message.startswith("This PDF is damaged and cannot be read (")


def test_pdf_with_broken_pages_tree_is_corrupt(tmp_path):
    data = make_pdf(["Hello there."])
    kids = re.search(rb"/Kids \[[^\]]*\]", data).group()
    path = write(tmp_path, "badtree.pdf", data.replace(kids, b"/Kids 5".ljust(len(kids))))
    err = error_of(extract, path, MIME_PDF)
    assert err.code == "corrupt"
    assert err.message == "This PDF is damaged and cannot be read (its list of pages is broken)."
    # pages that point nowhere: pypdf sees zero pages, which is also reported as damage
    path = write(tmp_path, "nopages.pdf", data.replace(kids, b"/Kids [ 999 0 R ]".ljust(len(kids))))
    assert error_of(extract, path, MIME_PDF).code == "corrupt"


def test_random_bytes_named_pdf(tmp_path):
    """Detection is by content: random bytes have no %PDF- magic and are not text, so they are
    `unsupported_type`; if a caller insists on parsing them as PDF they are `corrupt`."""
    rng = random.Random(7)
    path = write(tmp_path, "random.pdf", bytes(rng.getrandbits(8) for _ in range(4096)))
    err = error_of(detect_type_path, path)
    assert err.code == "unsupported_type"
    assert "could not be recognised" in err.message
    assert error_of(extract, path, MIME_PDF).code == "corrupt"


def test_pdf_page_limit(tmp_path):
    path = write(tmp_path, "four.pdf", make_pdf(["a", "b", "c", "d"]))
    err = error_of(extract, path, MIME_PDF, limits=Limits(max_pages=3))
    assert err.code == "too_large"
    assert err.message == "This PDF has 4 pages; the limit is 3 pages."


def test_file_size_limit(tmp_path):
    path = write(tmp_path, "big.txt", "word " * 1000)
    assert error_of(extract, path, MIME_TEXT, limits=Limits(max_file_bytes=1000)).code == "too_large"


# --- DOCX -----------------------------------------------------------------------------------

def test_docx_known_styles_has_no_headings():
    import docx

    styles = [p.style.name for p in docx.Document(str(DOCXS / "sty-known-styles.docx")).paragraphs]
    assert styles == ["Normal", "Base", "Citation"]  # what python-docx sees: no heading style
    blocks = blocks_of(DOCXS / "sty-known-styles.docx")
    assert [(b.text, b.kind, b.heading_path) for b in blocks] == [
        ("Normal Paragraph.", "paragraph", ()),
        ("Base Paragraph.", "paragraph", ()),
        ("Citation Paragraph.", "paragraph", ()),
    ]


@pytest.mark.parametrize("name, heading, body", [
    ("par-known-paragraphs.docx", "Heading Paragraph", "Normal paragraph"),
    ("test.docx", "python-docx was here!", "python-docx was here too!"),
])
def test_docx_heading_1_samples(name, heading, body):
    blocks = blocks_of(DOCXS / name)
    assert [(b.text, b.kind, b.heading_path) for b in blocks] == [
        (heading, "heading", (heading,)), (body, "paragraph", (heading,))]


def test_docx_tables_with_only_empty_cells_give_no_text():
    import docx

    document = docx.Document(str(DOCXS / "tbl-having-tables.docx"))
    assert len(document.tables) == 3
    assert all(not c.text for t in document.tables for r in t.rows for c in r.cells)
    err = error_of(extract, DOCXS / "tbl-having-tables.docx", MIME_DOCX)
    assert err.code == "no_text"


def test_docx_paragraphs_and_tables_in_document_order():
    blocks = blocks_of(DOCXS / "blk-paras-and-tables.docx")
    assert [(b.kind, b.text) for b in blocks] == [
        ("paragraph", "Lorem ipsum dolor sit amet, consectetur adipiscing elit."),
        # a one-cell table holding a paragraph, a nested table (rows "Table", "Between") and
        # another paragraph, rendered in place
        ("table", "| Text before / Table / Between / Text after |"),
        ("paragraph", "Donec semper facilisis metus finibus malesuada."),
    ]


def test_docx_header_and_footer_are_ignored():
    text = "\n".join(b.text for b in blocks_of(DOCXS / "hdr-header-footer.docx"))
    assert "section with header" in text and "section without header of its own." in text
    assert "Header for section" not in text and "Footer for section" not in text


def make_docx(tmp_path: Path) -> Path:
    import docx

    d = docx.Document()
    d.sections[0].header.paragraphs[0].text = "CONFIDENTIAL HEADER"
    d.sections[0].footer.paragraphs[0].text = "Page footer text"
    d.add_heading("Annual Report", level=0)  # style "Title"
    d.add_paragraph("Opening words.")
    d.add_heading("Finance", level=1)
    d.add_heading("Revenue", level=2)
    d.add_paragraph("Revenue grew.")
    table = d.add_table(rows=3, cols=3)
    for r, row in enumerate([("Region", "Q1", "Q2"), ("North", "10", "12"), ("South", "7", "9")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    d.add_paragraph("After the table.")
    d.add_heading("Details", level=4)  # skipping level 3
    d.add_paragraph("Deep text.")
    d.add_heading("Costs", level=2)
    d.add_paragraph("Costs fell.")
    merged = d.add_table(rows=2, cols=2)
    merged.cell(0, 0).text = "Wide header"
    merged.cell(0, 0).merge(merged.cell(0, 1))
    merged.cell(1, 0).text = "left"
    merged.cell(1, 1).text = "right | with bar"
    d.add_heading("Outlook", level=1)
    d.add_paragraph("Line one\nline two")
    path = tmp_path / "report.docx"
    d.save(str(path))
    return path


def test_docx_heading_paths_tables_and_order(tmp_path):
    path = make_docx(tmp_path)
    assert detect_type_path(path) == MIME_DOCX
    blocks = blocks_of(path)
    got = [(b.kind, b.text, b.heading_path, b.table_header) for b in blocks]
    report, fin = "Annual Report", "Finance"
    assert got == [
        ("heading", "Annual Report", (report,), None),
        ("paragraph", "Opening words.", (report,), None),
        ("heading", "Finance", (report, fin), None),
        ("heading", "Revenue", (report, fin, "Revenue"), None),
        ("paragraph", "Revenue grew.", (report, fin, "Revenue"), None),
        ("table", "| Region | Q1 | Q2 |\n| North | 10 | 12 |\n| South | 7 | 9 |", (report, fin, "Revenue"),
         "| Region | Q1 | Q2 |"),
        ("paragraph", "After the table.", (report, fin, "Revenue"), None),
        ("heading", "Details", (report, fin, "Revenue", "Details"), None),
        ("paragraph", "Deep text.", (report, fin, "Revenue", "Details"), None),
        ("heading", "Costs", (report, fin, "Costs"), None),
        ("paragraph", "Costs fell.", (report, fin, "Costs"), None),
        ("table", "| Wide header |\n| left | right / with bar |", (report, fin, "Costs"), "| Wide header |"),
        ("heading", "Outlook", (report, "Outlook"), None),
        ("paragraph", "Line one\nline two", (report, "Outlook"), None),
    ]
    text = build_layout(blocks).text
    assert "CONFIDENTIAL" not in text and "footer" not in text


def test_docx_table_header_repeated_in_chunks(tmp_path):
    import docx

    d = docx.Document()
    table = d.add_table(rows=200, cols=3)
    for r, row in enumerate(table.rows):
        values = ("Name", "Amount", "Note") if r == 0 else (f"person {r}", str(r * 3), f"note {r}")
        for cell, value in zip(row.cells, values):
            cell.text = value
    path = tmp_path / "table.docx"
    d.save(str(path))
    layout = build_layout(blocks_of(path))
    chunks = list(chunk_layout(layout, size=100, overlap=20))
    assert len(chunks) > 5
    assert chunks[0].content.startswith("| Name | Amount | Note |\n") and "table_header" not in chunks[0].metadata
    for c in chunks[1:]:
        assert c.metadata["table_header"] == "| Name | Amount | Note |"
        assert c.embed_text.startswith("| Name | Amount | Note |\n")
        assert c.content.startswith("| person ") and layout.text[c.start - 1] == "\n"  # whole rows


def test_docx_zip_bomb_detected_without_decompressing(tmp_path, monkeypatch):
    path = tmp_path / "bomb.docx"
    zeros = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", "<w:document/>")
        with zf.open("word/media/image1.bin", "w", force_zip64=True) as fh:
            for _ in range(300):  # 300 MB of zeros, streamed
                fh.write(zeros)
    assert path.stat().st_size < 2_000_000
    assert detect_type_path(path) == MIME_DOCX

    def no_inflating(*args, **kwargs):
        raise AssertionError("a zip member was opened")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_inflating)
    started = time.process_time()  # CPU time: what other work on the machine does not stretch
    err = error_of(extract, path, MIME_DOCX)
    assert time.process_time() - started < 1.0
    assert err.code == "zip_bomb"
    assert err.message == ("This Word file expands to more than 200 MB when unpacked; "
                           "it was refused to protect the server.")


def test_docx_high_compression_ratio_is_refused(tmp_path):
    path = tmp_path / "ratio.docx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", "<w:document/>")
        zf.writestr("word/media/zeros.bin", bytes(20 << 20))  # 20 MB -> ~20 KB
    err = error_of(extract, path, MIME_DOCX)
    assert err.code == "zip_bomb"
    assert "expands" in err.message and "refused to protect the server" in err.message


def test_docx_that_is_not_a_zip(tmp_path):
    # text content named .docx: detection is by content, so it is a text file
    path = write(tmp_path, "notes.docx", "Just some plain notes, not a Word file.\n")
    assert detect_type_path(path) == MIME_TEXT
    err = error_of(extract, path, MIME_DOCX)  # a caller that insists on DOCX
    assert err.code == "corrupt"
    assert err.message == "This file is not a valid Word document (it is not a ZIP archive)."
    # PK magic but not a valid zip archive
    path = write(tmp_path, "broken.docx", b"PK\x03\x04" + bytes(range(256)) * 4)
    assert error_of(detect_type_path, path).code == "corrupt"
    assert error_of(extract, path, MIME_DOCX).code == "corrupt"


def test_other_zip_and_office_formats_are_unsupported(tmp_path):
    path = tmp_path / "archive.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")
    err = error_of(detect_type_path, path)
    assert err.code == "unsupported_type"
    assert "ZIP archive but not a Word document (.docx)" in err.message
    xlsx = tmp_path / "sheet.xlsx"
    with zipfile.ZipFile(xlsx, "w") as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("xl/workbook.xml", "<workbook/>")
    # .xlsx is read now (tests/documents/extraction/test_formats.py): detected from its parts, not its name
    assert detect_type_path(xlsx) == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    doc = write(tmp_path, "old.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(2000))
    err = error_of(detect_type_path, doc)
    assert err.code == "unsupported_type" and ".doc" in err.message
    png = write(tmp_path, "x.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    assert "PNG image" in error_of(detect_type_path, png).message


# --- detection & empty input --------------------------------------------------------------------

def test_empty_and_whitespace_files(tmp_path):
    for data in (b"", b"   \n\t\r\n  "):
        path = write(tmp_path, "empty.txt", data)
        err = error_of(detect_type_path, path)
        assert (err.code, err.message) == ("empty_file", "This file is empty.")
        assert error_of(extract, path, MIME_TEXT).code == "empty_file"
    assert error_of(detect_type, b"").code == "empty_file"
    assert error_of(extract, write(tmp_path, "e.pdf", b""), MIME_PDF).code == "empty_file"


def test_detect_type_from_head_bytes():
    assert detect_type(b"garbage\n%PDF-1.7\n...") == MIME_PDF  # magic within the first 1024 bytes
    assert detect_type(b"Plain words here.\nAnother line.") == MIME_TEXT
    assert detect_type(b"Plain words here.", filename="notes.md") == MIME_MARKDOWN
    assert detect_type(b"# Title\n\nSome text") == MIME_MARKDOWN
    assert detect_type(b"Intro\n\n```python\nx = 1\n```\n") == MIME_MARKDOWN
    assert detect_type(b"See [the docs](https://example.com) for more.") == MIME_MARKDOWN
    assert detect_type("Привет, мир".encode("utf-16")) == MIME_TEXT
    assert error_of(detect_type, bytes(range(256)) * 4).code == "unsupported_type"


# --- text encodings -----------------------------------------------------------------------------

RUSSIAN = ("Привет, мир! Это пример русского текста в кодировке Windows-1251. "
           "Съешь же ещё этих мягких французских булок, да выпей чаю.")
CZECH = ("Příliš žluťoučký kůň úpěl ďábelské ódy. Čeština je západoslovanský jazyk, "
         "nejbližší slovenštině. Šťastný nový rok, řekla Žofie.")


@pytest.mark.parametrize("encoding, sample, words", [
    ("utf-16", "Grüße aus Köln — 日本語のテキスト, Привет.", ["Grüße", "日本語のテキスト", "Привет"]),
    ("utf-16-be", "\ufeffBig endian text: Ελληνικά.", ["Ελληνικά"]),
    ("utf-8-sig", "BOM text: naïve café.", ["naïve", "café"]),
    ("utf-32", "Thirty-two bits: ½ ✓.", ["½", "✓"]),
    ("cp1251", RUSSIAN, ["Привет", "французских", "булок"]),
    ("cp1250", CZECH, ["Příliš", "žluťoučký", "kůň", "Šťastný", "Žofie"]),
])
def test_text_encodings(tmp_path, encoding, sample, words):
    path = write(tmp_path, "doc.txt", sample + "\n\nSecond paragraph.\n", encoding)
    assert detect_type_path(path) == MIME_TEXT
    extraction = extract(path, MIME_TEXT)
    blocks = list(extraction.blocks())
    assert [b.text for b in blocks] == [sample.lstrip("\ufeff"), "Second paragraph."]
    for word in words:
        assert word in blocks[0].text
    assert extraction.warnings == []


def test_undecodable_bytes_never_crash(tmp_path):
    data = ("Mostly fine text. " * 200).encode() + b"\xff\xfe\xfa broken \xc3\x28 bytes" + b" end."
    path = write(tmp_path, "mixed.txt", data)
    assert detect_type_path(path) == MIME_TEXT
    text = "\n".join(b.text for b in blocks_of(path, MIME_TEXT))
    assert text.startswith("Mostly fine text.") and text.endswith("end.")
    assert "broken" in text


def test_control_characters_are_removed(tmp_path):
    path = write(tmp_path, "ctl.txt", "alpha\x00beta\r\ngamma\x07 delta\x0cepsilon " + "filler " * 200)
    [block] = blocks_of(path, MIME_TEXT)
    assert block.text.startswith("alphabeta\ngamma delta\nepsilon")


def test_text_paragraphs_split_on_blank_lines(tmp_path):
    path = write(tmp_path, "p.txt", "\n\n  First para\nstill first.\n \t\nSecond.\n\n\n\nThird.  \n")
    assert [b.text for b in blocks_of(path)] == ["First para\nstill first.", "Second.", "Third."]


def test_50mb_text_without_newlines_bounded_memory(tmp_path):
    """A 50 MB file that is one giant paragraph: extraction keeps one copy of the text, and
    chunking tokenizes bounded windows instead of the whole string (which would need
    ~11 million Python ints, far above the limits asserted here)."""
    path = tmp_path / "huge.txt"
    rng = random.Random(3)
    words = ("lorem ipsum dolor sit amet, consectetur adipiscing elit. sed do eiusmod tempor "
             "incididunt ut labore et dolore magna aliqua. über café naïve").split()
    piece = (" ".join(rng.choice(words) for _ in range(100_000)) + " ").encode()
    with open(path, "wb") as fh:
        written = 0
        while written < 50_000_000:
            fh.write(piece)
            written += len(piece)
    started = time.process_time()  # CPU time: what other work on the machine does not stretch
    traced_chunks = 3_000  # tracing every one of the ~20k chunks would triple the run time
    tracemalloc.start()
    try:
        extraction = extract(path, detect_type_path(path))
        layout = build_layout(extraction.blocks())
        layout_current, layout_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        chunks = chunk_layout(layout)
        for count, chunk in enumerate(chunks, 1):
            assert layout.text[chunk.start:chunk.end] == chunk.content
            if count == traced_chunks:
                break
        chunk_current, chunk_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    covered = chunk.end
    for chunk in chunks:  # the rest, untraced
        assert chunk.start <= covered and chunk.token_count <= 512
        if chunk.index % 500 == 0:
            assert layout.text[chunk.start:chunk.end] == chunk.content
        covered = chunk.end
    elapsed = time.process_time() - started
    assert len(layout.text) > 49_000_000 and "\n" not in layout.text
    assert covered == len(layout.text)
    assert chunk.index > 15_000
    assert layout_peak < 400 * 2**20, layout_peak
    # chunking adds almost nothing on top of the text it chunks, and does not accumulate
    assert chunk_peak - layout_current < 32 * 2**20, (chunk_peak, layout_current)
    assert chunk_current - layout_current < 8 * 2**20, (chunk_current, layout_current)
    assert elapsed < 60, elapsed


# --- Markdown --------------------------------------------------------------------------------

def test_markdown_structure(tmp_path):
    md = "\n".join([
        "Preamble line.",
        "",
        "# Guide",
        "Intro under guide.",
        "",
        "## Install ##",
        "Run the installer.",
        "",
        "```bash",
        "pip install thing",
        "",
        "# not a heading inside code",
        "```",
        "",
        "### Linux",
        "Use apt.",
        "",
        "## Usage",
        "",
        "Setext Title",
        "============",
        "Under setext.",
        "",
        "#hashtag is not a heading",
        "~~~",
        "tilde fence",
        "~~~",
    ])
    path = write(tmp_path, "guide.txt", md)
    assert detect_type_path(path) == MIME_MARKDOWN
    got = [(b.kind, b.text, b.heading_path) for b in blocks_of(path)]
    assert got == [
        ("paragraph", "Preamble line.", ()),
        ("heading", "# Guide", ("Guide",)),
        ("paragraph", "Intro under guide.", ("Guide",)),
        ("heading", "## Install ##", ("Guide", "Install")),
        ("paragraph", "Run the installer.", ("Guide", "Install")),
        ("code", "```bash\npip install thing\n\n# not a heading inside code\n```", ("Guide", "Install")),
        ("heading", "### Linux", ("Guide", "Install", "Linux")),
        ("paragraph", "Use apt.", ("Guide", "Install", "Linux")),
        ("heading", "## Usage", ("Guide", "Usage")),
        ("heading", "Setext Title\n============", ("Setext Title",)),
        ("paragraph", "Under setext.", ("Setext Title",)),
        ("paragraph", "#hashtag is not a heading", ("Setext Title",)),  # no space after "#"
        ("code", "~~~\ntilde fence\n~~~", ("Setext Title",)),
    ]


def test_markdown_code_fence_kept_whole_in_one_chunk(tmp_path):
    code = "```python\n" + "\n".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(15)) + "```"
    md = "# Code\n\n" + "Some prose before the code. " * 40 + "\n\n" + code + "\n\n" + "Prose after. " * 40
    path = write(tmp_path, "code.md", md)
    layout = build_layout(blocks_of(path))
    chunks = list(chunk_layout(layout, size=300, overlap=50))
    assert len(chunks) >= 3
    assert sum(code in c.content for c in chunks) == 1
    span = next(s for s in layout.spans if s.kind == "code")
    assert not any(span.start < c.end < span.end for c in chunks)  # never cut inside the fence


def test_markdown_with_10000_headings_is_linear(tmp_path):
    parts = []
    for i in range(10_000):
        parts.append(f"# Chapter {i}\n\nText of chapter {i}.\n\n## Part {i}.1\n\nMore text {i}.\n")
    path = write(tmp_path, "many.md", "\n".join(parts))
    started = time.process_time()  # CPU time: what other work on the machine does not stretch
    blocks = blocks_of(path)
    layout = build_layout(blocks)
    chunks = list(chunk_layout(layout))
    elapsed = time.process_time() - started
    assert elapsed < 10, elapsed
    headings = [b for b in blocks if b.kind == "heading"]
    assert len(headings) == 20_000
    by_text = {b.text: b.heading_path for b in blocks}
    assert by_text["More text 9876."] == ("Chapter 9876", "Part 9876.1")
    assert by_text["Text of chapter 5."] == ("Chapter 5",)
    assert by_text["## Part 42.1"] == ("Chapter 42", "Part 42.1")
    assert len(chunks) == 20_000  # every heading starts a chunk; each section is small
    assert chunks[-1].heading_path == ("Chapter 9999", "Part 9999.1")
    assert chunks[-1].embed_text.startswith("Chapter 9999 > Part 9999.1\n")
