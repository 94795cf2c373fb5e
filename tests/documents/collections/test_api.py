"""The collections API, uploads into a collection, activation, deletion, and `ingest --collection`."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from documents.collections.services import collection_delete_task
from documents.models import Chunk, Collection, Document
from retrieval.models import ChunkEmbedding
from tests.knowledge.conftest import SECRET, indexed_into

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_readers_list_what_they_read_with_counts_and_others_see_nothing(kb):
    body = client_for(kb.member).get("/api/collections/").json()
    assert [(c["slug"], c["document_count"], c["can_curate"], c["groups"], c["curators"]) for c in body] == [
        ("orchard", 1, False, ["agronomy"], "kb-curators")]
    assert client_for(kb.outsider).get("/api/collections/").json() == []
    assert client_for(kb.outsider).get(f"/api/collections/{kb.collection.pk}/").status_code == 404
    assert client_for(kb.curator).get("/api/collections/orchard/").json()["can_curate"] is True


def test_curators_create_and_change_collections_readers_cannot(kb, django_user_model):
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    created = client_for(boss).post("/api/collections/", {
        "name": "Policies", "slug": "policies", "visibility": "everyone", "groups": [], "curators": "kb-curators"},
        format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["visibility"] == "everyone"
    assert client_for(kb.outsider).get("/api/collections/").json()[0]["slug"] == "policies"
    # Unknown groups are refused by name; a plain user cannot create.
    bad = client_for(boss).post("/api/collections/", {"name": "X", "slug": "x", "groups": ["nobody"]}, format="json")
    assert bad.status_code == 400 and "nobody" in bad.json()["message"]
    assert client_for(kb.member).post("/api/collections/", {"name": "Y", "slug": "y"}, format="json").status_code == 403

    changed = client_for(kb.curator).patch("/api/collections/orchard/", {"visibility": "groups",
                                                                         "groups": ["agronomy", "kb-curators"],
                                                                         "description": "Pruning and care"},
                                           format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["groups"] == ["agronomy", "kb-curators"]
    # A reader may not change it (403: they see it); an outsider does not even learn it exists (404).
    assert client_for(kb.member).patch("/api/collections/orchard/", {"name": "Mine"}, format="json").status_code == 403
    assert client_for(kb.outsider).patch("/api/collections/orchard/", {"name": "Mine"}, format="json").status_code == 404
    assert Collection.objects.get(pk=kb.collection.pk).name == "Orchard guides"


def test_upload_into_a_collection_needs_a_curator(kb):
    def upload(user, ref):
        return client_for(user).post("/api/documents/", {"file": io.BytesIO(b"Pear trees need a pollinator."),
                                                         "collection": ref}, format="multipart")

    created = upload(kb.curator, "orchard")
    assert created.status_code == 201, created.json()
    assert created.json()["collection"] == kb.collection.pk and created.json()["is_active"] is True
    assert upload(kb.member, kb.collection.pk).status_code == 403
    assert upload(kb.outsider, "orchard").status_code == 404
    # The same file again into the collection is a duplicate there, by whoever uploads it.
    assert upload(kb.curator, str(kb.collection.pk)).json()["duplicate"] is True
    rows = client_for(kb.member).get("/api/documents/").json()["results"]
    assert {(r["name"], r["collection"]) for r in rows} == {("quince-guide.txt", kb.collection.pk),
                                                            ("file", kb.collection.pk)}
    assert client_for(kb.member).get("/api/documents/?collection=own").json()["results"] == []


def test_deactivation_by_curators_hides_the_document_from_readers(kb):
    url = f"/api/documents/{kb.document.pk}/"
    assert client_for(kb.member).post(url + "deactivate/").status_code == 403  # readers may not
    assert client_for(kb.outsider).post(url + "deactivate/").status_code == 404
    response = client_for(kb.curator).post(url + "deactivate/")
    assert response.status_code == 200 and response.json()["is_active"] is False
    assert client_for(kb.member).get(url).status_code == 404
    assert client_for(kb.curator).get(url).json()["is_active"] is False  # curators still see it
    assert client_for(kb.curator).post(url + "activate/").json()["is_active"] is True
    assert client_for(kb.member).get(url).status_code == 200
    # Readers neither re-index nor delete.
    assert client_for(kb.member).post(url + "reindex/").status_code == 403
    assert client_for(kb.member).delete(url).status_code == 403
    assert Document.objects.filter(pk=kb.document.pk).exists()


def test_deleting_a_collection_asks_for_confirmation_then_removes_everything(kb, settings):
    stored = kb.document.file.name
    storage = kb.document.file.storage
    assert storage.exists(stored)
    curator = client_for(kb.curator)
    refused = curator.delete("/api/collections/orchard/")
    assert refused.status_code == 409 and refused.json()["code"] == "confirmation_required"
    assert client_for(kb.member).delete("/api/collections/orchard/?confirm=true").status_code == 403
    with _on_commit():
        assert curator.delete("/api/collections/orchard/?confirm=true").status_code == 204
    assert not Collection.objects.filter(pk=kb.collection.pk).exists()
    assert not Document.objects.filter(pk=kb.document.pk).exists()
    assert not Chunk.objects.filter(document_id=kb.document.pk).exists()
    assert not ChunkEmbedding.objects.filter(document_id=kb.document.pk).exists()
    assert not storage.exists(stored)


def test_a_big_collection_is_deactivated_at_once_and_deleted_in_the_background(kb, monkeypatch):
    from documents.collections import services as collections

    monkeypatch.setattr(collections, "DELETE_INLINE_MAX_DOCUMENTS", 1)
    indexed_into(kb.collection, kb.curator, "A second guide about medlars.", "medlar.txt")
    queued = []
    monkeypatch.setattr(collections, "_enqueue_delete", queued.append)
    with _on_commit():
        response = client_for(kb.curator).delete("/api/collections/orchard/?confirm=true")
    assert response.status_code == 202 and response.json() == {"documents": 2, "background": True}
    assert queued == [kb.collection.pk]
    assert Collection.objects.get(pk=kb.collection.pk).is_active is False  # nobody reads it meanwhile
    assert not Document.objects.visible_to(kb.member).exists()
    collection_delete_task(kb.collection.pk)
    collection_delete_task(kb.collection.pk)  # delivered twice: the second does nothing
    assert not Collection.objects.filter(pk=kb.collection.pk).exists()
    assert not Document.objects.filter(collection_id=kb.collection.pk).exists()


def test_ingest_command_loads_into_a_collection_without_a_user(kb, tmp_path, capsys, django_user_model):
    django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    (tmp_path / "a.txt").write_text("Medlars are picked after the first frost.")
    call_command("ingest", str(tmp_path / "a.txt"), "--collection", "orchard", "--wait")
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["status"] == "indexed"
    document = Document.objects.get(pk=line["id"])
    assert document.collection_id == kb.collection.pk and document.owner.username == "boss"
    assert Chunk.objects.filter(document=document, collection_id=kb.collection.pk).exists()


def test_conversations_attach_shared_documents_the_user_reads(kb):
    member, outsider = client_for(kb.member), client_for(kb.outsider)
    mine = member.post("/api/conversations/", {"document_ids": [kb.document.pk]}, format="json")
    assert mine.status_code == 201 and mine.json()["document_count"] == 1
    theirs = outsider.post("/api/conversations/", {}, format="json").json()
    attach = outsider.post(f"/api/conversations/{theirs['id']}/documents/", {"document_id": kb.document.pk},
                           format="json")
    assert attach.status_code == 404 and SECRET not in attach.content.decode()
    narrowed = member.patch(f"/api/conversations/{mine.json()['id']}/", {"collection": "orchard"}, format="json")
    assert narrowed.status_code == 200 and narrowed.json()["collection"] == "orchard"
    assert outsider.patch(f"/api/conversations/{theirs['id']}/", {"collection": "orchard"},
                          format="json").status_code == 404


class _on_commit:
    """Run on_commit callbacks at the end of the block (the test runs inside one transaction)."""

    def __enter__(self):
        from django.test import TestCase

        self._ctx = TestCase.captureOnCommitCallbacks(execute=True)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)
