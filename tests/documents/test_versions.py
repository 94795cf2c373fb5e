"""Document versions on real PostgreSQL: upload, switch-over, failure, citations of old versions, pruning."""
from __future__ import annotations

import io
import threading
import time

import pytest
from django.core.files.storage import default_storage
from django.db import connection

from chat.citations import make_citation
from documents.models import Chunk, Document, DocumentText, DocumentVersion
from documents.services import document_delete
from documents.versions import document_version_upload
from retrieval.models import EmbeddingCache
from retrieval.search import retrieve
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes
from tests.knowledge.conftest import kb  # noqa: F401 - the shared-collection fixture

PARAS_V1 = [f"Section {n}. The orchard rule {n} says trees in row {n} are pruned in month {n}. " + f"word{n} " * 80
            for n in range(10)]
PARAS_V2 = PARAS_V1[:4] + ["Section 4. The orchard rule four now says row four is never pruned. " + "fresh " * 80] \
    + PARAS_V1[5:]


def text_of(paragraphs: list[str]) -> bytes:
    return "\n\n".join(paragraphs).encode()


def index(document) -> Document:
    index_document(document.pk)
    document.refresh_from_db()
    return document


def new_version(document, user, data: bytes, name: str = "handbook.txt"):
    return document_version_upload(document_id=document.pk, user=user, source=io.BytesIO(data), filename=name)


@pytest.fixture
def indexed_v1(db, user, fake_embedder):
    document = index(upload_bytes(user, text_of(PARAS_V1), "handbook.txt"))
    assert document.status == "indexed", document.index_error
    return document


