"""Approved Q&A pairs: approval and their vectors (computed in the background)."""
from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from retrieval.ai import AiServerError
from retrieval.ai.clients import embedder_for
from retrieval.models import EmbeddingState, KnowledgeEmbedding, KnowledgeEntry
from retrieval.selectors import default_embedding_server
from retrieval.vectors import embedding_model_ensure
from core.errors import ApplicationError

logger = logging.getLogger(__name__)

def knowledge_entry_approve(*, entry: KnowledgeEntry, user) -> KnowledgeEntry:
    entry.approved_by = user
    entry.approved_at = timezone.now()
    entry.is_active = True
    entry.save(update_fields=["approved_by", "approved_at", "is_active", "updated_at"])
    return entry


def knowledge_entry_retire(*, entry: KnowledgeEntry) -> KnowledgeEntry:
    entry.is_active = False
    entry.save(update_fields=["is_active", "updated_at"])
    return entry


def knowledge_entry_mark_pending(*, entry_id: int) -> None:
    """The entry's vectors are stale (retrieval.tasks.enqueue_knowledge_embedding computes them again)."""
    KnowledgeEntry.objects.filter(pk=entry_id).update(embedding_state=EmbeddingState.PENDING, embedding_error="")


def knowledge_entry_embed(entry_id: int) -> str:
    """Embed the entry's question with the default embedding model (idempotent)."""
    entry = KnowledgeEntry.objects.filter(pk=entry_id).first()
    if entry is None:
        return "skipped: gone"
    server = default_embedding_server()
    try:
        if server is None:
            raise ApplicationError("No embedding server is configured.")
        client = embedder_for(server)
        vector = client.embed_queries([entry.question])[0]
        model = embedding_model_ensure(name=client.model, dim=len(vector))
        with transaction.atomic():
            KnowledgeEmbedding.objects.update_or_create(entry=entry, model=model, defaults={"embedding": vector})
            KnowledgeEntry.objects.filter(pk=entry.pk).update(embedding_state=EmbeddingState.READY, embedding_error="")
    except (AiServerError, ApplicationError) as exc:
        message = getattr(exc, "message", str(exc))
        KnowledgeEntry.objects.filter(pk=entry.pk).update(embedding_state=EmbeddingState.FAILED, embedding_error=message)
        logger.warning("Q&A embedding failed", extra={"entry_id": entry_id, "reason": message})
        return "failed"
    return "ready"
