"""The gap inbox: questions the knowledge base answered badly, grouped by meaning, for curators.

A finished answer is a gap when it was refused, answered "not from your documents" (general), drawn
from weak matches (its closest passage is farther than the embedding model's calibrated passage
bound, `bounds.doc`), stated numbers its sources lack (chat.grounding), or was thumbed down.
`gap_reasons` decides (pure); the orchestrator and the feedback service queue `gap_record_task`
through core.tasks, which embeds the question with the default embedding model and puts it in the
nearest open group or a new one.

**Grouping.** A question joins the open group whose farthest question is nearest to it, when even
that one is within `grouping_distance` (complete linkage: single linkage chained a whole domain's
questions into one group, bench/gaps.py), else it starts a group. The distance is the model's own:
twice its calibrated direct-answer bound, i.e. the 1st percentile of the distances between unrelated
questions of one language (retrieval/knowledge/calibration.py) -- two questions closer than 99 % of
unrelated pairs are taken to ask the same thing. Nothing is fitted to a set; bench/gaps.py measures it.

**Privacy.** Groups hold no text. A question's text is read from its message (a deleted
conversation cascades its gap rows away) and shown to a curator only when it was asked in a shared
collection or under a topic with no documents attached, or when it is the curator's own. An answer
and its sources are shown only to a viewer who may read every document the answer drew on.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import connection, transaction
from django.db.models import Count, Max
from django.utils import timezone
from django.utils.translation import gettext
from pgvector.django import CosineDistance

from chat.models import (Feedback, FeedbackRating, GapGroup, GapQuestion, GapReason, GapStatus, Message,
                         MessageRole, MessageStatus)
from core.errors import Conflict, NotFound
from core.tasks import queue
from documents.models import Document
from retrieval.ai import AiServerError
from retrieval.ai.clients import query_embedder_for
from retrieval.knowledge.calibrating import Bounds, calibration_wanted, distance_bounds
from retrieval.knowledge.services import knowledge_entry_create
from retrieval.models import KnowledgeEntry
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.vectors import embedding_model_ensure

logger = logging.getLogger(__name__)

PASSAGE_MODES = ("documents", "extractive", "agent")
CURATE_PERMISSION = "retrieval.curate_knowledgeentry"
_LOCK_KEY = 0x6A_0034  # one grouping at a time: two similar questions never start two groups


def can_curate(user) -> bool:
    """Who works the inbox: staff holding the Q&A curator permission (the `curator` group has it)."""
    return bool(user and user.is_active and user.is_staff and user.has_perm(CURATE_PERMISSION))


# --- which answers are gaps (pure) ------------------------------------------------------------------


def gap_reasons(metadata: dict, *, thumbs_down: bool = False) -> list[str]:
    """Why this answer is a gap (GapReason values, in a fixed order); [] when it is not one."""
    mode = metadata.get("mode")
    reasons = []
    if mode in (GapReason.REFUSED, GapReason.GENERAL):
        reasons.append(str(mode))
    if mode in PASSAGE_MODES and weak_matches(metadata):
        reasons.append(GapReason.WEAK.value)
    if metadata.get("ungrounded_sections"):
        reasons.append(GapReason.NUMBERS.value)
    if thumbs_down:
        reasons.append(GapReason.THUMBS_DOWN.value)
    return reasons


def weak_matches(metadata: dict) -> bool:
    """The passages given were all farther from the question than the model's passage bound (or were
    found by words alone); an answer from approved pairs or without a bound is not weak."""
    bound = ((metadata.get("retrieval") or {}).get("bounds") or {}).get("doc")
    given = [s for s in metadata.get("retrieved_segments") or [] if s.get("source_id") and s.get("document_id")]
    if bound is None or not given:
        return False
    distances = [s["distance"] for s in given if s.get("distance") is not None]
    return not distances or min(distances) > float(bound)


def grouping_distance(bounds: Bounds) -> float:
    """Questions closer than this ask the same thing: the 1st percentile of unrelated same-language
    questions' distances (twice the direct bound, which is half of it; see the module)."""
    return 2 * bounds.direct


def answer_document_ids(message: Message) -> list[int]:
    """Every document an answer drew on: cited, given to the model, or retrieved for it."""
    metadata = message.metadata or {}
    rows = [*(message.sources or []), *(metadata.get("context_sources") or []),
            *(metadata.get("retrieved_segments") or [])]
    return sorted({int(r["document_id"]) for r in rows if isinstance(r, dict) and r.get("document_id")})


# --- recording (the task) ---------------------------------------------------------------------------


def gap_check_wanted(message: Message) -> None:
    """Queue `gap_record_task` for a finished answer that is a gap (called after it is saved)."""
    if gap_reasons(message.metadata or {}):
        queue(gap_record_task, message.pk, task_name=f"gap inbox: answer {message.pk}", group="gaps")


