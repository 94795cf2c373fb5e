"""Collections in the admin: readers, curators and counts; the upload page; the collection's documents
(deactivate, activate, re-index); deletion with its documents after a confirmation."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from documents.models import Chunk, Collection, Document
from retrieval.models import ChunkEmbedding

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:documents_collection_changelist")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_curators_see_their_collections_with_readers_curators_and_counts(kb, django_user_model):
    page = _client(kb.curator).get(CHANGELIST)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Orchard guides" in html and "agronomy" in html and "kb-curators" in html
    assert "1 document(s)" in html and reverse("admin:documents_collection_upload", args=[kb.collection.pk]) in html
    # Staff who curate nothing see no collection, and cannot open this one.
    other = django_user_model.objects.create_user(username="sam", password="sam-pass-123", is_staff=True)
    assert "Orchard guides" not in _client(other).get(CHANGELIST).content.decode()
    change = reverse("admin:documents_collection_change", args=[kb.collection.pk])
    assert _client(other).get(change).status_code in (302, 404)
    assert _client(other).get(reverse("admin:documents_collection_upload", args=[kb.collection.pk])).status_code == 404
    # Creating takes the model permission.
    add = reverse("admin:documents_collection_add")
    assert _client(other).get(add).status_code == 403
    other.user_permissions.add(Permission.objects.get(codename="add_collection"))
    assert _client(other).get(add).status_code == 200


def test_the_upload_page_posts_each_file_to_the_documents_api(kb):
    page = _client(kb.curator).get(reverse("admin:documents_collection_upload", args=[kb.collection.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="rs-files" multiple' in html and '"orchard"' in html
    # The page's script is a static file of documents (no inline code: ready for a Content-Security-Policy).
    assert '<script src="/static/documents/admin_collection_upload.js"></script>' in html and "<script>" not in html
    script = _client(kb.curator).get("/static/documents/admin_collection_upload.js")
    assert 'xhr.open("POST", "/api/documents/")' in b"".join(script.streaming_content).decode()
    # That request, with the curator's session and CSRF token, is the library page's upload.
    client = Client(enforce_csrf_checks=True)
    client.force_login(kb.curator)
    token = client.get(reverse("admin:documents_collection_upload", args=[kb.collection.pk])).cookies["csrftoken"].value
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post("/api/documents/", {"file": SimpleUploadedFile("plums.txt", b"Plums ripen in August."),
                                                "collection": "orchard"}, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201, response.content
    assert Document.objects.get(pk=response.json()["id"]).collection_id == kb.collection.pk
    empty = client.post("/api/documents/", {"file": SimpleUploadedFile("empty.txt", b""), "collection": "orchard"},
                        HTTP_X_CSRFTOKEN=token)
    assert empty.status_code == 400 and empty.json()["code"] == "empty_file"


def test_the_collections_documents_are_deactivated_and_activated_from_the_document_admin(kb, staff_user):
    client = _client(staff_user)
    url = reverse("admin:documents_document_changelist")
    listed = client.get(url, {"collection__id__exact": kb.collection.pk})
    assert "quince-guide" in listed.content.decode()
    client.post(url, {"action": "deactivate", "_selected_action": [kb.document.pk]})
    assert Document.objects.get(pk=kb.document.pk).is_active is False
    assert not Chunk.objects.filter(document=kb.document, is_active=True).exists()
    client.post(url, {"action": "activate", "_selected_action": [kb.document.pk]})
    assert Document.objects.get(pk=kb.document.pk).is_active is True
    client.post(url, {"action": "reindex", "_selected_action": [kb.document.pk]})
    assert Document.objects.get(pk=kb.document.pk).status == "reindexing"


def test_deleting_a_collection_confirms_then_removes_documents_chunks_vectors_and_files(kb):
    delete = reverse("admin:documents_collection_delete", args=[kb.collection.pk])
    client = _client(kb.curator)
    page = client.get(delete)
    assert page.status_code == 200
    assert "<strong>1 document</strong>" in page.content.decode()  # a real plural form (was "1 document(s)")
    assert Collection.objects.filter(pk=kb.collection.pk).exists()  # asking deletes nothing
    name, storage = kb.document.file.name, kb.document.file.storage
    response = client.post(delete, {"confirm": "yes"})
    assert response.status_code == 302
    assert not Collection.objects.filter(pk=kb.collection.pk).exists()
    assert not Document.objects.filter(pk=kb.document.pk).exists()
    assert not Chunk.objects.filter(document_id=kb.document.pk).exists()
    assert not ChunkEmbedding.objects.filter(document_id=kb.document.pk).exists()


def test_library_page_shows_readable_collections_read_only_and_an_upload_for_curators(kb):
    member = _client(kb.member).get("/library/").content.decode()
    assert "Orchard guides" in member and "quince-guide" in member and "read-only" in member
    assert "data-collection-upload" not in member
    curator = _client(kb.curator).get("/library/").content.decode()
    assert 'data-collection-upload="orchard"' in curator
    assert "Orchard guides" not in _client(kb.outsider).get("/library/").content.decode()


def test_a_curator_manages_his_collections_documents_in_the_admin_without_model_permissions(kb, django_user_model):
    """carol holds no model permission: the collection rule lets her list, open, re-index, deactivate,
    move and delete her collection's documents, and nobody else's."""
    from documents.models import CollectionVisibility

    assert not kb.curator.user_permissions.exists() and not kb.curator.is_superuser
    client = _client(kb.curator)
    changelist = reverse("admin:documents_document_changelist")
    # The upload page's own link to the collection's documents, and the collection list's count link.
    upload = client.get(reverse("admin:documents_collection_upload", args=[kb.collection.pk])).content.decode()
    assert f"{changelist}?collection__id__exact={kb.collection.pk}" in upload
    listed = client.get(changelist, {"collection__id__exact": kb.collection.pk})
    assert listed.status_code == 200 and "quince-guide" in listed.content.decode()
    assert client.get(reverse("admin:documents_document_change", args=[kb.document.pk])).status_code == 200
    client.post(changelist, {"action": "reindex", "_selected_action": [kb.document.pk]})
    assert Document.objects.get(pk=kb.document.pk).status == "reindexing"
    Document.objects.filter(pk=kb.document.pk).update(status="indexed")
    client.post(changelist, {"action": "deactivate", "_selected_action": [kb.document.pk]})
    assert Document.objects.get(pk=kb.document.pk).is_active is False
    # Another collection's document: not listed, not opened, untouched by an action naming it.
    others = Collection.objects.create(name="Payroll", slug="payroll", visibility=CollectionVisibility.EVERYONE)
    owner = django_user_model.objects.create_user(username="pat", password="pat-pass-123")
    foreign = Document.objects.create(owner=owner, collection=others, title="salaries", original_filename="s.txt",
                                      status="indexed", sha256="f" * 64, size=1)
    assert "salaries" not in client.get(changelist).content.decode()
    assert client.get(reverse("admin:documents_document_change", args=[foreign.pk])).status_code in (302, 404)
    client.post(changelist, {"action": "reindex", "_selected_action": [foreign.pk]})
    client.post(changelist, {"action": "delete_documents", "_selected_action": [foreign.pk], "rs_delete": "yes"})
    assert Document.objects.get(pk=foreign.pk).status == "indexed"
    # Delete: a confirmation first, then the document goes with its chunks.
    ask = client.post(changelist, {"action": "delete_documents", "_selected_action": [kb.document.pk]})
    assert ask.status_code == 200 and "quince-guide" in ask.content.decode()
    assert Document.objects.filter(pk=kb.document.pk).exists()
    client.post(changelist, {"action": "delete_documents", "_selected_action": [kb.document.pk], "rs_delete": "yes"})
    assert not Document.objects.filter(pk=kb.document.pk).exists()
    assert not Chunk.objects.filter(document_id=kb.document.pk).exists()
    # Staff who curate nothing see no document admin at all.
    sam = django_user_model.objects.create_user(username="sam", password="sam-pass-123", is_staff=True)
    assert _client(sam).get(changelist).status_code == 403
