"""Approved Q&A pairs: the one write path, used by the admin, `/api/knowledge/` and the file import.

Every change to a pair goes through here, so one rule decides when its vectors are computed again
(`_embedding_wanted`): a new pair, a changed question, or vectors that are not ready. An edited
answer keeps its vectors: only the question is embedded. Re-embedding marks the pair pending at once
and queues `knowledge_entry_embed` (below, a django-q2 task taking the id) through core.tasks after
the commit. This package never imports retrieval.tasks (retrieval.tasks imports it), so the pairs'
one task lives here with them.
"""
from __future__ import annotations

import logging

from django.utils.translation import gettext
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from core.errors import ApplicationError, NotFound
from core.tasks import queue
from retrieval.ai import AiServerError
from retrieval.ai.clients import embedder_for
from retrieval.knowledge.calibrating import calibration_wanted
from retrieval.models import EmbeddingState, KnowledgeEmbedding, KnowledgeEntry
from retrieval.selectors import default_embedding_server
from retrieval.vectors import embedding_model_ensure

logger = logging.getLogger(__name__)

EDITABLE_FIELDS = ("category", "subcategory", "question", "answer", "is_active")

# News upward (chat's gap inbox listens): an approved pair was written from a knowledge gap, so that
# gap is closed. Sent with group_id, entry_id and user.
gap_answered = Signal()


# --- the pairs -----------------------------------------------------------------------------------


def knowledge_entry_create(*, user, question: str, answer: str, category: str = "", subcategory: str = "",
                           is_active: bool = True, approved: bool = False) -> KnowledgeEntry:
    """A new Q&A pair (approved by `user` at once if asked); its question is embedded in the background."""
    with transaction.atomic():
        entry = KnowledgeEntry.objects.create(question=question.strip(), answer=answer.strip(),
                                              category=category.strip(), subcategory=subcategory.strip(),
                                              is_active=is_active)
        if approved:
            knowledge_entry_approve(entry=entry, user=user)
        knowledge_entry_reembed(entry=entry)
    return entry


def knowledge_entry_update(*, entry_id: int, user, approve: bool = False, **changes) -> KnowledgeEntry:
    """Change a pair's fields (EDITABLE_FIELDS; approve it too if asked and not approved yet); a changed
    question, or vectors that are not ready, are embedded again. NotFound if it is gone."""
    with transaction.atomic():
        entry = KnowledgeEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:
            raise NotFound(gettext("No such Q&A pair."))
        question_changed = "question" in changes and changes["question"].strip() != entry.question
        for name in EDITABLE_FIELDS:
            if name in changes:
                value = changes[name]
                setattr(entry, name, value.strip() if isinstance(value, str) else value)
        entry.save()
        if approve and entry.approved_at is None:
            knowledge_entry_approve(entry=entry, user=user)
        if _embedding_wanted(entry, question_changed=question_changed):
            knowledge_entry_reembed(entry=entry)
    return entry


def knowledge_entry_approve(*, entry: KnowledgeEntry, user) -> KnowledgeEntry:
    """Approve the pair: records who and when, and makes it active (its vectors are left as they are)."""
    entry.approved_by = user
    entry.approved_at = timezone.now()
    entry.is_active = True
    entry.save(update_fields=["approved_by", "approved_at", "is_active", "updated_at"])
    return entry


def knowledge_entry_approve_and_embed(*, entry_id: int, user) -> KnowledgeEntry:
    """Approve (knowledge_entry_approve) and queue its embedding unless its vectors are ready."""
    with transaction.atomic():
        entry = KnowledgeEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:
            raise NotFound(gettext("No such Q&A pair."))
        knowledge_entry_approve(entry=entry, user=user)
        if _embedding_wanted(entry):
            knowledge_entry_reembed(entry=entry)
    return entry


def knowledge_entry_retire(*, entry: KnowledgeEntry) -> KnowledgeEntry:
    """It stops answering (kept, and can be approved again)."""
    entry.is_active = False
    entry.save(update_fields=["is_active", "updated_at"])
    return entry


def knowledge_entries_create_many(*, entries: list[KnowledgeEntry]) -> list[KnowledgeEntry]:
    """Save new pairs (a file import's valid rows) in one transaction and queue each one's embedding."""
    with transaction.atomic():
        KnowledgeEntry.objects.bulk_create(entries)
        for entry in entries:
            knowledge_entry_reembed(entry=entry)
    return entries


# --- their vectors -------------------------------------------------------------------------------


def _embedding_wanted(entry: KnowledgeEntry, *, question_changed: bool = False) -> bool:
    """The re-embed rule: a changed question, or vectors that are not ready."""
    return question_changed or entry.embedding_state != EmbeddingState.READY


def knowledge_entry_reembed(*, entry: KnowledgeEntry) -> None:
    """Mark the pair's vectors stale now and compute them in the background after the commit."""
    KnowledgeEntry.objects.filter(pk=entry.pk).update(embedding_state=EmbeddingState.PENDING, embedding_error="")
    entry.embedding_state, entry.embedding_error = EmbeddingState.PENDING, ""
    queue(knowledge_entry_embed, entry.pk, task_name=f"embed Q&A {entry.pk}", group="knowledge")


def knowledge_entries_reembed(*, entry_ids: list[int]) -> int:
    """Queue the embedding of each pair again (the admin's "recompute"); returns how many."""
    for entry in KnowledgeEntry.objects.filter(pk__in=entry_ids).only("pk"):
        knowledge_entry_reembed(entry=entry)
    return len(entry_ids)


def knowledge_entry_embed(entry_id: int) -> str:
    """The task: embed the pair's question with the default embedding model (idempotent)."""
    entry = KnowledgeEntry.objects.filter(pk=entry_id).first()
    if entry is None:
        return "skipped: gone"
    server = default_embedding_server()
    try:
        if server is None:
            raise ApplicationError(gettext("No embedding server is configured."))
        client = embedder_for(server)
        vector = client.embed_queries([entry.question])[0]
        model = embedding_model_ensure(name=client.model, dim=len(vector))
        calibration_wanted(model)  # the first pair of a model: its distances are measured in the background
        with transaction.atomic():
            KnowledgeEmbedding.objects.update_or_create(entry=entry, model=model, defaults={"embedding": vector})
            KnowledgeEntry.objects.filter(pk=entry.pk).update(embedding_state=EmbeddingState.READY, embedding_error="")
    except (AiServerError, ApplicationError) as exc:
        message = getattr(exc, "message", str(exc))
        KnowledgeEntry.objects.filter(pk=entry.pk).update(embedding_state=EmbeddingState.FAILED, embedding_error=message)
        logger.warning("Q&A embedding failed", extra={"entry_id": entry_id, "reason": message})
        return "failed"
    return "ready"
