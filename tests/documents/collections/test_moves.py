"""Moving a document between collections, and between a private library and a collection:
`PATCH /api/documents/{id}/` and the admin action. Readers lose and gain it with the commit, the
chunk and vector rows follow in the same transaction, and nothing is embedded again."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

from documents.models import Chunk, Collection, Document
from retrieval.models import ChunkEmbedding
from tests.chat.helpers import indexed
from tests.knowledge.conftest import SECRET, indexed_into
from tests.documents.collections.test_api import client_for
from tests.knowledge.test_isolation_matrix import QUESTION, SECRET_WORDS
from tests.knowledge.test_row_security import _unfiltered_counts

pytestmark = pytest.mark.django_db


@pytest.fixture
def vineyard(kb, django_user_model):
    """A second collection the same curators curate, read by another group with its own member."""
    growers = Group.objects.create(name="viticulture")
    collection = Collection.objects.create(name="Vineyard notes", slug="vineyard", visibility="groups",
                                           curator_group=kb.curators)
    collection.groups.add(growers)
    vera = django_user_model.objects.create_user(username="vera", password="vera-pass-123")
    vera.groups.add(growers)
    return collection, vera


def _reads(user, document) -> bool:
    """Whether `user` gets the document through the API, its search, and a filterless reader query."""
    api = client_for(user)
    detail = api.get(f"/api/documents/{document.pk}/").status_code == 200
    search = SECRET_WORDS in api.get("/api/search/", {"q": QUESTION}).content.decode()
    rows = _unfiltered_counts(user)["secret_chunks"] > 0
    assert detail == search == rows, (user.username, detail, search, rows)
    return detail


def _rows(document) -> list[tuple]:
    chunks = list(Chunk.objects.filter(document=document).values_list("pk", "collection_id", "owner_id"))
    vectors = list(ChunkEmbedding.objects.filter(document=document).values_list("pk", "collection_id", "owner_id"))
    return sorted(chunks) + sorted(vectors)


def test_moving_between_collections_hands_readers_over_at_once_and_keeps_the_vectors(
        kb, vineyard, fake_embedder, django_capture_on_commit_callbacks):
    vineyard_collection, vera = vineyard
    assert _reads(kb.member, kb.document) and not _reads(vera, kb.document)
    before = _rows(kb.document)
    embedded_before = len(fake_embedder.requests_to("/v1/embeddings"))

    with django_capture_on_commit_callbacks() as queued:
        response = client_for(kb.curator).patch(f"/api/documents/{kb.document.pk}/", {"collection": "vineyard"},
                                                format="json")
    # Nothing embedded and nothing queued (no indexing task waits after the commit).
    assert len(fake_embedder.requests_to("/v1/embeddings")) == embedded_before and queued == []
    assert response.status_code == 200, response.content
    assert response.json()["collection"] == vineyard_collection.pk and response.json()["status"] == "indexed"

    assert not _reads(kb.member, kb.document)  # the orchard's reader lost it with the commit
    assert _reads(vera, kb.document)  # the vineyard's reader has it now
    # The same chunk and vector rows (no re-indexing), carrying the new collection and the same owner.
    after = _rows(kb.document)
    assert [(pk, owner) for pk, _, owner in after] == [(pk, owner) for pk, _, owner in before]
    assert {collection for _, collection, _ in before} == {kb.collection.pk}
    assert {collection for _, collection, _ in after} == {vineyard_collection.pk}
    kb.document.refresh_from_db()
    assert kb.document.status == "indexed"
    # Narrowed searches follow too.
    orchard = client_for(kb.curator).get("/api/search/", {"q": QUESTION, "collection": "orchard"})
    assert SECRET_WORDS not in orchard.content.decode()
    assert SECRET_WORDS in client_for(vera).get("/api/search/", {"q": QUESTION, "collection": "vineyard"}).content.decode()


def test_a_private_document_moves_into_a_collection_and_back_to_its_uploader(kb):
    own = indexed(kb.curator, "Carol's draft: the quince orchard is pruned in late February, says the old guide.",
                  "draft.txt")
    assert not client_for(kb.member).get(f"/api/documents/{own.pk}/").status_code == 200
    shared = client_for(kb.curator).patch(f"/api/documents/{own.pk}/", {"collection": kb.collection.pk}, format="json")
    assert shared.status_code == 200 and shared.json()["collection"] == kb.collection.pk
    assert client_for(kb.member).get(f"/api/documents/{own.pk}/").status_code == 200
    assert set(Chunk.objects.filter(document=own).values_list("collection_id", flat=True)) == {kb.collection.pk}

    private = client_for(kb.curator).patch(f"/api/documents/{own.pk}/", {"collection": None}, format="json")
    assert private.status_code == 200 and private.json()["collection"] is None
    assert client_for(kb.member).get(f"/api/documents/{own.pk}/").status_code == 404
    assert set(ChunkEmbedding.objects.filter(document=own).values_list("collection_id", flat=True)) == {None}
    assert client_for(kb.curator).get(f"/api/documents/{own.pk}/").json()["collection"] is None
    # Sending nothing to change changes nothing.
    assert client_for(kb.curator).patch(f"/api/documents/{own.pk}/", {}, format="json").json()["collection"] is None


def test_only_curators_of_both_sides_move_and_a_refusal_changes_nothing(kb, vineyard, django_user_model):
    vineyard_collection, vera = vineyard
    url = f"/api/documents/{kb.document.pk}/"
    # A reader of the document: 403 (they see it); someone who does not see it: 404, nothing of it said.
    assert client_for(kb.member).patch(url, {"collection": "vineyard"}, format="json").status_code == 403
    hidden = client_for(kb.outsider).patch(url, {"collection": None}, format="json")
    assert hidden.status_code == 404 and "quince" not in hidden.content.decode()
    # A curator of the source only: a target they merely read is 403, one they cannot see 404.
    other_curators = Group.objects.create(name="vine-curators")
    Collection.objects.filter(pk=vineyard_collection.pk).update(curator_group=other_curators)
    kb.curator.groups.add(Group.objects.get(name="viticulture"))
    assert client_for(kb.curator).patch(url, {"collection": "vineyard"}, format="json").status_code == 403
    secret = Collection.objects.create(name="Board", slug="board", visibility="groups", curator_group=other_curators)
    assert client_for(kb.curator).patch(url, {"collection": secret.slug}, format="json").status_code == 404
    # A curator of the target only cannot take a document out of a collection they do not curate.
    vince = django_user_model.objects.create_user(username="vince", password="vince-pass-123", is_staff=True)
    vince.groups.add(other_curators, kb.readers)
    assert client_for(vince).patch(url, {"collection": "vineyard"}, format="json").status_code == 403
    # Private is its uploader's library only: another curator (even a superuser) cannot put it there.
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    refused = client_for(boss).patch(url, {"collection": ""}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "not_owner"
    # Someone else's private document is a 404 even to a superuser.
    own = indexed(kb.member, "Mia's private notes on quinces.", "mia.txt")
    assert client_for(boss).patch(f"/api/documents/{own.pk}/", {"collection": "orchard"}, format="json").status_code == 404
    assert Document.objects.get(pk=kb.document.pk).collection_id == kb.collection.pk
    assert Document.objects.get(pk=own.pk).collection_id is None
    assert set(Chunk.objects.filter(document=kb.document).values_list("collection_id", flat=True)) == {kb.collection.pk}


def test_the_same_file_twice_in_the_target_is_a_clear_conflict(kb, vineyard):
    vineyard_collection, _ = vineyard
    twin = indexed_into(vineyard_collection, kb.curator, SECRET, "quince-guide-copy.txt")
    response = client_for(kb.curator).patch(f"/api/documents/{kb.document.pk}/", {"collection": "vineyard"},
                                            format="json")
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "duplicate" and "Vineyard notes" in body["message"] and body["extra"]["document_id"] == twin.pk
    assert Document.objects.get(pk=kb.document.pk).collection_id == kb.collection.pk


def test_the_admin_action_asks_where_to_and_moves_as_the_staff_member(kb, vineyard):
    vineyard_collection, vera = vineyard
    # A curator who works in the admin: staff with the document admin's permissions.
    kb.curator.user_permissions.add(*Permission.objects.filter(codename__in=["view_document", "change_document"]))
    admin = Client()
    admin.force_login(kb.curator)
    changelist = reverse("admin:documents_document_changelist")
    kept = indexed(kb.member, "Mia's private notes on quinces.", "mia.txt")  # not the curator's to move
    asked = admin.post(changelist, {"action": "move", "_selected_action": [kb.document.pk]})
    assert asked.status_code == 200
    html = asked.content.decode()
    assert 'id="rs-move-target"' in html and "Vineyard notes (vineyard)" in html and "quince-guide" in html

    done = admin.post(changelist, {"action": "move", "_selected_action": [kb.document.pk, kept.pk],
                                   "rs_move": "yes", "target": str(vineyard_collection.pk)}, follow=True)
    assert done.status_code == 200
    text = done.content.decode()
    assert "Moved 1 document(s)" in text and "No such document" in text
    assert Document.objects.get(pk=kb.document.pk).collection_id == vineyard_collection.pk
    assert Document.objects.get(pk=kept.pk).collection_id is None
    assert _reads(vera, kb.document) and not _reads(kb.member, kb.document)

    # A target the staff member does not curate is refused before anything moves.
    board = Collection.objects.create(name="Board", slug="board", visibility="everyone")
    refused = admin.post(changelist, {"action": "move", "_selected_action": [kb.document.pk],
                                      "rs_move": "yes", "target": str(board.pk)}, follow=True)
    assert "Choose a collection you curate" in refused.content.decode()
    assert Document.objects.get(pk=kb.document.pk).collection_id == vineyard_collection.pk
