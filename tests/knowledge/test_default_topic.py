"""A collection's default topic: set by its curators, given to documents uploaded into it without one,
offered as a topic; a document's topic changed by its owner or curator (PATCH /api/documents/{id}/topic/)."""
from __future__ import annotations

import io

import pytest
from rest_framework.test import APIClient

from documents.models import Document
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_uploads_into_a_collection_take_its_default_topic_unless_they_name_one(kb):
    curator = client_for(kb.curator)
    changed = curator.patch("/api/collections/orchard/", {"category": "fruit", "subcategory": "quince"}, format="json")
    assert changed.status_code == 200 and (changed.json()["category"], changed.json()["subcategory"]) == ("fruit", "quince")

    def upload(data: bytes, **fields):
        response = curator.post("/api/documents/", {"file": io.BytesIO(data), "collection": "orchard", **fields},
                                format="multipart")
        assert response.status_code == 201, response.json()
        return response.json()

    plain = upload(b"Quince jelly needs pectin.")
    assert (plain["category"], plain["subcategory"]) == ("fruit", "quince")
    named = upload(b"Medlars are eaten bletted.", category="fruit", subcategory="medlar")
    assert (named["category"], named["subcategory"]) == ("fruit", "medlar")
    # Readers of the collection are offered its topic.
    topics = client_for(kb.member).get("/api/topics/").json()["topics"]
    assert {"category": "fruit", "subcategories": ["medlar", "quince"]} in topics
    assert client_for(kb.outsider).get("/api/topics/").json()["topics"] == []


def test_a_documents_topic_is_changed_by_its_owner_or_curator_only(kb, user):
    own = upload_bytes(user, b"My allotment notes.", "notes.txt")
    response = client_for(user).patch(f"/api/documents/{own.pk}/topic/", {"category": "garden", "subcategory": "beds"},
                                      format="json")
    assert response.status_code == 200 and response.json()["category"] == "garden"
    assert (Document.objects.get(pk=own.pk).category, Document.objects.get(pk=own.pk).subcategory) == ("garden", "beds")
    shared = f"/api/documents/{kb.document.pk}/topic/"
    assert client_for(kb.member).patch(shared, {"category": "x"}, format="json").status_code == 403
    assert client_for(kb.outsider).patch(shared, {"category": "x"}, format="json").status_code == 404
    assert client_for(kb.outsider).patch(f"/api/documents/{own.pk}/topic/", {"category": "x"},
                                         format="json").status_code == 404
    curated = client_for(kb.curator).patch(shared, {"subcategory": "quince"}, format="json")
    assert curated.status_code == 200 and curated.json()["subcategory"] == "quince"
