"""A document's title from the document itself: a PDF's /Title, a DOCX's core properties, the heading
its text opens with; the file name otherwise, and a title someone chose is never replaced."""
from __future__ import annotations

import io
import re
import zipfile

import pytest
from pypdf import PdfReader, PdfWriter

from documents.models import Document
from documents.titles import clean_title
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes
from tests.pdfgen import text_pdf

pytestmark = pytest.mark.django_db


def index(document) -> Document:
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    return document


def _pdf(title: str | None) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf([["Lower the boom when the wind exceeds 60 km/h."]]))))
    if title is not None:
        writer.add_metadata({"/Title": title})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _docx_titled(sample_data, title: str) -> bytes:
    source = zipfile.ZipFile(sample_data / "docx" / "test.docx")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "docProps/core.xml":
                data = re.sub(rb"<dc:title\s*/>|<dc:title>.*?</dc:title>",
                              f"<dc:title>{title}</dc:title>".encode(), data)
                assert title.encode() in data
            target.writestr(item, data)
    return out.getvalue()


def test_a_pdf_takes_the_title_it_gives_itself(user, fake_embedder):
    document = index(upload_bytes(user, _pdf("  Crane   safety manual "), "CSM-2026-v3_final.pdf"))
    assert document.title == "Crane safety manual"
    assert document.original_filename == "CSM-2026-v3_final.pdf"


def test_a_docx_takes_its_core_properties_title(user, sample_data, fake_embedder):
    document = index(upload_bytes(user, _docx_titled(sample_data, "Quarterly report &amp; outlook"), "q3.docx"))
    assert document.title == "Quarterly report & outlook"


def test_a_markdown_file_takes_the_heading_it_opens_with(user, fake_embedder):
    notes = b"# Project kickoff\n\n## Budget\n\nThe travel budget for 2026 is 12,000 EUR.\n"
    assert index(upload_bytes(user, notes, "notes-2026-01.md")).title == "Project kickoff"


def test_without_a_title_of_its_own_the_file_name_stays(user, fake_embedder):
    assert index(upload_bytes(user, _pdf(None), "site-safety.pdf")).title == "site-safety"
    assert index(upload_bytes(user, _pdf("Untitled"), "plan.pdf")).title == "plan"
    assert index(upload_bytes(user, _pdf("plan-final.docx"), "plan2.pdf")).title == "plan2"
    text = b"Some notes without any heading.\n\n# A heading further down\n"
    assert index(upload_bytes(user, text, "loose-notes.md")).title == "loose-notes"


def test_a_title_someone_chose_is_kept(user, fake_embedder):
    document = index(upload_bytes(user, _pdf("Crane safety manual"), "csm.pdf", title="Our crane rules"))
    assert document.title == "Our crane rules"
    # Renamed after indexing, then re-indexed: still the chosen name.
    Document.objects.filter(pk=document.pk).update(title="Crane rules (2026)", status="uploaded")
    assert index(document).title == "Crane rules (2026)"


def test_clean_title_is_one_line_and_drops_placeholders():
    assert clean_title("Annual\n report\t2025") == "Annual report 2025"
    assert clean_title("x" * 300) == "x" * 255
    assert clean_title("Microsoft Word - draft.doc") == ""
    assert clean_title(None) == "" and clean_title(" ") == ""
    # An identifier a tool put in the title field names no subject (a filing's accession number).
    assert clean_title("0001018724-18-000005") == "" and clean_title("2023-04-01_12") == ""
    assert clean_title("ADBE 10-K FY22") == "ADBE 10-K FY22" and clean_title("Zprávy 2024") == "Zprávy 2024"
    assert clean_title("北京") == "北京"


def test_a_slide_deck_takes_its_first_slides_title_text_without_the_slide_number(user, fake_embedder):
    from tests.documents.extraction.test_every_type_indexes import _pptx

    assert index(upload_bytes(user, _pptx(), "deck-v2.pptx")).title == "Water plan"
