"""Every string a document brings along (titles, authors, headings, sheet and slide names, e-mail headers,
file names) is cleaned before it reaches the database: NUL, other control characters and lone surrogates
go, one-line fields lose their line breaks. A table: one file of each kind with dirty metadata in every
field its extractor reads, each of which must index and be found."""
from __future__ import annotations

import io
import re
import zipfile
from email.message import EmailMessage

import pytest

from documents.models import Document
from documents.services import document_upload
from retrieval.tasks import index_document
from tests.pdfgen import text_pdf

pytestmark = pytest.mark.django_db

# What a hostile or broken file can hold: NUL, bell, escape, a lone surrogate, line breaks in a one-line field.
DIRTY = "Dirty\x00 title\x07 with\x1b junk\ud800 and\nbreaks\tend"
# XML (Office, OpenDocument, EPUB) cannot carry NUL or C0 controls; what it can: DEL, C1, BOM, U+2028, breaks.
DIRTY_XML = "Dirty\x7f title\x85 with\x9b junk\ufeff and\u2028breaks\nend\tx"
# Text formats with a few control characters among ordinary text (a file of mostly control characters is binary).
FILLER = "The reservoir report lists the valves, the pumps and the pipes of every district. " * 40
JUNK = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


def _pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf([["The turbine spins at dawn."]]))))
    writer.add_metadata({"/Title": DIRTY.replace("\ud800", ""), "/Author": "A\x00uthor\x01", "/Subject": "S\x00ub\x1f"})
    writer.add_outline_item("Out\x00line\x07 entry\nsecond line", 0)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = DIRTY_XML
    document.core_properties.author = DIRTY_XML
    document.core_properties.subject = DIRTY_XML
    document.add_heading(DIRTY_XML, level=1)
    document.add_heading("Second\x85 level\x7f", level=2)
    document.add_paragraph("The aqueduct carries meltwater downhill.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Bud\x7fget\x85\ufeff"
    book.properties.title = DIRTY_XML
    book.properties.creator = DIRTY_XML
    sheet.append(["Department", "Amount"])
    sheet.append(["Hydrant maintenance", 1200])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _pptx() -> bytes:
    import pptx

    deck = pptx.Presentation()
    deck.core_properties.title = DIRTY_XML
    deck.core_properties.author = DIRTY_XML
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = DIRTY_XML
    slide.placeholders[1].text_frame.text = "Replace the corroded sluicegate"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _odt() -> bytes:
    from odf import dc
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.meta.addElement(dc.Title(text=DIRTY_XML))
    doc.text.addElement(H(outlinelevel=1, text=DIRTY_XML))
    doc.text.addElement(P(text="The pipeline's floodgate opened twice."))
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def _epub() -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("water-works")
    book.set_title(DIRTY_XML)
    book.set_language("en")
    book.add_author(DIRTY_XML)
    chapter = epub.EpubHtml(title=DIRTY_XML, file_name="ch1.xhtml", lang="en")
    chapter.content = "<html><body><h1>Cis&#x7f;terns&#x85;</h1><p>The cistern stores rainwater.</p></body></html>"
    book.add_item(chapter)
    book.toc = [chapter]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = [chapter]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def _eml() -> bytes:
    """NUL and control characters in encoded words (raw ones would make the file binary), and a raw 8-bit
    byte that is not UTF-8, which the e-mail parser hands on as a lone surrogate."""
    message = EmailMessage()
    message["From"] = "Ana Novak <ana@example.org>"
    message["To"] = "board@example.org"
    message["Subject"] = "Repair finished"
    message["Date"] = "Tue, 03 Mar 2026 10:00:00 +0100"
    message.set_content(f"Dear board,\n\nthe standpipe repair is finished.\n\n{FILLER}\n")
    return (bytes(message)
            .replace(b"From: Ana Novak", b"From: =?utf-8?q?Ana=00_Novak=07?= R\xe9")
            .replace(b"To: board", b"To: =?utf-8?q?bo=1Bard=00?= ")
            .replace(b"Subject: Repair finished", b"Subject: =?utf-8?q?Repair=00_fini=0Ashed=07?= R\xe9pair\xff"))


def _html() -> bytes:
    return ("<html><head><title>Wells&#0;&#xD800;\x01\x1b title</title></head><body><main>"
            "<h1>Wells&#0;\x07 &#xDC00;heading</h1><h2>Sub\x0bheading\x01</h2>"
            f"<p>The borehole reaches the aquifer.</p><p>{FILLER}</p></main></body></html>").encode()


# (file name, bytes, a word only that file holds)
SAMPLES = {
    "pdf": lambda: ("plan.pdf", _pdf(), "turbine"),
    "docx": lambda: ("report.docx", _docx(), "aqueduct"),
    "xlsx": lambda: ("budget.xlsx", _xlsx(), "hydrant"),
    "pptx": lambda: ("plan.pptx", _pptx(), "sluicegate"),
    "odt": lambda: ("report.odt", _odt(), "floodgate"),
    "epub": lambda: ("book.epub", _epub(), "cistern"),
    "eml": lambda: ("mail.eml", _eml(), "standpipe"),
    "html": lambda: ("page.html", _html(), "borehole"),
    "txt file name": lambda: ("no\x00tes\x07\ud800\x1b\nname.txt", b"The culvert was cleared on Monday.\n", "culvert"),
    "md file name": lambda: ("we\x00irs\udcff.md", f"# We\x01irs\x00\n\nThe weir keeps the millpond level.\n\n{FILLER}\n".encode(), "millpond"),
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_dirty_metadata_is_cleaned_and_the_file_indexes(kind, user, api, fake_embedder):
    name, data, word = SAMPLES[kind]()
    document = document_upload(owner=user, source=io.BytesIO(data), filename=name).document
    index_document(document.pk)
    document = Document.objects.get(pk=document.pk)
    assert document.status == "indexed", document.index_error
    for field in (document.title, document.original_filename):
        assert not JUNK.search(field), repr(field)
        assert "\n" not in field and "\t" not in field, repr(field)
    chunks = list(document.chunks.all())
    assert word in " ".join(c.content for c in chunks).lower()
    for chunk in chunks:
        for part in chunk.heading_path:
            assert not JUNK.search(part) and "\n" not in part, repr(part)
        assert not JUNK.search(chunk.content), repr(chunk.content)
    found = api.get("/api/search/", {"q": word})
    assert found.status_code == 200, found.content
    assert document.pk in {s["document_id"] for s in found.json()["segments"]}, found.json()
