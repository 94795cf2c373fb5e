"""Every accepted file type, one real file each, through the real upload API and the worker's indexing
path (issue #29: every .xlsx upload failed because indexing read a temporary copy without a suffix,
while the extractor tests handed it paths ending in .xlsx)."""
from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.extraction import FILE_TYPES
from documents.models import Document
from retrieval.tasks import index_document
from tests.pdfgen import text_pdf

pytestmark = pytest.mark.django_db


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Reservoir", level=1)
    document.add_paragraph("The aqueduct carries meltwater downhill.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _pptx() -> bytes:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Water plan"
    slide.placeholders[1].text_frame.text = "Replace the corroded sluicegate"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Department", "Amount"])
    sheet.append(["Hydrant maintenance", 1200])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _epub() -> bytes:
    """A chapter with an internal DTD subset (entity declarations), as EPUB 2 books often have."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("water-works")
    book.set_title("Water Works")
    book.set_language("en")
    chapter = epub.EpubHtml(title="Cisterns", file_name="ch1.xhtml", lang="en")
    chapter.content = "<html><body><h1>Cisterns</h1><p>placeholder</p></body></html>"
    book.add_item(chapter)
    book.toc = [chapter]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = [chapter]
    written = io.BytesIO()
    epub.write_epub(written, book)
    # ebooklib rewrites a chapter's markup on writing: put the original one back in the zip.
    xhtml = ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
             '"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd" [\n  <!ENTITY nbsp "&#160;">\n  <!ENTITY copy "&#169;">\n]>\n'
             '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Cisterns</title></head>'
             "<body><h1>Cisterns</h1><p>The cistern stores rainwater&nbsp;underground.</p></body></html>")
    out = io.BytesIO()
    with zipfile.ZipFile(written) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            target.writestr(info, xhtml.encode() if info.filename.endswith("ch1.xhtml") else data)
    return out.getvalue()


def _odt() -> bytes:
    """With a heading whose outline level is odd ("²"): clamped, not a reason to refuse the file."""
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.text.addElement(H(outlinelevel=1, text="Annual report"))
    doc.text.addElement(H(outlinelevel="²", text="Odd level"))
    doc.text.addElement(P(text="The pipeline's floodgate opened twice."))
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def _eml() -> bytes:
    message = EmailMessage()
    message["From"] = "Ana Novak <ana@example.org>"
    message["To"] = "board@example.org"
    message["Subject"] = "Repair finished"
    message["Date"] = "Tue, 03 Mar 2026 10:00:00 +0100"
    message.set_content("Dear board,\n\nthe standpipe repair is finished.\n")
    return bytes(message)


# One real file of each accepted type: (file name, bytes, a word only that file holds).
SAMPLES = {
    "application/pdf": lambda: ("plan.pdf", text_pdf([["The turbine spins at dawn."]]), "turbine"),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
        lambda: ("report.docx", _docx(), "aqueduct"),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation":
        lambda: ("plan.pptx", _pptx(), "sluicegate"),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":
        lambda: ("budget.xlsx", _xlsx(), "hydrant"),
    "text/csv": lambda: ("pumps.csv", b"station,pump\nNorth,centrifugal\nSouth,peristaltic\n", "peristaltic"),
    "text/html": lambda: ("page.html", b"<html><head><title>Wells</title></head><body><main><h1>Wells</h1>"
                                       b"<p>The borehole reaches the aquifer.</p></main></body></html>", "borehole"),
    "application/epub+zip": lambda: ("book.epub", _epub(), "cistern"),
    "application/vnd.oasis.opendocument.text": lambda: ("report.odt", _odt(), "floodgate"),
    "message/rfc822": lambda: ("mail.eml", _eml(), "standpipe"),
    "text/plain": lambda: ("notes.txt", b"The culvert was cleared on Monday.\n", "culvert"),
    "text/markdown": lambda: ("notes.md", b"# Weirs\n\nThe weir keeps the millpond level.\n", "millpond"),
}


@pytest.mark.parametrize("file_type", FILE_TYPES, ids=[t.label for t in FILE_TYPES])
def test_every_accepted_type_uploads_indexes_and_is_searchable(file_type, api, fake_embedder):
    assert file_type.mime_type in SAMPLES, f"no sample file for {file_type.label}: add one to SAMPLES"
    name, data, word = SAMPLES[file_type.mime_type]()
    response = api.post("/api/documents/", {"file": SimpleUploadedFile(name, data, content_type=file_type.mime_type)},
                        format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["mime_type"] == file_type.mime_type
    document_id = response.json()["id"]
    index_document(document_id)  # what the worker runs for the queued task
    document = Document.objects.get(pk=document_id)
    assert document.status == "indexed", document.index_error
    text = " ".join(document.chunks.values_list("content", flat=True))
    assert word in text.lower(), text
    assert "]>" not in text, text
    found = api.get("/api/search/", {"q": word})
    assert found.status_code == 200, found.content
    assert document_id in {s["document_id"] for s in found.json()["segments"]}, found.json()


def test_a_docx_paragraph_with_an_odd_outline_level_is_body_text(tmp_path):
    """w:outlineLvl="²": "²".isdigit() is True and int() refuses it; the file failed as damaged."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    from documents.extraction import extract

    document = docx.Document()
    paragraph = document.add_paragraph("The penstock feeds the turbine.")
    level = OxmlElement("w:outlineLvl")
    level.set(qn("w:val"), "²")
    paragraph._p.get_or_add_pPr().append(level)
    path = tmp_path / "odd.docx"
    document.save(path)
    blocks = list(extract(path, "application/vnd.openxmlformats-officedocument.wordprocessingml.document").blocks())
    assert [(b.kind, b.text) for b in blocks] == [("paragraph", "The penstock feeds the turbine.")]


QUOTED_HTML = (b"<html><body>\n<p>How to write a web page: put the text inside the body element.</p>\n"
               b"</body></html>\nThe stylesheet notes for the intranet team end here.\n")


@pytest.mark.parametrize(("name", "expected"), [
    ("quoting.txt", "text/plain"), ("quoting.md", "text/markdown"), ("QUOTING.TXT", "text/plain"),
    ("page.html", "text/html"), ("page.htm", "text/html"), ("", "text/html"), ("noext", "text/html"),
])
def test_a_text_name_keeps_a_file_that_quotes_html_text(name, expected):
    from documents.extraction import detect_type

    assert detect_type(QUOTED_HTML, filename=name) == expected


def test_a_txt_file_that_quotes_html_indexes_as_text(api, fake_embedder):
    """It was sniffed as a web page and failed with "This web page has no text in its main content"."""
    response = api.post("/api/documents/", {"file": SimpleUploadedFile("quoting.txt", QUOTED_HTML)}, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["mime_type"] == "text/plain"
    index_document(response.json()["id"])
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == "indexed", document.index_error
    found = api.get("/api/search/", {"q": "stylesheet"})
    assert document.pk in {s["document_id"] for s in found.json()["segments"]}, found.json()