def gap_record_task(answer_id: int) -> str:
    """The task: put the answer's question in the inbox, change its reasons, or take it out (idempotent)."""
    try:
        return gap_record(answer_id=answer_id)
    except AiServerError as exc:
        logger.warning("gap inbox: the question could not be embedded", extra={"message_id": answer_id,
                                                                                "reason": str(exc)})
        return "failed"


def _question_of(answer: Message) -> Message | None:
    base = Message.objects.filter(conversation_id=answer.conversation_id, role=MessageRole.USER)
    question_id = (answer.metadata or {}).get("question_id")
    if question_id:
        return base.filter(pk=question_id).first()
    return base.filter(pk__lt=answer.pk).order_by("-id").first()


def gap_record(*, answer_id: int) -> str:
    """Record (or update, or remove) one answer's gap row; see gap_record_task."""
    answer = (Message.objects.filter(pk=answer_id, role=MessageRole.ASSISTANT, status=MessageStatus.DONE)
              .select_related("conversation").first())
    if answer is None:
        GapQuestion.objects.filter(answer_id=answer_id).delete()
        return "skipped: gone"
    thumbs_down = Feedback.objects.filter(message=answer, rating=FeedbackRating.DOWN).exists()
    reasons = gap_reasons(answer.metadata or {}, thumbs_down=thumbs_down)
    if not reasons:
        deleted, _rows = GapQuestion.objects.filter(answer=answer).delete()
        return "removed" if deleted else "not a gap"
    if GapQuestion.objects.filter(answer=answer).update(reasons=reasons):
        return "updated"
    question = _question_of(answer)
    if question is None or not question.content.strip():
        return "skipped: no question"
    server = default_embedding_server()
    if server is None:
        return "skipped: no embedding server"
    client = query_embedder_for(server)
    vector = client.embed_queries([question.content.strip()])[0]
    model = embedding_model_ensure(name=client.model, dim=len(vector))
    calibration_wanted(model)  # the grouping distance is the model's own, measured once in the background
    threshold = grouping_distance(distance_bounds(model, retrieval_settings_get()))
    conversation = answer.conversation
    metadata = answer.metadata or {}
    trace = metadata.get("retrieval") or {}
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        if GapQuestion.objects.filter(answer=answer).update(reasons=reasons):
            return "updated"
        # Complete linkage: the group whose farthest question is nearest, if even that one is within reach.
        nearest = (GapQuestion.objects.filter(group__status=GapStatus.OPEN, group__embedding_model=model)
                   .annotate(distance=CosineDistance("embedding", vector)).values("group_id")
                   .annotate(farthest=Max("distance")).filter(farthest__lte=threshold)
                   .order_by("farthest", "group_id").first())
        if nearest is not None:
            group = GapGroup.objects.get(pk=nearest["group_id"])
        else:
            group = GapGroup.objects.create(
                embedding_model=model, category=str(metadata.get("category") or conversation.category or "")[:100],
                subcategory=str(metadata.get("subcategory") or conversation.subcategory or "")[:100])
        has_attachments = conversation.attachments.exists()
        GapQuestion.objects.create(
            answer=answer, question=question, asker_id=conversation.owner_id, group=group, reasons=reasons,
            language=str(trace.get("question_language") or "")[:10],
            shared=bool(conversation.collection_id or conversation.category) and not has_attachments,
            document_ids=answer_document_ids(answer), embedding=vector, asked_at=question.created_at)
        GapGroup.objects.filter(pk=group.pk).update(updated_at=timezone.now())
    return "grouped"


# --- reading (the inbox) ----------------------------------------------------------------------------


@dataclass
class GapView:
    """One group as a viewer may see it."""

    group: GapGroup
    questions_count: int
    askers_count: int
    languages: list[str]
    reasons: list[str]
    first_asked: datetime
    last_asked: datetime
    example_question: str | None  # None: every question of the group is private to the viewer
    questions: list[str] = field(default_factory=list)  # the texts the viewer may read, best first
    private_questions: int = 0
    answer: str | None = None  # the latest answer given that the viewer may read, with its sources
    answer_mode: str = ""
    sources: list[dict] = field(default_factory=list)

    @property
    def id(self) -> int:
        return self.group.pk


def _readable_documents(user, ids: set[int]) -> set[int]:
    if not ids:
        return set()
    return set(Document.objects.visible_to(user).filter(pk__in=ids).values_list("pk", flat=True))


def _order_by_centrality(members: list[GapQuestion]) -> list[GapQuestion]:
    """The group's questions, the one closest to all the others first (the best-phrased stand-in)."""
    if len(members) < 3:
        return sorted(members, key=lambda m: -len(m.question.content))
    vectors = np.asarray([np.asarray(m.embedding, dtype=np.float64) for m in members])
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    spread = (1.0 - unit @ unit.T).sum(axis=1)
    return [members[i] for i in np.argsort(spread, kind="stable")]


