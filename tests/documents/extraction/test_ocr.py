"""OCR of scanned PDFs made in the tests (text drawn into images, no text layer), with real Tesseract."""
from __future__ import annotations

import io

import pytest
from django.utils import translation
from pypdf import PdfReader, PdfWriter

from documents.chunking import build_layout, chunk_layout
from documents.extraction.errors import ExtractionError
from documents.extraction.detect import MIME_PDF, extract
from documents.extraction.ocr import OcrConfig, ocr_status
from tests.pdfgen import text_pdf
from tests.scans import SAMPLES, cer, scanned_pdf

NO_TESSERACT = OcrConfig(command="/nonexistent/tesseract")


def read(path, **kwargs):
    extraction = extract(path, MIME_PDF, **kwargs)
    return extraction, list(extraction.blocks())


def test_tesseract_and_the_language_data_are_installed():
    status = ocr_status()
    assert status.available, status.reason
    assert {"eng", "deu", "ces", "rus", "vie", "spa", "fra", "chi_sim"} <= status.languages


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_scanned_page_is_read_in_the_documents_language(tmp_path, language):
    code, paragraphs = SAMPLES[language]
    path = scanned_pdf(tmp_path / f"{language}.pdf", [paragraphs], language)
    notes: list[str] = []
    extraction, blocks = read(path, language=code, on_status=notes.append)
    text = "\n".join(b.text for b in blocks)
    # Clean 200-dpi scans: Latin and Cyrillic come out (nearly) perfect, Chinese a little worse.
    assert cer(" ".join(paragraphs), text) < (0.08 if language == "chi_sim" else 0.03), text
    assert all(b.page_number == 1 and b.ocr_confidence and b.ocr_confidence > 70 for b in blocks)
    assert extraction.ocr["pages"] == [1] and extraction.ocr["language"] == language
    assert extraction.ocr["language_decided_by"] == "document language"
    assert notes == ["OCR 1 of 1 pages", "OCR done: 1 of 1 pages"]
    assert any("read by OCR" in w for w in extraction.warnings)


@pytest.mark.parametrize("language", ["rus", "chi_sim", "fra"])
def test_without_a_language_a_first_pass_decides(tmp_path, language):
    _code, paragraphs = SAMPLES[language]
    path = scanned_pdf(tmp_path / "scan.pdf", [paragraphs, paragraphs[::-1]], language)
    extraction, blocks = read(path)
    assert extraction.ocr["language"] == language
    assert extraction.ocr["language_decided_by"].startswith(("script", "first pass"))
    assert extraction.ocr["pages"] == [1, 2]
    page_two = "\n".join(b.text for b in blocks if b.page_number == 2)
    assert cer(" ".join(paragraphs[::-1]), page_two) < 0.08


def _merge(*pdfs: bytes) -> bytes:
    writer = PdfWriter()
    for data in pdfs:
        for page in PdfReader(io.BytesIO(data)).pages:
            writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _mixed_pdf(tmp_path) -> tuple:
    """Page 1 has a text layer, page 2 is a scan (English)."""
    scan = scanned_pdf(tmp_path / "scan.pdf", [SAMPLES["eng"][1]], "eng").read_bytes()
    born_digital = text_pdf([["A page typed on a computer, with a real text layer."]])
    path = tmp_path / "mixed.pdf"
    path.write_bytes(_merge(born_digital, scan))
    return path, SAMPLES["eng"][1]


