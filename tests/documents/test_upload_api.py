"""POST/GET/DELETE /api/documents/ and re-index: types by content, duplicates, limits, isolation."""
from __future__ import annotations

import asyncio
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django_q.models import OrmQ

from documents.models import Chunk, Document
from retrieval.models import ChunkEmbedding
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def post_file(api, data: bytes, name: str, **fields):
    return api.post("/api/documents/", {"file": SimpleUploadedFile(name, data), **fields}, format="multipart")


def queued_document_ids() -> list[int]:
    from django_q.signing import SignedPackage

    return [SignedPackage.loads(q.payload)["args"][0] for q in OrmQ.objects.all()]


def test_upload_stores_and_queues_indexing_after_commit(api, user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_file(api, b"Hello world. This is a plain text file.", "hello.txt",
                             title="Greeting", category="fruit", subcategory="raspberry, everbearing")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "uploaded"
    assert body["duplicate"] is False
    assert body["mime_type"] == "text/plain"
    assert body["title"] == "Greeting"
    assert body["subcategory"] == "raspberry, everbearing"
    document = Document.objects.get(pk=body["id"])
    assert document.owner == user
    assert document.file.read() == b"Hello world. This is a plain text file."
    assert queued_document_ids() == [document.pk]


def test_type_comes_from_the_content_not_the_name(api):
    md = post_file(api, b"# Title\n\nSome *text* with a [link](http://x).\n", "readme.txt").json()
    assert md["mime_type"] == "text/markdown"
    png = post_file(api, PNG, "photo.pdf")
    assert png.status_code == 415
    assert png.json()["code"] == "unsupported_type"
    assert "PNG" in png.json()["message"] or "image" in png.json()["message"].lower()
    assert not Document.objects.filter(original_filename="photo.pdf").exists()


def test_empty_file_is_refused_with_a_clear_message(api):
    response = post_file(api, b"", "empty.txt")
    assert response.status_code == 400
    assert response.json()["code"] == "empty_file"
    assert "empty" in response.json()["message"].lower()
    assert not Document.objects.exists()


def test_over_the_size_limit_is_413(api, settings):
    settings.MAX_UPLOAD_SIZE = 1000
    response = post_file(api, b"x " * 1000, "big.txt")
    assert response.status_code == 413
    assert response.json()["code"] == "file_too_large"
    assert not Document.objects.exists()


def test_same_owner_same_bytes_is_a_duplicate_other_owner_gets_their_own(api, other_api):
    first = post_file(api, b"same content here", "a.txt").json()
    again = post_file(api, b"same content here", "b.txt")
    assert again.status_code == 200
    assert again.json()["duplicate"] is True
    assert again.json()["id"] == first["id"]
    other = post_file(other_api, b"same content here", "a.txt")
    assert other.status_code == 201
    assert other.json()["id"] != first["id"]
    assert Document.objects.count() == 2


def test_list_is_own_newest_first_filtered_and_paginated(api, user, other_user):
    older = upload_bytes(user, b"first doc")
    newer = upload_bytes(user, b"second doc")
    upload_bytes(other_user, b"someone else's")
    Document.objects.filter(pk=older.pk).update(status="indexed")
    body = api.get("/api/documents/").json()
    assert [d["id"] for d in body["results"]] == [newer.pk, older.pk]
    assert body["count"] == 2
    indexed = api.get("/api/documents/?status=indexed").json()
    assert [d["id"] for d in indexed["results"]] == [older.pk]
    assert api.get("/api/documents/?status=bogus").status_code == 400
    assert [d["id"] for d in api.get("/api/documents/?owner=me&status=uploaded").json()["results"]] == [newer.pk]
    assert api.get("/api/documents/?owner=bob").json()["code"] == "invalid"
    page = api.get("/api/documents/?page_size=1").json()
    assert len(page["results"]) == 1 and page["next"]


def test_list_query_count_does_not_grow_with_documents(api, user, django_assert_max_num_queries):
    for i in range(30):
        upload_bytes(user, f"document number {i}".encode())
    with django_assert_max_num_queries(4):
        assert len(api.get("/api/documents/?page_size=30").json()["results"]) == 30


def test_detail_shows_progress_and_errors(api, user):
    document = upload_bytes(user, b"some text")
    Document.objects.filter(pk=document.pk).update(status="failed", index_error="This PDF is encrypted.",
                                                   pages_total=12, pages_done=3)
    body = api.get(f"/api/documents/{document.pk}/").json()
    assert body["status"] == "failed"
    assert body["index_error"] == "This PDF is encrypted."
    assert (body["pages_done"], body["pages_total"]) == (3, 12)
    for key in ("chunk_count", "embedding_model", "embedding_dim", "indexed_at", "index_warnings"):
        assert key in body


def test_another_users_document_is_404_everywhere(api, other_api, user):
    document = upload_bytes(user, b"private text")
    base = f"/api/documents/{document.pk}/"
    assert other_api.get(base).status_code == 404
    assert other_api.delete(base).status_code == 404
    assert other_api.post(base + "reindex/").status_code == 404
    assert other_api.get(base).json()["code"] == "not_found"
    assert Document.objects.filter(pk=document.pk).exists()
    assert api.get(base).status_code == 200


def test_delete_removes_file_chunks_and_vectors(api, user, django_capture_on_commit_callbacks):
    from retrieval.models import EmbeddingModel

    document = upload_bytes(user, b"to be deleted")
    chunk = Chunk.objects.create(document=document, owner=user, chunk_index=0, content="to", start_offset=0,
                                 end_offset=2)
    ChunkEmbedding.objects.create(chunk=chunk, document=document, owner=user,
                                  model=EmbeddingModel.objects.get(dim=384), embedding=[0.1] * 384)
    storage, name = document.file.storage, document.file.name
    assert storage.exists(name)
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/api/documents/{document.pk}/").status_code == 204
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.exists() and not ChunkEmbedding.objects.exists()
    assert not storage.exists(name)


def test_reindex_only_from_a_finished_state(api, user, django_capture_on_commit_callbacks):
    document = upload_bytes(user, b"reindex me")
    assert api.post(f"/api/documents/{document.pk}/reindex/").status_code == 409  # still uploaded
    Document.objects.filter(pk=document.pk).update(status="indexed", chunk_count=3)
    OrmQ.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/documents/{document.pk}/reindex/")
    assert response.status_code == 202
    assert response.json()["status"] == "reindexing"
    assert queued_document_ids() == [document.pk]


def test_asgi_edge_refuses_an_oversized_body_without_reading_it(settings):
    from core.asgi_limits import BodySizeLimitMiddleware

    settings.MAX_UPLOAD_SIZE = 1000
    called = {"app": False, "received": 0}

    async def app(scope, receive, send):
        called["app"] = True

    async def receive():
        called["received"] += 1
        return {"type": "http.request", "body": b"", "more_body": False}

    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/documents/",
             "headers": [(b"content-length", str(50 * 1024 * 1024).encode())]}
    asyncio.run(BodySizeLimitMiddleware(app)(scope, receive, send))
    assert called == {"app": False, "received": 0}
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["code"] == "file_too_large"


def test_asgi_edge_cuts_a_chunked_body_past_the_limit(settings):
    from core.asgi_limits import SLACK, BodySizeLimitMiddleware

    settings.MAX_UPLOAD_SIZE = 1000
    chunks = [b"x" * 65536] * ((SLACK // 65536) + 5)
    messages = iter([{"type": "http.request", "body": c, "more_body": True} for c in chunks])
    read = {"messages": 0, "app": False}

    async def app(scope, receive, send):
        read["app"] = True

    async def receive():
        read["messages"] += 1
        return next(messages)

    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/documents/", "headers": []}
    asyncio.run(BodySizeLimitMiddleware(app)(scope, receive, send))
    assert read["app"] is False  # a body without Content-Length is read at the edge: the app never ran
    assert read["messages"] < len(chunks)  # stopped early
    assert sent[0]["status"] == 413
