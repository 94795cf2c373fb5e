"""What the admin health dashboard shows: queue, documents, vectors per model, indexes, errors, throughput."""
from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, IntegerField, Min, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.utils import timezone

from documents.models import Document, DocumentStatus
from core.health import health_report
from retrieval.ai.server_check import builtin_engine_status
from retrieval.models import ChunkEmbedding, EmbeddingCache, EmbeddingModel, EmbeddingState, KnowledgeEmbedding, KnowledgeEntry
from retrieval.vectors import hnsw_indexes

ERRORS_SHOWN = 20
THROUGHPUT_BUCKET_MINUTES = 10


def queue_stats(now=None) -> dict:
    """django-q2's ORM broker: a row is waiting while its lock time has passed, running while it lies ahead."""
    from django_q.models import OrmQ, Task

    now = now or timezone.now()
    waiting = OrmQ.objects.filter(lock__lte=now)
    oldest = waiting.aggregate(oldest=Min("lock"))["oldest"]
    failed = Task.objects.filter(success=False)
    return {
        "queued": waiting.count(),
        "running": OrmQ.objects.filter(lock__gt=now).count(),
        "failed": failed.count(),
        "failed_last_day": failed.filter(stopped__gte=now - timedelta(days=1)).count(),
        "succeeded_last_hour": Task.objects.filter(success=True, stopped__gte=now - timedelta(hours=1)).count(),
        "oldest_waiting_since": oldest,
        "oldest_waiting_seconds": round((now - oldest).total_seconds()) if oldest else None,
    }


def documents_by_status() -> list[dict]:
    counts = dict(Document.objects.values_list("status").annotate(n=Count("id")).order_by())
    return [{"status": value, "label": label, "count": counts.get(value, 0)} for value, label in DocumentStatus.choices]


def vectors_by_model() -> list[dict]:
    """Per embedding model: documents and chunks pinned to it, chunk and Q&A vectors, its HNSW index."""
    chunk_vectors = dict(ChunkEmbedding.objects.values_list("model").annotate(n=Count("id")).order_by())
    qa_vectors = dict(KnowledgeEmbedding.objects.values_list("model").annotate(n=Count("id")).order_by())
    pinned = {(row["embedding_model"], row["embedding_dim"]): row for row in
              Document.objects.exclude(embedding_model="").values("embedding_model", "embedding_dim")
              .annotate(documents=Count("id"), chunks=Sum("chunk_count")).order_by()}
    indexes = {index["name"]: index for index in hnsw_indexes()}
    rows = []
    for model in EmbeddingModel.objects.all():
        docs = pinned.pop((model.name, model.dim), {})
        index = indexes.get(model.index_name)
        rows.append({"model": model, "documents": docs.get("documents", 0), "chunks": docs.get("chunks") or 0,
                     "vectors": chunk_vectors.get(model.pk, 0), "qa_vectors": qa_vectors.get(model.pk, 0),
                     "index_name": model.index_name if index else None, "index_bytes": index["bytes"] if index else None})
    for (name, dim), docs in pinned.items():  # pinned to a model that has no vector space (yet)
        rows.append({"model": f"{name} ({dim}d)", "documents": docs["documents"], "chunks": docs["chunks"] or 0,
                     "vectors": 0, "qa_vectors": 0, "index_name": None, "index_bytes": None})
    return rows


def recent_errors(limit: int = ERRORS_SHOWN):
    return (Document.objects.exclude(index_error="").select_related("owner")
            .only("id", "title", "original_filename", "status", "index_error", "index_error_reason", "index_attempts", "updated_at",
                  "owner__username").order_by("-updated_at")[:limit])


def ingest_throughput(now=None) -> dict:
    """Documents, chunks and bytes indexed in the last hour, in total and per 10 minutes."""
    now = now or timezone.now()
    since = now - timedelta(hours=1)
    indexed = Document.objects.filter(indexed_at__gte=since)
    totals = indexed.aggregate(documents=Count("id"), chunks=Sum("chunk_count"), bytes=Sum("size"))
    buckets = []
    for n in range(60 // THROUGHPUT_BUCKET_MINUTES):
        start = since + timedelta(minutes=n * THROUGHPUT_BUCKET_MINUTES)
        end = start + timedelta(minutes=THROUGHPUT_BUCKET_MINUTES)
        part = indexed.filter(indexed_at__gte=start, indexed_at__lt=end).aggregate(
            documents=Count("id"), chunks=Sum("chunk_count"))
        buckets.append({"start": start, "documents": part["documents"], "chunks": part["chunks"] or 0})
    peak = max((b["chunks"] for b in buckets), default=0) or 1
    for bucket in buckets:
        bucket["percent"] = round(100 * bucket["chunks"] / peak)
    failed = Document.objects.filter(status=DocumentStatus.FAILED, updated_at__gte=since).count()
    return {"documents": totals["documents"], "chunks": totals["chunks"] or 0, "bytes": totals["bytes"] or 0,
            "chunks_per_minute": round((totals["chunks"] or 0) / 60, 1), "failed": failed, "buckets": buckets,
            "bucket_minutes": THROUGHPUT_BUCKET_MINUTES}


def embedding_reuse(now=None) -> dict:
    """How many chunk vectors the embeddings cache supplied: last hour (by indexed_at) and every indexed document."""
    now = now or timezone.now()
    embedded = Cast(KeyTextTransform("embedded_chunks", "index_stats"), IntegerField())
    reused = Cast(KeyTextTransform("reused_chunks", "index_stats"), IntegerField())

    def rate(queryset) -> dict:
        sums = queryset.aggregate(embedded=Sum(embedded), reused=Sum(reused))
        done, kept = sums["embedded"] or 0, sums["reused"] or 0
        return {"embedded": done, "reused": kept,
                "rate": round(100 * kept / (done + kept), 1) if done + kept else None}

    return {"hour": rate(Document.objects.filter(indexed_at__gte=now - timedelta(hours=1))),
            "all": rate(Document.objects.filter(status=DocumentStatus.INDEXED)),
            "cached_vectors": EmbeddingCache.objects.count()}


def knowledge_states() -> dict:
    counts = dict(KnowledgeEntry.objects.values_list("embedding_state").annotate(n=Count("id")).order_by())
    return {label: counts.get(value, 0) for value, label in EmbeddingState.choices}


def dashboard() -> dict:
    """Everything the dashboard shows, read in one go."""
    healthy, report = health_report()
    return {
        "healthy": healthy, "health": report, "embedder": builtin_engine_status(), "queue": queue_stats(), "documents": documents_by_status(),
        "models": vectors_by_model(), "errors": list(recent_errors()), "throughput": ingest_throughput(),
        "knowledge": knowledge_states(), "reuse": embedding_reuse(),
    }