def gap_groups(*, user, status: str = GapStatus.OPEN, group_ids: list[int] | None = None) -> list[GapView]:
    """The inbox for `user` (a curator): groups with at least one question, latest first."""
    groups = GapGroup.objects.filter(status=status).annotate(n=Count("questions")).filter(n__gt=0)
    if group_ids is not None:
        groups = groups.filter(pk__in=group_ids)
    groups = list(groups.order_by("-updated_at", "-id"))
    members = (GapQuestion.objects.filter(group__in=groups).select_related("question", "answer")
               .order_by("asked_at", "id"))
    by_group: dict[int, list[GapQuestion]] = {}
    for member in members:
        by_group.setdefault(member.group_id, []).append(member)
    readable = _readable_documents(user, {d for ms in by_group.values() for m in ms for d in m.document_ids})
    return [_view(group, by_group.get(group.pk, []), user=user, readable=readable) for group in groups]


def _view(group: GapGroup, members: list[GapQuestion], *, user, readable: set[int]) -> GapView:
    visible = [m for m in members if m.shared or m.asker_id == user.pk]
    texts = [m.question.content.strip() for m in _order_by_centrality(visible)]
    view = GapView(group=group, questions_count=len(members), askers_count=len({m.asker_id for m in members}),
                   languages=sorted({m.language for m in members if m.language}),
                   reasons=[r for r in GapReason.values if any(r in m.reasons for m in members)],
                   first_asked=members[0].asked_at, last_asked=members[-1].asked_at,
                   example_question=texts[0] if texts else None, questions=texts,
                   private_questions=len(members) - len(visible))
    for member in reversed(visible):
        if set(member.document_ids) <= readable:
            view.answer = member.answer.content
            view.answer_mode = str((member.answer.metadata or {}).get("mode") or "")
            view.sources = [{"source_id": s.get("source_id"), "document_id": s.get("document_id"),
                             "document_name": s.get("document_name"), "qa_id": s.get("qa_id"),
                             "page_label": s.get("page_label") or s.get("page_number"), "preview": s.get("preview")}
                            for s in member.answer.sources or []]
            break
    return view


# --- closing a group --------------------------------------------------------------------------------


def _open_group(group_id: int) -> GapGroup:
    group = GapGroup.objects.select_for_update().filter(pk=group_id).first()
    if group is None or not group.questions.exists():
        raise NotFound(gettext("No such knowledge gap."), code="no_gap")
    if group.status != GapStatus.OPEN:
        raise Conflict(gettext("This knowledge gap is already closed."), code="gap_closed")
    return group


def _close(group: GapGroup, *, status: str, user, **links) -> GapGroup:
    group.status, group.closed_at, group.closed_by = status, timezone.now(), user
    for name, value in links.items():
        setattr(group, name, value)
    group.save()
    return group


def gap_answer(*, group_id: int, user, question: str, answer: str, category: str = "",
               subcategory: str = "") -> KnowledgeEntry:
    """Write the approved answer of a group: a new approved pair (the one write path) and the group closed."""
    with transaction.atomic():
        group = _open_group(group_id)
        entry = knowledge_entry_create(user=user, question=question, answer=answer, category=category,
                                       subcategory=subcategory, approved=True)
        _close(group, status=GapStatus.ANSWERED, user=user, answer=entry)
    return entry


def gap_answered_by_pair(*, group_id: int, entry_id: int, user) -> None:
    """An approved pair written from the group elsewhere (the admin's add form) closes it."""
    with transaction.atomic():
        group = GapGroup.objects.select_for_update().filter(pk=group_id, status=GapStatus.OPEN).first()
        entry = KnowledgeEntry.objects.filter(pk=entry_id, approved_at__isnull=False).first()
        if group is not None and entry is not None:
            _close(group, status=GapStatus.ANSWERED, user=user, answer=entry)


def gap_link_document(*, group_id: int, user, document_id: int) -> GapGroup:
    """The answer is in a document (one the curator may read): the group is closed pointing at it."""
    with transaction.atomic():
        group = _open_group(group_id)
        document = Document.objects.visible_to(user).filter(pk=document_id).first()
        if document is None:
            raise NotFound(gettext("No such document."), code="no_document")
        return _close(group, status=GapStatus.DOCUMENT, user=user, document=document)


def gap_dismiss(*, group_id: int, user) -> GapGroup:
    """Nothing to do about it: the group leaves the inbox (a later question starts a new one)."""
    with transaction.atomic():
        return _close(_open_group(group_id), status=GapStatus.DISMISSED, user=user)
