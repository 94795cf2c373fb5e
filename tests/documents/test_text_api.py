"""GET /api/documents/{id}/text/, /chunks/ and /file/: what a viewer and a token client need."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from identity.tokens import token_create
from tests.chat.helpers import indexed
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

TEXT = "# Safety\n\nLadders are inspected before use.\n\n## Scaffolds\n\nA competent person inspects them weekly.\n"


def test_text_with_segments_whose_offsets_point_into_it(api, user, fake_embedder):
    document = indexed(user, TEXT, "safety.md")
    body = api.get(f"/api/documents/{document.pk}/text/").json()
    assert body["document_id"] == document.pk and body["text"].startswith("# Safety")
    assert body["segments"] and [s["chunk_index"] for s in body["segments"]] == list(range(len(body["segments"])))
    chunks = {c.pk: c for c in document.chunks.all()}
    for segment in body["segments"]:
        chunk = chunks[segment["chunk_id"]]
        assert body["text"][segment["start_offset"]:segment["end_offset"]] == chunk.content
        assert segment["heading_path"] == list(chunk.heading_path) and segment["page_number"] == chunk.page_number
    assert body["pages"] == []  # Markdown has no pages


def test_text_before_extraction_is_409_and_other_users_get_404(api, other_api, user):
    waiting = upload_bytes(user, b"Not indexed yet.", "later.txt")
    response = api.get(f"/api/documents/{waiting.pk}/text/")
    assert response.status_code == 409 and response.json()["code"] == "not_indexed"
    assert response.json()["extra"] == {"status": "uploaded"}
    for path in ("text", "chunks", "file"):
        response = other_api.get(f"/api/documents/{waiting.pk}/{path}/")
        assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_chunks_are_paginated_in_order(api, user, fake_embedder, settings):
    from retrieval.models import RetrievalSettings

    RetrievalSettings.objects.filter(pk=1).update(chunk_size=24, chunk_overlap=0)
    document = indexed(user, " ".join(f"Sentence number {i} about ladders and scaffolds." for i in range(30)))
    assert document.chunk_count > 3
    first = api.get(f"/api/documents/{document.pk}/chunks/?page_size=2").json()
    assert first["count"] == document.chunk_count and len(first["results"]) == 2
    assert [c["chunk_index"] for c in first["results"]] == [0, 1] and first["next"]
    second = api.get(first["next"]).json()
    assert [c["chunk_index"] for c in second["results"]] == [2, 3]
    assert set(first["results"][0]) == {"chunk_id", "chunk_index", "content", "start_offset", "end_offset",
                                        "page_number", "page_label", "heading_path", "token_count"}
    assert first["results"][0]["page_label"] is None  # a text file has no printed pages


def test_file_for_a_token_client_and_embedding_server_on_rows(user, fake_embedder):
    document = indexed(user, "Plain notes about the harbour.", "harbour.txt")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='test').key}")
    response = client.get(f"/api/documents/{document.pk}/file/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"Plain notes about the harbour."
    assert 'filename="harbour.txt"' in response["Content-Disposition"]
    assert client.get(f"/api/documents/{document.pk}/file/", HTTP_ACCEPT="text/plain").status_code == 200
    assert client.get(f"/api/documents/{document.pk}/").json()["embedding_server_id"] == fake_embedder.server_row.pk
    assert client.get("/api/documents/").json()["results"][0]["embedding_server_id"] == fake_embedder.server_row.pk
    document.file.delete(save=False)
    gone = client.get(f"/api/documents/{document.pk}/file/")
    assert gone.status_code == 404 and "no longer stored" in gone.json()["message"]
    assert APIClient().get(f"/api/documents/{document.pk}/file/").status_code == 401
