"""The health dashboard: queue, documents by status, vectors per model, index sizes, errors, throughput."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django_q.models import OrmQ, Task

from documents.models import Document
from retrieval.models import ChunkEmbedding, EmbeddingModel
from retrieval.tasks import index_document
from tests.admin.conftest import indexed
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db

URL = reverse("admin:retrieval_health")


def test_dashboard_shows_queue_documents_vectors_indexes_errors_and_throughput(
        admin_client, user, fake_embedder, django_capture_on_commit_callbacks):
    a = indexed(user, "Apples grow on trees and are picked in autumn.", "apples.txt")
    b = indexed(user, "Garlic is planted in autumn, a hand deep.", "garlic.txt")
    with django_capture_on_commit_callbacks(execute=True):
        waiting = upload_bytes(user, b"waiting for the worker", "waiting.txt")  # queues its indexing
    broken = upload_bytes(user, b"broken", "broken.pdf.txt")
    Document.objects.filter(pk=broken.pk).update(status="failed", index_error="The PDF is encrypted; no text.")
    OrmQ.objects.filter(pk=OrmQ.objects.get().pk).update(lock=timezone.now() - timedelta(minutes=5))
    OrmQ.objects.create(key="ragsite", payload="x", lock=timezone.now() + timedelta(minutes=30))  # taken by a worker
    Task.objects.create(id=uuid.uuid4().hex, name="index document 99", func="retrieval.tasks.index_document",
                        started=timezone.now(), stopped=timezone.now(), success=False, result="boom")

    response = admin_client.get(URL)
    assert response.status_code == 200
    ctx = response.context
    assert (ctx["queue"]["queued"], ctx["queue"]["running"], ctx["queue"]["failed"]) == (1, 1, 1)
    assert 290 <= ctx["queue"]["oldest_waiting_seconds"] <= 400
    counts = {row["status"]: row["count"] for row in ctx["documents"]}
    assert counts == {"uploaded": 1, "processing": 0, "indexed": 2, "failed": 1, "reindexing": 0}
    fake = next(row for row in ctx["models"] if str(row["model"]) == "fake-embed (384d)")
    chunks = a.chunk_count + b.chunk_count
    assert (fake["documents"], fake["chunks"], fake["vectors"]) == (2, chunks, chunks)
    assert fake["vectors"] == ChunkEmbedding.objects.filter(model=EmbeddingModel.objects.get(name="fake-embed")).count()
    assert fake["index_name"].startswith("chunkembedding_hnsw_m") and fake["index_bytes"] > 0
    assert [d.pk for d in ctx["errors"]] == [broken.pk]
    assert ctx["throughput"]["documents"] == 2 and ctx["throughput"]["chunks"] == chunks
    assert sum(bucket["documents"] for bucket in ctx["throughput"]["buckets"]) == 2
    assert ctx["throughput"]["failed"] == 1
    assert waiting.status == "uploaded"

    page = response.content.decode()
    assert '<div class="rs-value" id="rs-queued">1</div>' in page
    assert "oldest waiting 5" in page
    assert "The PDF is encrypted; no text." in page
    assert fake["index_name"] in page
    assert "no worker is running" in page  # no qcluster in this test
    assert f'href="{reverse("admin:django_q_failure_changelist")}"' in page
    assert f'href="{reverse("admin:django_q_ormq_changelist")}"' in page


def test_dashboard_keeps_only_the_last_twenty_errors(admin_client, user):
    for n in range(23):
        document = upload_bytes(user, f"file {n}".encode(), f"f{n}.txt")
        Document.objects.filter(pk=document.pk).update(status="failed", index_error=f"error number {n}",
                                                       updated_at=timezone.now() + timedelta(seconds=n))
    errors = admin_client.get(URL).context["errors"]
    assert [d.index_error for d in errors] == [f"error number {n}" for n in range(22, 2, -1)]


def test_the_django_q_task_admin_stays_available(admin_client):
    for name in ("ormq", "success", "failure", "schedule"):
        assert admin_client.get(reverse(f"admin:django_q_{name}_changelist")).status_code == 200


def test_dashboard_shows_the_embeddings_cache_reuse_rate(admin_client, user, fake_embedder):
    document = indexed(user, "Plums are pruned in summer, never in winter.", "plums.txt")
    Document.objects.filter(pk=document.pk).update(status="reindexing")
    index_document(document.pk)  # every vector from the cache
    indexed(user, "Quinces ripen late and keep for months.", "quinces.txt")  # one new vector
    response = admin_client.get(URL)
    reuse = response.context["reuse"]
    assert (reuse["hour"]["reused"], reuse["hour"]["embedded"], reuse["hour"]["rate"]) == (1, 1, 50.0)
    assert reuse["cached_vectors"] == 2
    assert "Embeddings cache reuse rate: <strong>50.0 %</strong>" in response.content.decode()


def test_dashboard_shows_the_chat_worker_apart_from_the_indexing_worker(admin_client):
    """/healthz reports the chat cluster as a part of its own (issue #29); so does the dashboard."""
    page = admin_client.get(URL).content.decode()
    card = page[page.index('id="rs-chat-worker"'):]
    card = card[:card.index("</div></div>")]
    assert "Chat worker" in card and "not running" in card and "no chat worker is running" in card
