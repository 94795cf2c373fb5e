"""Documents: badges, filters, read-only facts, first chunks, and the Re-index / Clear and re-index / Re-embed actions."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from documents.models import Chunk, Document, DocumentText
from retrieval.models import AiServer, ChunkEmbedding, RetrievalSettings
from tests.admin.conftest import indexed, queued_tasks, run_queued
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:documents_document_changelist"
INDEX_TASK = "retrieval.tasks.index_document"
LONG_TEXT = "\n\n".join(f"# Part {n}\n\n" + " ".join(f"Sentence {n}.{i} about raspberries and canes." for i in range(60))
                        for n in range(1, 4))


def listed(response) -> set[str]:
    return {d.title for d in response.context["cl"].result_list}


def test_list_shows_status_badges_and_filters(admin_client, user, other_user, fake_embedder):
    indexed(user, "Apples grow on trees.", "apples.txt", category="fruit")
    indexed(other_user, "Garlic is planted in autumn.", "garlic.txt", category="vegetables")
    broken = upload_bytes(user, b"broken file", "broken.txt")
    Document.objects.filter(pk=broken.pk).update(status="failed", index_error="The PDF is encrypted.")
    url = reverse(CHANGELIST)
    page = admin_client.get(url).content.decode()
    assert 'class="rs-badge rs-status-indexed"' in page and 'class="rs-badge rs-status-failed"' in page
    assert 'title="The PDF is encrypted."' in page
    assert listed(admin_client.get(url, {"status__exact": "failed"})) == {"broken"}
    assert listed(admin_client.get(url, {"owner__id__exact": other_user.pk})) == {"garlic"}
    assert listed(admin_client.get(url, {"embedding_model": "fake-embed"})) == {"apples", "garlic"}
    assert listed(admin_client.get(url, {"category": "vegetables"})) == {"garlic"}


def test_document_page_shows_facts_read_only_and_the_first_chunks(admin_client, user, fake_embedder):
    document = indexed(user, LONG_TEXT, "canes.md", category="fruit")
    url = reverse("admin:documents_document_change", args=[document.pk])
    response = admin_client.get(url)
    page = response.content.decode()
    form_fields = set(response.context["adminform"].form.fields)
    assert form_fields == {"title", "category", "subcategory", "review_by", "valid_until",
                           "expired_policy"}  # governance dates and the policy for expiry (issue #34)
    chunks = Chunk.objects.filter(document=document).order_by("chunk_index")
    assert chunks.count() > 1
    for fact in (document.sha256, ">Indexed</span>", f"{chunks.count()} of fake-embed (384d)"):
        assert fact in page, fact
    first = " ".join(chunks[0].content.split())
    assert re.search(r'<td class="field-heading">\s*<p>Part 1</p>', page)  # the heading path
    assert first[:60] in page  # the text
    # Facts cannot be changed by posting them.
    response = admin_client.post(url, {"title": "Canes", "category": "fruit", "subcategory": "raspberry",
                                       "status": "failed", "sha256": "0" * 64, "chunks-TOTAL_FORMS": "0",
                                       "chunks-INITIAL_FORMS": "0"})
    assert response.status_code == 302, response.content.decode()[:2000]
    document.refresh_from_db()
    assert (document.title, document.subcategory, document.status) == ("Canes", "raspberry", "indexed")
    assert document.sha256 != "0" * 64


def test_reindex_action_queues_indexing_and_refuses_busy_documents(admin_client, user, fake_embedder,
                                                                   django_capture_on_commit_callbacks):
    done = indexed(user, "Apples grow on trees.", "apples.txt")
    busy = upload_bytes(user, b"still waiting", "busy.txt")  # uploaded: its indexing is queued already
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse(CHANGELIST), {"action": "reindex", "_selected_action": [done.pk, busy.pk]},
                                     follow=True)
    texts = [str(m) for m in response.context["messages"]]
    assert "Re-indexing queued for 1 document(s)." in texts
    assert any(t.startswith("busy: This document is uploaded already") for t in texts), texts
    done.refresh_from_db()
    assert done.status == "reindexing" and done.chunk_count == 1  # the old chunk answers meanwhile
    assert [(t["func"], t["args"]) for t in queued_tasks()] == [(INDEX_TASK, (done.pk,))]
    assert run_queued() == ["indexed: 1 chunks"]


def test_clear_and_reindex_asks_first_then_deletes_and_queues(admin_client, user, fake_embedder,
                                                              django_capture_on_commit_callbacks):
    document = indexed(user, LONG_TEXT, "canes.md")
    busy = upload_bytes(user, b"being indexed", "busy.txt")
    Document.objects.filter(pk=busy.pk).update(status="processing")
    chunks = Chunk.objects.filter(document=document).count()
    selection = {"action": "clear_and_reindex", "_selected_action": [document.pk, busy.pk]}
    confirm = admin_client.post(reverse(CHANGELIST), selection)
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert f"<strong>{chunks} chunk(s)</strong> and <strong>{chunks} vector(s)</strong>" in page
    assert "find <strong>nothing</strong> of these documents" in page
    assert "fake embeddings" in page and "size 512, overlap 64" in page
    assert "busy (processing)" in page
    assert Chunk.objects.filter(document=document).count() == chunks  # nothing happened yet

    with django_capture_on_commit_callbacks(execute=True):
        done = admin_client.post(reverse(CHANGELIST), {**selection, "confirm": "yes"}, follow=True)
    texts = [str(m) for m in done.context["messages"]]
    assert "Cleared 1 document(s); their indexing is queued." in texts
    assert any("busy" in t and "processing" in t for t in texts), texts
    document.refresh_from_db()
    assert document.status == "uploaded" and document.chunk_count == 0 and document.embedding_model == ""
    assert not Chunk.objects.filter(document=document).exists()
    assert not ChunkEmbedding.objects.filter(document_id=document.pk).exists()
    assert not DocumentText.objects.filter(document=document).exists()
    assert [(t["func"], t["args"]) for t in queued_tasks()] == [(INDEX_TASK, (document.pk,))]
    assert Document.objects.get(pk=busy.pk).status == "processing"
    run_queued()
    document.refresh_from_db()
    assert document.status == "indexed" and document.chunk_count == chunks


def test_reembed_with_the_default_model(admin_client, user, fake_embedder, django_capture_on_commit_callbacks):
    old = indexed(user, "Apples grow on trees.", "apples.txt")
    waiting = upload_bytes(user, b"not indexed yet", "waiting.txt")
    bigger = AiServer.objects.create(name="fake 768", kind="openai", base_url=fake_embedder.url, read_timeout=10,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed-768",
                                                   "embedding_dim": 768})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=bigger)
    newer = indexed(user, "Pears grow on trees too.", "pears.txt")  # indexed with the new default already
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse(CHANGELIST), {"action": "reembed_default",
                                                           "_selected_action": [old.pk, waiting.pk, newer.pk]},
                                     follow=True)
    texts = [str(m) for m in response.context["messages"]]
    assert any(t.startswith("Re-embedding 1 document(s) with fake-embed-768 (768d)") for t in texts), texts
    assert "1 document(s) already use fake-embed-768 (768d)." in texts
    assert any(t.startswith("1 document(s) are not indexed") for t in texts), texts
    assert [(t["func"], t["args"]) for t in queued_tasks()] == [("retrieval.tasks.reembed_document",
                                                                 (old.pk, bigger.pk))]
    assert run_queued() == ["switched"]
    old.refresh_from_db()
    assert (old.embedding_model, old.embedding_dim) == ("fake-embed-768", 768)
    assert set(ChunkEmbedding.objects.filter(document_id=old.pk).values_list("model__dim", flat=True)) == {768}


def test_documents_cannot_be_added_in_the_admin(admin_client):
    assert admin_client.get(reverse("admin:documents_document_add")).status_code == 403


def test_upload_new_version_from_the_document_page(admin_client, user, fake_embedder):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from documents.models import DocumentVersion
    from retrieval.tasks import index_document

    document = indexed(user, "Pears are picked before they are ripe.", "pears.txt")
    change = admin_client.get(reverse("admin:documents_document_change", args=[document.pk])).content.decode()
    url = reverse("admin:documents_document_upload_version", args=[document.pk])
    assert url in change and "Upload new version" in change
    response = admin_client.post(url, {"file": SimpleUploadedFile("pears-v2.txt", b"Pears ripen off the tree.")})
    assert response.status_code == 302
    assert DocumentVersion.objects.get(document=document, number=2).uploaded_by == user  # the owner's own upload
    index_document(document.pk)
    document.refresh_from_db()
    assert (document.version, document.original_filename) == (2, "pears-v2.txt")
    change = admin_client.get(reverse("admin:documents_document_change", args=[document.pk])).content.decode()
    assert "v2 · pears-v2.txt · Current" in change and "v1 · pears.txt · Superseded" in change
    # A second version while one waits is refused with the service's message.
    admin_client.post(url, {"file": SimpleUploadedFile("pears-v3.txt", b"Pears: version three.")})
    refused = admin_client.post(url, {"file": SimpleUploadedFile("pears-v4.txt", b"Pears: version four.")},
                                follow=True).content.decode()
    assert "being indexed" in refused
