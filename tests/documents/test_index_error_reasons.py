"""Why indexing failed is stored as a code with parameters (core.reasons) and read in the reader's language:
the API by Accept-Language, the admin by the staff member's; a row written before reasons (free English
text) reads as it was written (issue #33)."""
from __future__ import annotations

import pytest
from django.utils import translation

from core.reasons import in_english, reason, render
from documents.models import Document
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db


def test_a_reason_is_rendered_in_the_active_language_with_nested_reasons_and_numbers():
    pages = reason("extraction.too_large", "This PDF has %(count)s pages; the limit is %(limit)s pages.",
                   count=2500, limit=2000)
    kept = reason("index.previous_version_kept", "%(reason)s The previous version stays searchable.", reason=pages)
    assert in_english(kept) == "This PDF has 2,500 pages; the limit is 2,000 pages. The previous version stays searchable."
    with translation.override("cs"):
        assert render(kept) == ("Toto PDF má 2\xa0500 stran; limit je 2\xa0000 stran. "
                                "Předchozí verze zůstává prohledávatelná.")
        assert render("Written before reasons existed.") == "Written before reasons existed."  # an old row
        assert render({}, fallback="the old text") == "the old text"
        # A text the catalogue lacks is shown in English, its parameters filled in.
        assert render(reason("x.new", "Nothing like %(what)s yet.", what="this")) == "Nothing like this yet."


def _failed_empty_file(user) -> Document:
    document = upload_bytes(user, b"soon to be empty", "notes.txt")
    with document.file.storage.open(document.file.name, "wb") as handle:
        handle.write(b"")
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "failed"
    return document


def test_an_indexing_error_is_stored_as_a_code_and_read_in_the_asked_language(api, user, fake_embedder):
    document = _failed_empty_file(user)
    assert document.index_error_reason == {"code": "extraction.empty_file", "text": "This file is empty.", "params": {}}
    assert document.index_error == "This file is empty."  # the English text for logs and machine output
    url = f"/api/documents/{document.pk}/"
    czech = api.get(url, HTTP_ACCEPT_LANGUAGE="cs").json()
    english = api.get(url, HTTP_ACCEPT_LANGUAGE="en").json()
    assert czech["index_error"] == "Tento soubor je prázdný."
    assert english["index_error"] == "This file is empty."
    assert czech["index_error_code"] == english["index_error_code"] == "extraction.empty_file"
    listed = api.get("/api/documents/", HTTP_ACCEPT_LANGUAGE="cs").json()["results"]
    assert [d["index_error"] for d in listed] == ["Tento soubor je prázdný."]


def test_an_error_with_parameters_reads_in_czech_in_the_admin(client, staff_user, user, fake_embedder, settings):
    from retrieval.indexing.pipeline import recover_stale_documents

    document = upload_bytes(user, b"A worker died while reading this.", "notes.txt")
    Document.objects.filter(pk=document.pk).update(status="processing", heartbeat_at=None,
                                                   index_attempts=settings.INDEX_MAX_ATTEMPTS)
    recover_stale_documents(enqueue=lambda document_id: None)
    document.refresh_from_db()
    assert document.status == "failed"
    assert document.index_error_reason["code"] == "index.interrupted"
    assert document.index_error_reason["params"] == {"times": settings.INDEX_MAX_ATTEMPTS}
    client.force_login(staff_user)
    page = client.get(f"/admin/documents/document/{document.pk}/change/", HTTP_ACCEPT_LANGUAGE="cs").content.decode()
    assert (f"Indexování bylo přerušeno {settings.INDEX_MAX_ATTEMPTS}× (pracovní proces se při zpracování "
            "souboru zastavil); vzdáváme to.") in page
    assert document.index_error not in page  # not the English sentence


def test_a_row_from_before_reasons_keeps_its_text(api, user, fake_embedder):
    document = _failed_empty_file(user)
    Document.objects.filter(pk=document.pk).update(index_error="The old worker wrote this.", index_error_reason={})
    shown = api.get(f"/api/documents/{document.pk}/", HTTP_ACCEPT_LANGUAGE="cs").json()
    assert (shown["index_error"], shown["index_error_code"]) == ("The old worker wrote this.", "")


