"""What ragsite says it accepts is what it reads: the pages' file pickers and hints, the admin's upload
pages and the OpenAPI schema are all made from the extraction code's one list (FILE_TYPES)."""
from __future__ import annotations

import html
import re

import pytest

from documents.extraction.errors import ExtractionError, UnsupportedTypeError
from documents.extraction.types import FILE_TYPES, MIME_PPTX, SUPPORTED_MIME_TYPES, upload_accept, upload_types_label
from documents.extraction.detect import detect_type_path, extract
from documents.models import Collection, Document
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes
from tests.documents.extraction.test_formats import make_pptx

LABEL = "PDF, Word, PowerPoint, Excel, CSV, HTML, EPUB, ODT, e-mail, text, Markdown"
# What a browser's picker must let through for each format the extractors read (the list must not
# quietly lose one: this is written out here on purpose, not derived).
MUST_ACCEPT = {".pdf", ".docx", ".pptx", ".xlsx", ".csv", ".html", ".htm", ".epub", ".odt", ".eml", ".txt", ".md",
               "application/vnd.openxmlformats-officedocument.presentationml.presentation", "message/rfc822"}


def _accepts(page: str) -> list[set[str]]:
    """The accept attribute of every file input of a page, split into its entries."""
    found = [html.unescape(m.group(1)) for m in re.finditer(r'<input[^>]*type="file"[^>]*accept="([^"]*)"', page, re.S)]
    return [set(a.split(",")) for a in found]


def test_one_list_gives_the_accept_attribute_the_label_and_the_extractors(tmp_path):
    assert upload_types_label() == LABEL
    accept = set(upload_accept().split(","))
    assert MUST_ACCEPT <= accept
    assert accept == {s for t in FILE_TYPES for s in t.suffixes} | set(SUPPORTED_MIME_TYPES)
    # Every listed type has an extractor: garbage of that type fails as damaged or empty, never as
    # "not supported" (which is what extract() says of a type it has no reader for).
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\x01 not really anything \xff" * 10)
    for mime in SUPPORTED_MIME_TYPES:
        try:
            list(extract(junk, mime).blocks())
        except UnsupportedTypeError as exc:  # pragma: no cover - the failure this test is for
            pytest.fail(f"{mime} is listed as supported but has no extractor: {exc.message}")
        except ExtractionError:
            pass
    with pytest.raises(UnsupportedTypeError):
        extract(junk, "application/x-unknown")
    # The "not supported" message names every type, with its file name endings.
    png = tmp_path / "picture.bin"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    with pytest.raises(UnsupportedTypeError) as refused:
        detect_type_path(png)
    for file_type in FILE_TYPES:
        assert f"{file_type.label} ({', '.join(file_type.suffixes)})" in refused.value.message


@pytest.mark.django_db
def test_the_library_and_admin_upload_pages_accept_every_supported_type(admin_client, admin_user):
    collection = Collection.objects.create(name="Handbook", slug="handbook", visibility="everyone")
    document = upload_bytes(admin_user, b"The pump runs on Tuesdays.", "pump.txt")
    pages = {
        "library": admin_client.get("/library/"),
        "collection upload": admin_client.get(f"/admin/documents/collection/{collection.pk}/upload/"),
        "new version": admin_client.get(f"/admin/documents/document/{document.pk}/upload-version/"),
    }
    for name, response in pages.items():
        assert response.status_code == 200, name
        page = response.content.decode()
        accepts = _accepts(page)
        # library: the drop zone's input and the collection's "Add files" input
        assert len(accepts) == (2 if name == "library" else 1), (name, accepts)
        for accept in accepts:
            assert accept == set(upload_accept().split(",")) and MUST_ACCEPT <= accept, (name, accept)
        assert LABEL in html.unescape(page), name
    # The library's "Upload new version" picker is made by library.js from the page's data.
    library = pages["library"].content.decode()
    data = re.search(r'<script id="library-data" type="application/json">(.*?)</script>', library, re.S).group(1)
    assert '"upload_accept": "' + upload_accept() + '"' in data
    from django.conf import settings

    assert "accept: initial.upload_accept" in (settings.BASE_DIR / "documents/static/documents/library.js").read_text()


@pytest.mark.django_db
def test_the_openapi_schema_lists_every_supported_content_type(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path in ("/api/documents/", "/api/documents/{id}/versions/"):
        body = schema["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]
        listed = {t.strip() for t in body["encoding"]["file"]["contentType"].split(",")}
        assert listed == set(SUPPORTED_MIME_TYPES), path
        assert MIME_PPTX in listed


@pytest.mark.django_db
def test_a_real_pptx_uploaded_through_the_library_endpoint_is_indexed(api, user, fake_embedder, tmp_path):
    deck = make_pptx(tmp_path / "water-plan.pptx").read_bytes()
    response = api.post("/api/documents/", {"file": _upload("water-plan.pptx", deck, MIME_PPTX)}, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["mime_type"] == MIME_PPTX
    index_document(response.json()["id"])
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == "indexed", document.index_error
    assert "Replace old valves" in " ".join(document.chunks.values_list("content", flat=True))
    # And as a new version of another document (another deck: the same file would be a duplicate).
    import pptx

    other = upload_bytes(user, b"Water plan, first draft: repair the reservoir.", "plan.txt")
    index_document(other.pk)
    second = pptx.Presentation(tmp_path / "water-plan.pptx")
    second.slides.add_slide(second.slide_layouts[5]).shapes.title.text = "Timeline: valves by June"
    second.save(tmp_path / "water-plan-2.pptx")
    response = api.post(f"/api/documents/{other.pk}/versions/",
                        {"file": _upload("water-plan.pptx", (tmp_path / "water-plan-2.pptx").read_bytes(), MIME_PPTX)},
                        format="multipart")
    assert response.status_code == 201, response.content
    index_document(other.pk)
    other.refresh_from_db()
    assert other.mime_type == MIME_PPTX and other.version == 2, (other.mime_type, other.version, other.index_error)


def _upload(name: str, data: bytes, content_type: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type=content_type)


def test_an_email_with_crlf_line_ends_is_an_email(tmp_path):
    # RFC 5322 messages end their lines with CRLF (every message an IMAP server returns does).
    path = tmp_path / "message"
    path.write_bytes(b"From: office@example.org\r\nTo: all@example.org\r\nSubject: Opening hours\r\n"
                     b"Message-ID: <x@example.org>\r\n\r\nThe library opens at nine.\r\n")
    assert detect_type_path(path, filename="message.eml") == "message/rfc822"
