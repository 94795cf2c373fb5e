"""The download of a superseded version's kept file (`?version=N`), for the viewer's pages of an old
citation: the same permission check as the current file, 404 for anything not kept."""
from __future__ import annotations

import io

import pytest

from documents.models import Document
from documents.versions import document_version_upload
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes
from tests.pdfgen import text_pdf

V1 = text_pdf([["Boiler pressure is read every Monday and written in the blue log book."],
               ["A reading under one bar is reported the same day."]])
V2 = text_pdf([["Boiler pressure is read every Friday and written in the green log book."],
               ["A reading under one bar is reported the same day."]])


def _two_versions(user) -> Document:
    document = upload_bytes(user, V1, "boiler.pdf")
    index_document(document.pk)
    document_version_upload(document_id=document.pk, user=user, source=io.BytesIO(V2), filename="boiler.pdf")
    index_document(document.pk)
    document.refresh_from_db()
    assert (document.status, document.version) == ("indexed", 2), document.index_error
    return document


def _body(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.mark.django_db
def test_an_old_version_is_downloaded_and_its_pages_shown(client, api, user, other_user, fake_embedder):
    document = _two_versions(user)
    client.force_login(user)
    base = f"/documents/{document.pk}/download/"
    assert _body(client.get(base)) == V2
    assert _body(client.get(base + "?version=2")) == V2
    old = client.get(base + "?version=1")
    assert old.status_code == 200 and _body(old) == V1
    assert old["Content-Type"] == "application/pdf" and "boiler.pdf" in old["Content-Disposition"]
    for missing in ("3", "0", "-1", "one", "1" * 30):
        assert client.get(base + f"?version={missing}").status_code == 404, missing
    assert _body(api.get(f"/api/documents/{document.pk}/file/?version=1")) == V1
    assert api.get(f"/api/documents/{document.pk}/file/?version=7").status_code == 404

    # The viewer of version 1 draws version 1's pages (PDF.js reads them from that download).
    page = client.get(f"/documents/{document.pk}/?version=1").content.decode()
    assert f'data-src="{base}?version=1"' in page and "blue log book" in page
    # ... and its Download button fetches version 1's file, not the current one.
    assert f'href="{base}?version=1" download=' in page
    current = client.get(f"/documents/{document.pk}/").content.decode()
    assert f'data-src="{base}"' in current and f'href="{base}" download=' in current

    # Someone who cannot see the document cannot fetch any of its versions.
    client.force_login(other_user)
    assert client.get(base + "?version=1").status_code == 404
    assert client.get(base).status_code == 404


@pytest.mark.django_db
def test_an_old_version_from_the_bucket_is_a_redirect_to_its_own_file(client, user, s3_storage, settings,
                                                                       fake_embedder):
    import httpx

    settings.S3_DOWNLOAD_REDIRECT_MIN_SIZE = 1
    document = _two_versions(user)
    client.force_login(user)
    old = client.get(f"/documents/{document.pk}/download/?version=1")
    assert old.status_code == 302 and old["Location"].startswith(s3_storage.server.endpoint)
    assert httpx.get(old["Location"], timeout=120).content == V1
    current = client.get(f"/documents/{document.pk}/download/")
    assert httpx.get(current["Location"], timeout=120).content == V2
