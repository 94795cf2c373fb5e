"""Curating approved Q&A pairs over REST (`/api/knowledge/`): create, change, approve — each queueing the
question's embedding as the admin does (retrieval.tasks), which retrieval.knowledge.services cannot import."""
from __future__ import annotations

from django.db import transaction

from core.errors import NotFound
from retrieval.knowledge.services import knowledge_entry_approve
from retrieval.models import EmbeddingState, KnowledgeEntry
from retrieval.tasks import enqueue_knowledge_embedding

EDITABLE_FIELDS = ("category", "subcategory", "question", "answer", "is_active")


def _queue_embedding(entry_id: int) -> None:
    enqueue_knowledge_embedding(entry_id)


def knowledge_entry_create(*, user, question: str, answer: str, category: str = "", subcategory: str = "",
                           is_active: bool = True, approved: bool = False) -> KnowledgeEntry:
    """A new Q&A pair (approved at once if asked); its question is embedded in the background, as the admin does."""
    with transaction.atomic():
        entry = KnowledgeEntry.objects.create(question=question.strip(), answer=answer.strip(),
                                              category=category.strip(), subcategory=subcategory.strip(),
                                              is_active=is_active)
        if approved:
            knowledge_entry_approve(entry=entry, user=user)
        _queue_embedding(entry.pk)
    return entry


def knowledge_entry_update(*, entry_id: int, user, **changes) -> KnowledgeEntry:
    """Change a Q&A pair's fields (EDITABLE_FIELDS); a changed question (or missing vectors) is embedded again."""
    with transaction.atomic():
        entry = KnowledgeEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:
            raise NotFound("No such Q&A pair.")
        question_changed = "question" in changes and changes["question"].strip() != entry.question
        for name in EDITABLE_FIELDS:
            if name in changes:
                value = changes[name]
                setattr(entry, name, value.strip() if isinstance(value, str) else value)
        entry.save()
        if question_changed or entry.embedding_state != EmbeddingState.READY:
            _queue_embedding(entry.pk)
    return entry


def knowledge_entry_approve_and_embed(*, entry_id: int, user) -> KnowledgeEntry:
    """Approve (records who and when, makes it active) and queue its embedding unless it is ready, as the admin does."""
    with transaction.atomic():
        entry = KnowledgeEntry.objects.select_for_update().filter(pk=entry_id).first()
        if entry is None:
            raise NotFound("No such Q&A pair.")
        knowledge_entry_approve(entry=entry, user=user)
        if entry.embedding_state != EmbeddingState.READY:
            _queue_embedding(entry.pk)
    return entry
