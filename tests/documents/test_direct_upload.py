"""Direct uploads to the bucket (POST /api/documents/upload-url/ and /finalize/) on a real SeaweedFS."""
from __future__ import annotations

import ast
import hashlib
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from documents.direct_upload import FINALIZE_GRACE, direct_uploads_expire
from documents.models import Document, PendingUpload

pytestmark = pytest.mark.django_db

TEXT = "\n\n".join(f"Section {i}: a big manual goes straight to the bucket." for i in range(30)).encode()


def _offer(api, data: bytes, *, name="manual.txt", content_type="text/plain", size=None):
    response = api.post("/api/documents/upload-url/", {"name": name, "size": len(data) if size is None else size,
                                                       "content_type": content_type}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _post(offer, data: bytes, *, content_type="text/plain") -> httpx.Response:
    return httpx.post(offer["url"], data=offer["fields"], files={"file": ("f", data, content_type)}, timeout=120)


def test_without_object_storage_both_endpoints_say_why(api):
    response = api.post("/api/documents/upload-url/", {"name": "a.pdf", "size": 10, "content_type": "application/pdf"},
                        format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "object_storage_unavailable"
    assert "POST /api/documents/" in response.json()["message"]
    response = api.post("/api/documents/finalize/", {"upload_id": "7d3f5f0e-7c39-4a53-9d5e-2a1b0c9d8e7f"},
                        format="json")
    assert (response.status_code, response.json()["code"]) == (400, "object_storage_unavailable")
    assert not PendingUpload.objects.exists()


def test_upload_straight_to_the_bucket_then_finalize_and_index(api, user, s3_storage, fake_embedder):
    offer = _offer(api, TEXT)
    assert offer["method"] == "POST" and offer["url"].startswith(s3_storage.server.endpoint)
    assert _post(offer, TEXT).status_code in (200, 201, 204)

    response = api.post("/api/documents/finalize/", {"upload_id": offer["upload_id"],
                                                     "sha256": hashlib.sha256(TEXT).hexdigest()}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["duplicate"] is False and body["status"] == "uploaded"
    assert body["mime_type"] == "text/plain" and body["size"] == len(TEXT) and body["name"] == "manual.txt"
    document = Document.objects.get(pk=body["id"])
    assert s3_storage.keys() == [document.file.name]  # one object: the pending key was removed after the copy
    assert not PendingUpload.objects.exists()

    from retrieval.tasks import index_document

    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    file = api.get(f"/api/documents/{document.pk}/file/")
    assert (httpx.get(file["Location"]).content if file.status_code == 302
            else b"".join(file.streaming_content)) == TEXT

    # The same bytes again: the existing document, and the second object is removed.
    again = _offer(api, TEXT, name="copy.txt")
    _post(again, TEXT)
    response = api.post("/api/documents/finalize/", {"upload_id": again["upload_id"]}, format="json")
    assert (response.status_code, response.json()["duplicate"], response.json()["id"]) == (200, True, document.pk)
    assert s3_storage.keys() == [document.file.name]


def test_the_signature_holds_the_size_and_the_type(api, s3_storage):
    offer = _offer(api, TEXT)
    too_big = _post(offer, TEXT + b"more")
    assert too_big.status_code == 400 and "EntityTooLarge" in too_big.text
    # The object's type is the signed form field: a client changing it breaks the policy.
    other_type = httpx.post(offer["url"], data={**offer["fields"], "Content-Type": "application/pdf"},
                            files={"file": ("f", TEXT, "application/pdf")}, timeout=30)
    assert other_type.status_code == 403
    assert s3_storage.keys() == []


def test_finalize_refuses_what_is_not_there_not_theirs_or_not_what_was_said(api, other_api, s3_storage):
    offer = _offer(api, TEXT)
    early = api.post("/api/documents/finalize/", {"upload_id": offer["upload_id"]}, format="json")
    assert (early.status_code, early.json()["code"]) == (409, "upload_incomplete")
    _post(offer, TEXT)
    assert other_api.post("/api/documents/finalize/", {"upload_id": offer["upload_id"]},
                          format="json").status_code == 404
    wrong_sum = api.post("/api/documents/finalize/", {"upload_id": offer["upload_id"], "sha256": "0" * 64},
                         format="json")
    assert (wrong_sum.status_code, wrong_sum.json()["code"]) == (400, "checksum_mismatch")
    assert s3_storage.keys() == [] and not PendingUpload.objects.exists()  # nothing partial left

    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200
    offer = _offer(api, png, name="scan.pdf", content_type="application/pdf")
    _post(offer, png, content_type="application/pdf")
    refused = api.post("/api/documents/finalize/", {"upload_id": offer["upload_id"]}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (415, "unsupported_type")
    assert s3_storage.keys() == [] and not Document.objects.exists()


def test_sizes_are_checked_before_any_url(api, s3_storage, settings):
    settings.MAX_UPLOAD_SIZE = 1000
    response = api.post("/api/documents/upload-url/", {"name": "big.pdf", "size": 5000,
                                                       "content_type": "application/pdf"}, format="json")
    assert (response.status_code, response.json()["code"]) == (413, "file_too_large")
    response = api.post("/api/documents/upload-url/", {"name": "x.pdf", "size": 10, "content_type": "not a type"},
                        format="json")
    assert response.status_code == 400
    assert not PendingUpload.objects.exists()


def test_uploads_never_finalised_are_removed_after_their_expiry(api, s3_storage):
    stale, fresh = _offer(api, TEXT), _offer(api, b"another file")
    _post(stale, TEXT)
    _post(fresh, b"another file", content_type="text/plain")
    PendingUpload.objects.filter(pk=stale["upload_id"]).update(
        expires_at=timezone.now() - FINALIZE_GRACE - timedelta(minutes=1))
    assert direct_uploads_expire() == 1
    assert list(PendingUpload.objects.values_list("pk", flat=True).order_by()) != []
    assert str(PendingUpload.objects.get().pk) == fresh["upload_id"]
    assert len(s3_storage.keys()) == 1
    late = api.post("/api/documents/finalize/", {"upload_id": stale["upload_id"]}, format="json")
    assert late.status_code == 404


def test_posting_again_after_finalize_cannot_swap_the_documents_bytes(api, s3_storage):
    """The presigned POST stays valid until it expires; the document's file is a copy under a key of
    its own, so bytes posted to the upload's key afterwards are never the ones indexed or served
    under the document's sha256 (issue #29)."""
    offer = _offer(api, TEXT)
    assert _post(offer, TEXT).status_code in (200, 201, 204)
    response = api.post("/api/documents/finalize/", {"upload_id": offer["upload_id"],
                                                     "sha256": hashlib.sha256(TEXT).hexdigest()}, format="json")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["id"])
    forged = TEXT.replace(b"manual", b"MALWAR")
    assert len(forged) == len(TEXT)
    assert _post(offer, forged).status_code in (200, 201, 204)  # the signature still holds...
    with document.file.open("rb") as stored:
        assert stored.read() == TEXT  # ...but the document's file is not where it writes
    assert hashlib.sha256(api.get(f"/api/documents/{document.pk}/file/").getvalue()).hexdigest() == document.sha256
    # Once the URL expired, what was posted again is removed (the schedule runs this), the document's copy kept.
    from django_q.models import Schedule

    from documents.direct_upload import direct_upload_leftover_remove

    leftover = Schedule.objects.get(func="documents.direct_upload.direct_upload_leftover_remove")
    assert leftover.next_run > timezone.now() + timedelta(seconds=60)
    assert len(s3_storage.keys()) == 2
    assert direct_upload_leftover_remove(*ast.literal_eval(leftover.args)) == "removed"
    assert s3_storage.keys() == [document.file.name]