def test_indexing_warnings_are_stored_as_reasons_and_read_in_the_asked_language(api, user, fake_embedder):
    from tests.pdfgen import text_pdf

    pdf = text_pdf([["Ladders.", "Inspect every ladder before use and never stand on the top rungs."], []])
    document = upload_bytes(user, pdf, "ladders.pdf")
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    stored = [w for w in document.index_warnings if isinstance(w, dict) and w["code"] == "extraction.blank_pages"]
    assert stored and stored[0]["params"]["pages"] == "2", document.index_warnings
    url = f"/api/documents/{document.pk}/"
    czech = api.get(url, HTTP_ACCEPT_LANGUAGE="cs").json()["index_warnings"]
    english = api.get(url, HTTP_ACCEPT_LANGUAGE="en").json()["index_warnings"]
    assert any(w.startswith("Strana 2 nemá textovou vrstvu (naskenovaná?); není prohledávatelná.") for w in czech), czech
    assert any(w.startswith("Page 2 has no text layer (scanned?); it is not searchable.") for w in english), english


def test_the_ocr_progress_note_reads_in_the_asked_language(api, user):
    from documents.extraction.errors import Note

    document = upload_bytes(user, b"Scanned pages are being read.", "scan.txt")
    note = Note("ocr_progress", "OCR %(done)s of %(total)s pages", done=3, total=12)  # as pdf_ocr reports it
    assert note == "OCR 3 of 12 pages"  # still the English string the progress callback always got
    Document.objects.filter(pk=document.pk).update(status="processing", progress_note=note,
                                                   progress_note_reason=note.reason)
    url = f"/api/documents/{document.pk}/"
    assert api.get(url, HTTP_ACCEPT_LANGUAGE="cs").json()["progress_note"] == "OCR 3 z 12 stran"
    assert api.get(url, HTTP_ACCEPT_LANGUAGE="en").json()["progress_note"] == "OCR 3 of 12 pages"
    Document.objects.filter(pk=document.pk).update(status="indexed", progress_note="")
    assert api.get(url, HTTP_ACCEPT_LANGUAGE="cs").json()["progress_note"] == ""  # idle: nothing, whatever was kept


def test_why_late_chunking_fell_back_reads_in_the_asked_language(api, user, fake_embedder):
    from retrieval.models import RetrievalSettings

    RetrievalSettings.objects.filter(pk=1).update(chunking_strategy="late")
    document = upload_bytes(user, b"Text for a server that only embeds whole passages.", "b.txt")
    index_document(document.pk)
    document.refresh_from_db()
    assert document.chunking_strategy == "tokens"
    assert document.chunking_note_reason["code"] == "chunking.no_token_embeddings"
    url = f"/api/documents/{document.pk}/"
    assert api.get(url, HTTP_ACCEPT_LANGUAGE="cs").json()["chunking_note"] == (
        "Pozdní dělení potřebuje vektory tokenů; server „fake embeddings“ je nenabízí, proto byla použita "
        "strategie „tokens“.")
    assert api.get(url, HTTP_ACCEPT_LANGUAGE="en").json()["chunking_note"] == document.chunking_note


def test_the_phrases_inside_an_error_read_in_the_asked_language_too():
    """A file's kind, the list of types, sizes and "and N more" are phrases of the catalogue, not English
    words frozen inside a translated sentence."""
    from documents.extraction import ExtractionError, detect_type
    from documents.extraction.types import format_page_list, human_size

    with pytest.raises(ExtractionError) as caught:
        detect_type(b"ID3\x04\x00\x00" + bytes(range(256)) * 4, filename="song.pdf", complete=True)
    error = caught.value
    assert error.message.startswith("This file looks like an MP3 audio file; only PDF (.pdf), Word (.docx), ")
    assert " and Markdown (.md" in error.message
    with translation.override("cs"):
        czech = render(error.reason)
        assert czech.startswith("Tento soubor vypadá jako zvukový soubor MP3; podporovány jsou jen soubory PDF (.pdf)")
        assert " a Markdown (.md" in czech and " and " not in czech
        assert render(human_size(1572864)) == "1,5 MB"
        assert render(human_size(512)) == "512 B"
        assert render(format_page_list(list(range(1, 31)))) == ", ".join(map(str, range(1, 21))) + " a další (10)"
    assert in_english(human_size(1572864)) == "1.5 MB"
    assert in_english(format_page_list(list(range(1, 31)))).endswith("20 and 10 more")