def test_only_pages_without_text_are_ocred_and_chunks_say_so(tmp_path):
    path, paragraphs = _mixed_pdf(tmp_path)
    extraction, blocks = read(path, language="en")
    assert [b.ocr_confidence is not None for b in blocks if b.page_number == 1] == [False]
    assert all(b.ocr_confidence for b in blocks if b.page_number == 2)
    assert extraction.ocr["pages"] == [2]
    assert extraction.empty_pages == []
    layout = build_layout(iter(blocks))
    chunks = list(chunk_layout(layout, strategy="fixed", size=120, overlap=0))
    scanned = [c for c in chunks if c.page_number == 2]
    assert scanned and all(c.metadata["ocr"]["pages"] == [2] and c.metadata["ocr"]["confidence"] > 70
                           for c in scanned)
    for chunk in chunks:  # a chunk running from page 1 onto page 2 names page 2 only
        covers_scan = 2 in chunk.metadata.get("pages", [chunk.page_number])
        assert ("ocr" in chunk.metadata) == covers_scan
    assert cer(" ".join(paragraphs), "\n".join(b.text for b in blocks if b.page_number == 2)) < 0.03


def test_without_tesseract_text_pages_still_index_and_the_scan_is_named(tmp_path):
    path, _ = _mixed_pdf(tmp_path)
    extraction, blocks = read(path, ocr=NO_TESSERACT)
    assert {b.page_number for b in blocks} == {1}
    assert extraction.empty_pages == [2]
    assert extraction.warnings == ["Page 2 has no text layer (scanned?); it is not searchable. "
                                   "OCR is not available on this server (Tesseract is not installed)."]


def test_a_scan_without_tesseract_fails_saying_ocr_is_unavailable(tmp_path):
    path = scanned_pdf(tmp_path / "scan.pdf", [SAMPLES["eng"][1]] * 2, "eng")
    with pytest.raises(ExtractionError) as info:
        read(path, ocr=NO_TESSERACT)
    assert info.value.code == "no_text"
    assert "OCR is not available on this server (Tesseract is not installed)" in info.value.message


def test_time_cap_per_page(tmp_path):
    path = scanned_pdf(tmp_path / "scan.pdf", [SAMPLES["deu"][1]], "deu")
    with pytest.raises(ExtractionError) as info:
        read(path, language="de", ocr=OcrConfig(page_seconds=0.05))
    assert info.value.message == "No text layer on the only page, and OCR could not read it: OCR took longer than 0.05 s."


def test_memory_cap_per_page(tmp_path):
    path, _ = _mixed_pdf(tmp_path)
    extraction, blocks = read(path, language="en", ocr=OcrConfig(page_memory_mb=16))
    assert {b.page_number for b in blocks} == {1}
    assert "Page 2: OCR failed (over the 16 MB memory cap, or unreadable image); not searchable." in extraction.warnings


def test_low_confidence_pages_are_listed_in_the_warnings(tmp_path):
    """A coarse, speckled scan: Tesseract reads it, unsure, and the page is named."""
    _code, paragraphs = SAMPLES["spa"]
    path = scanned_pdf(tmp_path / "noisy.pdf", [paragraphs], "spa", dpi=100, noise=0.05)
    extraction, _blocks = read(path, language="es")
    assert extraction.ocr["confidence"] < 60
    assert "Page 1 was read by OCR with low confidence (under 60%); the text may contain errors." \
        in extraction.warnings


@pytest.mark.django_db
def test_the_indexing_worker_ocrs_a_scan_in_the_uploaded_language(user, fake_embedder, tmp_path):
    from documents.models import Chunk
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_path

    _code, paragraphs = SAMPLES["rus"]
    path = scanned_pdf(tmp_path / "otchet.pdf", [paragraphs, paragraphs[:1]], "rus")
    document = upload_path(user, path, language="ru")
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    assert document.ocr["pages"] == [1, 2] and document.ocr["language"] == "rus"
    assert document.ocr["language_decided_by"] == "document language"
    assert document.progress_note == ""  # cleared once done
    with translation.override("en"):  # stored as reasons: read in English here, whatever language a test left active
        assert any("read by OCR (Russian" in w for w in document.index_warnings_text)
    chunks = list(Chunk.objects.filter(document=document))
    assert chunks and all(c.metadata["ocr"]["confidence"] > 70 for c in chunks)
    assert "водохранилища" in " ".join(c.content for c in chunks)