@pytest.mark.django_db
def test_api_uploads_lists_and_switches_versions(api, user, indexed_v1, django_capture_on_commit_callbacks):
    document = indexed_v1
    old_chunks = list(Chunk.objects.filter(document=document).values_list("id", flat=True))
    upload = io.BytesIO(text_of(PARAS_V2))
    upload.name = "handbook-2026.txt"
    response = api.post(f"/api/documents/{document.pk}/versions/", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    row = response.json()
    assert set(row) == {"number", "name", "size", "sha256", "uploaded_by", "created_at", "status", "index_error",
                        "chunk_count", "embedded_chunks", "reused_chunks"}
    assert (row["number"], row["name"], row["status"], row["uploaded_by"]) == (2, "handbook-2026.txt", "uploaded",
                                                                             user.username)
    document.refresh_from_db()
    # Waiting: the current version's chunks still answer.
    assert document.status == "reindexing" and document.version == 1
    assert list(Chunk.objects.filter(document=document).values_list("id", flat=True)) == old_chunks

    document = index(document)
    assert document.status == "indexed" and document.version == 2
    assert document.original_filename == "handbook-2026.txt" and document.sha256 == row["sha256"]
    assert "never pruned" in DocumentText.objects.get(document=document).text
    listed = api.get(f"/api/documents/{document.pk}/versions/").json()["results"]
    assert [v["number"] for v in listed] == [2, 1]
    assert [v["status"] for v in listed] == ["current", "superseded"]
    v2 = listed[0]
    assert v2["chunk_count"] == document.chunk_count == v2["embedded_chunks"] + v2["reused_chunks"]
    # Only the changed paragraph's chunks went to the embedder; the rest came from the cache.
    assert 0 < v2["embedded_chunks"] < v2["reused_chunks"]
    assert document.index_stats["reused_chunks"] == v2["reused_chunks"]
    old = DocumentVersion.objects.get(document=document, number=1)
    assert "pruned in month 4" in old.text and len(old.segments) == len(old_chunks)
    assert api.get(f"/api/documents/{document.pk}/").json()["version"] == 2


@pytest.mark.django_db
def test_who_may_upload_a_version(client, kb, django_user_model):
    from rest_framework.test import APIClient

    def as_user(u):
        c = APIClient()
        c.force_authenticate(u)
        return c

    def post(u):
        upload = io.BytesIO(b"A new quince guide: prune in March.")
        upload.name = "quince-guide.txt"
        return as_user(u).post(f"/api/documents/{kb.document.pk}/versions/", {"file": upload}, format="multipart")

    url = f"/api/documents/{kb.document.pk}/versions/"
    assert post(kb.member).status_code == 404  # a reader: no 403 that would say more than "not yours"
    assert post(kb.outsider).status_code == 404
    assert as_user(kb.outsider).get(url).status_code == 404
    assert as_user(kb.member).get(url).status_code == 200  # readers see the history of what they read
    assert DocumentVersion.objects.filter(document=kb.document).count() == 1
    response = post(kb.curator)
    assert response.status_code == 201 and response.json()["number"] == 2
    # One new version at a time: the document is waiting to be indexed now.
    again = post(kb.curator)
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"


@pytest.mark.django_db
def test_a_version_that_is_another_document_is_refused(user, indexed_v1):
    other = index(upload_bytes(user, b"Another handbook entirely.", "other.txt"))
    with pytest.raises(Exception) as refused:
        new_version(indexed_v1, user, b"Another handbook entirely.")
    assert getattr(refused.value, "code", "") == "duplicate"
    assert other.pk == refused.value.extra["document_id"]
    assert DocumentVersion.objects.filter(document=indexed_v1).count() == 1


@pytest.mark.django_db
def test_failed_version_leaves_the_current_one_answering(user, indexed_v1, fake_embedder):
    document = indexed_v1
    before = list(Chunk.objects.filter(document=document).values_list("id", "content"))
    new_version(document, user, text_of(PARAS_V2))
    fake_embedder.fail_next("/v1/embeddings", {"status": 400}, times=1)  # the new chunks fit one batch
    document = index(document)
    assert document.status == "indexed" and document.version == 1
    assert "Version 2 could not be indexed" in document.index_error and "Version 1 still answers" in document.index_error
    assert list(Chunk.objects.filter(document=document).values_list("id", "content")) == before
    failed = DocumentVersion.objects.get(document=document, number=2)
    assert failed.status == "failed" and failed.index_error
    assert DocumentVersion.objects.get(document=document, number=1).status == "current"
    hits = retrieve(user, "orchard rule four month 4").segments
    assert hits and all(s["document_version"] == 1 for s in hits)
    fake_embedder.reset()
    # The next version is accepted and indexed.
    assert new_version(document, user, text_of(PARAS_V2)).number == 3
    document = index(document)
    assert (document.status, document.version, document.index_error) == ("indexed", 3, "")


@pytest.mark.django_db
def test_citations_keep_pointing_at_the_version_they_quoted(client, user, indexed_v1):
    document = indexed_v1
    segment = next(s for s in retrieve(user, "orchard rule 4 month 4").segments if "month 4" in s["excerpt"])
    citation = make_citation("S1", segment)
    assert citation["document_version"] == 1
    new_version(document, user, text_of(PARAS_V2))
    document = index(document)
    assert document.version == 2
    client.force_login(user)
    page = client.get(f"/documents/{document.pk}/?version={citation['document_version']}").content.decode()
    assert "a newer version exists (version 2)" in page
    assert f'id="chunk-{citation["chunk_index"]}"' in page
    assert "pruned in month 4" in page and "never pruned" not in page
    current = client.get(f"/documents/{document.pk}/").content.decode()
    assert "never pruned" in current and "newer version exists" not in current
    assert "newer version exists" not in client.get(f"/documents/{document.pk}/?version=2").content.decode()
    # Another user cannot read an old version either.
    client.logout()
    from django.contrib.auth import get_user_model

    stranger = get_user_model().objects.create_user(username="stranger", password="x-pass-123456")
    client.force_login(stranger)
    assert client.get(f"/documents/{document.pk}/?version=1").status_code == 404


@pytest.mark.django_db
def test_old_versions_are_pruned_with_their_text_and_file(user, indexed_v1, settings,
                                                          django_capture_on_commit_callbacks):
    settings.DOCUMENT_VERSIONS_KEPT = 2
    document = indexed_v1
    first_file = DocumentVersion.objects.get(document=document, number=1).file.name
    for n, paragraphs in enumerate([PARAS_V2, PARAS_V1[:6]], start=2):
        new_version(document, user, text_of(paragraphs), f"v{n}.txt")
        with django_capture_on_commit_callbacks(execute=True):
            document = index(document)
        assert document.version == n
    assert list(DocumentVersion.objects.filter(document=document).values_list("number", flat=True)) == [3, 2]
    assert not default_storage.exists(first_file)
    files = list(DocumentVersion.objects.filter(document=document).values_list("file", flat=True))
    assert all(default_storage.exists(name) for name in files)
    with django_capture_on_commit_callbacks(execute=True):
        document_delete(document_id=document.pk, user=user)
    assert not any(default_storage.exists(name) for name in files)
    assert EmbeddingCache.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_questions_running_during_the_switch_see_one_whole_version(user, fake_embedder, django_db_serialized_rollback):
    document = index(upload_bytes(user, text_of(PARAS_V1), "handbook.txt"))
    new_version(document, user, text_of(PARAS_V2))
    results: list[list] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def ask() -> None:
        try:
            while not stop.is_set():
                results.append(retrieve(user, "orchard rule four row four pruned").segments)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        while len(results) < 3:
            time.sleep(0.02)
        index_document(document.pk)
        seen_before = len(results)
        while len(results) < seen_before + 3:
            time.sleep(0.02)
    finally:
        stop.set()
        asker.join(timeout=60)
    assert not errors, errors
    document.refresh_from_db()
    assert document.version == 2
    texts = {1: DocumentVersion.objects.get(document=document, number=1).text,
             2: DocumentText.objects.get(document=document).text}
    versions = []
    for segments in results:
        assert segments, "a question found nothing during the switch"
        in_result = {s["document_version"] for s in segments}
        assert len(in_result) == 1, in_result  # never a mix of both versions' chunks
        version = in_result.pop()
        assert all(s["excerpt"][:200] in texts[version] for s in segments)
        versions.append(version)
    assert versions[0] == 1 and versions[-1] == 2
    assert versions == sorted(versions)  # once switched, never back
