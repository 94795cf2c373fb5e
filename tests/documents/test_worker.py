"""Indexing through a real django-q2 cluster in its own process: upload → indexed, and crash recovery."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.models import Chunk, Document
from retrieval.models import AiServer, ChunkEmbedding, RetrievalSettings
from tests.processes import ManagedProcess, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _status(pk: int) -> str:
    return Document.objects.values_list("status", flat=True).get(pk=pk)


def test_upload_through_the_api_is_indexed_by_a_real_worker(api, qcluster, fake_ai, database_url):
    server = AiServer.objects.create(name="fake", kind="openai", base_url=fake_ai.url,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server)
    text = "\n\n".join(f"Paragraph {i}: the worker indexes this text in its own process." for i in range(50))
    response = api.post("/api/documents/", {"file": SimpleUploadedFile("w.txt", text.encode())}, format="multipart")
    assert response.status_code == 201
    pk = response.json()["id"]
    wait_for(lambda: _status(pk) in ("indexed", "failed"), timeout=60, what="indexing", process=qcluster)
    document = Document.objects.get(pk=pk)
    assert document.status == "indexed", document.index_error
    assert Chunk.objects.filter(document=document).count() == document.chunk_count > 0
    assert fake_ai.requests_to("/v1/embeddings")  # the worker process called the embedding server


def test_worker_killed_mid_job_recovers_without_duplicates(api, fake_ai, database_url):
    """SIGKILL the whole cluster while it embeds; after a restart the document ends indexed."""
    server = AiServer.objects.create(name="slow fake", kind="openai", base_url=fake_ai.url, read_timeout=30,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server, embed_batch_size=8)
    fake_ai.fail_next("/v1/embeddings", {"delay_first_byte": 20}, times=1)
    env = {"INDEX_LEASE_SECONDS": "1"}
    first = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-killed", env=env)
    first.start()
    try:
        text = "\n\n".join(f"Section {i}. Recovery after a crash must not duplicate chunks." for i in range(60))
        response = api.post("/api/documents/", {"file": SimpleUploadedFile("k.txt", text.encode())},
                            format="multipart")
        pk = response.json()["id"]
        wait_for(lambda: fake_ai.requests_to("/v1/embeddings"), timeout=60, what="embedding started", process=first)
        assert _status(pk) == "processing"
    finally:
        first.kill()  # SIGKILL to the cluster and its workers
    assert _status(pk) == "processing"  # nobody finished it

    second = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-restarted", env=env)
    second.start()
    try:
        wait_for(lambda: _status(pk) in ("indexed", "failed"), timeout=90, what="recovery", process=second)
    finally:
        second.stop()
    document = Document.objects.get(pk=pk)
    assert document.status == "indexed", document.index_error
    assert document.index_attempts == 2
    chunks = Chunk.objects.filter(document=document)
    assert chunks.count() == document.chunk_count
    assert len(set(chunks.values_list("chunk_index", flat=True))) == chunks.count()
    assert ChunkEmbedding.objects.filter(document=document).count() == document.chunk_count
