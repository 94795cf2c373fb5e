"""The gap inbox: questions the knowledge base answered badly, grouped by meaning, for curators.

A finished answer is a gap when it was refused, answered "not from your documents" (general), drawn
from weak matches (its closest passage is farther than the embedding model's calibrated passage
bound, `bounds.doc`), stated numbers its sources lack (chat.grounding), or was thumbed down.
`gap_reasons` decides (pure); the orchestrator and the feedback service call `gap_wanted`, which
marks the answer as waiting (GapPending) and queues `gap_record_task` through core.tasks.

**Speed.** One task per question, each embedding one question and grouping under a lock, made a
burst of 189 questions wait 464 s (p50) for the tasks queued before them: the per-task cost of the
queue, not the embedding, was the bill. Now whichever run comes first takes every waiting answer,
`BATCH_SIZE` at a time: one embedding call per batch, one lock, one transaction, and the batch shows
in the inbox when it commits; the runs after it find nothing left. And the embedding call is mostly
gone: the answer path hands over the vector it embedded the question with for retrieval
(`gap_check_wanted(question_vector=...)`, kept in GapPending), so a run embeds only the questions
without one (docs/knowledge-base.md has the figures).

**Grouping.** A question joins the open group it `joins` nearest, else it starts one: complete
linkage (single linkage chained a whole domain's questions into one group), every question of the
group within the model's own bound for that pair of languages -- the 1st percentile of the distances
between unrelated questions of one language, or of two languages (the model puts one question in
two languages farther apart than in one; retrieval/knowledge/calibration.py) -- the same numbers
as every question of the group, as the direct answer requires ("nad 18 hodin" is not "pod 5 hodin"),
and the same negation as every question of its own language ("bez dokladu" is not "s dokladem").
Nothing is fitted to a set; bench/gaps.py measures it, and docs/knowledge-base.md lists the variants
that lost.

**Privacy.** Groups hold no text. A question's text is read from its message (a deleted
conversation cascades its gap rows away) and shown by the one rule for answers
(`documents.answer_access.may_see_answer`): to its asker, and to a curator when every document its
answer drew on is one the curator may read and there is at least one (the documents say whose
collection the question is about), or when the asker shared it with the curators on 👎 — never when
the answer drew on a document the curator may not read. Privacy by who may read, not by the topic or
collection picked. Its 👎 reason and comment are shown with it, its answer and sources too.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext

from chat.models import (Feedback, FeedbackRating, FeedbackReason, GapGroup, GapPending, GapQuestion, GapReason, GapStatus,
                         Message, MessageRole, MessageStatus)
from core.errors import Conflict, NotFound
from core.tasks import queue
from documents.answer_access import answer_document_ids as documents_drawn_on
from documents.answer_access import may_see_answer, readable_document_ids
from documents.models import Document
from retrieval.ai import AiServerError
from retrieval.ai.clients import query_embedder_for
from retrieval.knowledge.agreement import is_negated, numbers_in
from retrieval.knowledge.calibrating import Bounds, calibration_wanted, distance_bounds
from retrieval.knowledge.services import knowledge_entry_create
from retrieval.models import EmbeddingModel, KnowledgeEntry
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.vectors import embedding_model_ensure

logger = logging.getLogger(__name__)

PASSAGE_MODES = ("documents", "extractive", "agent")
CURATE_PERMISSION = "retrieval.curate_knowledgeentry"
_LOCK_KEY = 0x6A_0034  # one grouping at a time: two similar questions never start two groups
BATCH_SIZE = 32  # answers recorded per transaction: a burst appears in steps, each embedded in one call


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
    """Questions of one language closer than this ask the same thing: the 1st percentile of unrelated
    same-language questions' distances (twice the direct bound, which is half of it; see the module)."""
    return 2 * bounds.direct


def grouping_distances(model: EmbeddingModel, bounds: Bounds) -> tuple[float, float]:
    """(same language, across languages): `grouping_distance`, and the 1st percentile of unrelated
    questions of two languages from the model's calibration (a model's vectors of one question in two
    languages lie farther apart than in one); the same-language one until the calibration measures it,
    or when the same-language bound is a staff override."""
    same = grouping_distance(bounds)
    cross = ((model.calibration or {}).get("unrelated") or {}).get("cross_language_p1")
    if cross is None or bounds.source.get("direct") != "calibration":
        return same, same
    return same, max(same, float(cross))


def answer_document_ids(message: Message) -> list[int]:
    """Every document an answer drew on: cited, given to the model, or retrieved for it."""
    return sorted(documents_drawn_on(message.sources, message.metadata))


# --- recording (one batch task) --------------------------------------------------------------------


def gap_check_wanted(message: Message, *, question_vector: tuple[str, list[float]] | None = None) -> None:
    """A finished answer (called after it is saved): to the inbox when it is a gap. `question_vector`:
    (embedding model, vector) of its question when the answer path embedded it already."""
    if gap_reasons(message.metadata or {}):
        gap_wanted(answer_id=message.pk, question_vector=question_vector)


def gap_wanted(*, answer_id: int, question_vector: tuple[str, list[float]] | None = None) -> None:
    """The inbox should look at this answer again (finished, or its rating changed): it waits in
    GapPending (with its question's vector, when given) and `gap_record_task` is queued; whichever run
    of it comes first takes every waiting answer."""
    model, vector = question_vector or ("", None)
    GapPending.objects.bulk_create([GapPending(answer_id=answer_id, embedding=vector, embedding_model=model[:200])],
                                   ignore_conflicts=True)
    queue(gap_record_task, answer_id, task_name=f"gap inbox: answer {answer_id}", group="gaps")


def gap_record_task(answer_id: int) -> str:
    """The task: record every waiting answer, in batches (idempotent; `answer_id` only names the run).

    A burst of questions queues one task each; the first run takes them all, embeds each batch in one
    call and groups it under one lock, and the runs after it find nothing left (or the rows another
    worker is recording, which they skip). What this answer came to is returned, for the log."""
    outcomes = gap_inbox_run()
    return outcomes.get(answer_id, "done by another run")


def gap_inbox_run(*, batch_size: int = BATCH_SIZE) -> dict[int, str]:
    """Record the waiting answers, `batch_size` at a time, each batch in one transaction (seen by the
    inbox when it commits); {answer id: what happened}. An answer whose question cannot be embedded
    (the AI server is down) stays waiting for the next run."""
    outcomes: dict[int, str] = {}
    while True:
        try:
            with transaction.atomic():
                rows = list(GapPending.objects.select_for_update(skip_locked=True).order_by("id")
                            .values_list("pk", "answer_id", "embedding_model", "embedding")[:batch_size])
                waiting = [(pk, answer_id) for pk, answer_id, _m, _v in rows]
                if not waiting:
                    return outcomes
                given = {answer_id: (model, vector) for _pk, answer_id, model, vector in rows
                         if model and vector is not None}
                outcomes.update(gap_record_batch(answer_ids=[answer_id for _pk, answer_id in waiting], vectors=given))
                GapPending.objects.filter(pk__in=[pk for pk, _answer_id in waiting]).delete()
        except AiServerError as exc:
            logger.warning("gap inbox: questions could not be embedded; they wait for the next run",
                           extra={"message_ids": [a for _p, a in waiting], "reason": str(exc)})
            outcomes.update({answer_id: "failed" for _pk, answer_id in waiting})
            return outcomes


def _question_of(answer: Message) -> Message | None:
    base = Message.objects.filter(conversation_id=answer.conversation_id, role=MessageRole.USER)
    question_id = (answer.metadata or {}).get("question_id")
    if question_id:
        return base.filter(pk=question_id).first()
    return base.filter(pk__lt=answer.pk).order_by("-id").first()


def gap_record(*, answer_id: int) -> str:
    """Record (or update, or remove) one answer's gap row at once (see gap_record_batch)."""
    with transaction.atomic():
        return gap_record_batch(answer_ids=[answer_id])[answer_id]


@dataclass
class GroupedQuestion:
    """A question of an open group, as the grouping compares it."""

    vector: np.ndarray
    language: str
    numbers: frozenset[str]
    negated: bool = False

    @classmethod
    def of(cls, vector, language: str, text: str) -> "GroupedQuestion":
        """The question `text` (in `language`, "" unknown) with its embedding `vector`."""
        return cls(_unit(vector), language, frozenset(numbers_in(text)), is_negated(text, language))


def joins(members: list[GroupedQuestion], candidate: GroupedQuestion, *, same_language: float,
          cross_language: float) -> float | None:
    """How far `candidate` is from a group (its farthest question, less that pair's bound), or None when it
    does not join: complete linkage -- every question within the model's bound for its pair of languages --,
    the same numbers as every question ("stravné nad 18 hodin" is not "pod 5 hodin"), and the same
    negation as every question of its language ("s dokladem" is not "bez dokladu"; across languages
    negation is not comparable: "neplacené volno" is negated in Czech, "unpaid leave" is not). Pure."""
    worst = None
    for member in members:
        if member.numbers != candidate.numbers:
            return None
        two_languages = bool(member.language and candidate.language and member.language != candidate.language)
        if not two_languages and member.negated != candidate.negated:
            return None
        bound = cross_language if two_languages else same_language
        distance = 1.0 - float(member.vector @ candidate.vector)
        if distance > bound:
            return None
        worst = distance - bound if worst is None else max(worst, distance - bound)
    return worst


def _unit(vector) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64)
    return array / max(float(np.linalg.norm(array)), 1e-12)


def gap_record_batch(*, answer_ids: list[int], vectors: dict[int, tuple[str, object]] | None = None) -> dict[int, str]:
    """Record, update or remove the gap rows of these answers (call inside `transaction.atomic`).

    `vectors`: {answer id: (embedding model, its question's vector)} the answer path embedded already;
    one of the default embedding server's model is used as is, the other questions are embedded in one
    call. Each new question is put, one after another, in the open group they join
    (`joins`; the nearest such group) or a new one, under one lock: two similar questions never start
    two groups. Raises AiServerError when the questions cannot be embedded (nothing is written)."""
    outcomes: dict[int, str] = {}
    answers = {a.pk: a for a in Message.objects.filter(pk__in=answer_ids, role=MessageRole.ASSISTANT,
                                                       status=MessageStatus.DONE).select_related("conversation")}
    thumbed: dict[int, bool] = {}  # answer: thumbed down, and whether its asker shared it with the curators
    for message_id, user_id, shared in (Feedback.objects.filter(message_id__in=list(answers), rating=FeedbackRating.DOWN,
                                                                source_id="").values_list("message_id", "user_id", "shared")):
        thumbed[message_id] = thumbed.get(message_id, False) or (shared and user_id == answers[message_id].conversation.owner_id)
    recorded = set(GapQuestion.objects.filter(answer_id__in=list(answers)).values_list("answer_id", flat=True))
    new: list[tuple[Message, Message, list[str]]] = []
    for answer_id in answer_ids:
        answer = answers.get(answer_id)
        if answer is None:
            GapQuestion.objects.filter(answer_id=answer_id).delete()
            outcomes[answer_id] = "skipped: gone"
            continue
        reasons = gap_reasons(answer.metadata or {}, thumbs_down=answer_id in thumbed)
        if not reasons:
            deleted, _rows = GapQuestion.objects.filter(answer=answer).delete()
            outcomes[answer_id] = "removed" if deleted else "not a gap"
        elif answer_id in recorded:
            GapQuestion.objects.filter(answer=answer).update(reasons=reasons, shared=thumbed.get(answer_id, False))
            outcomes[answer_id] = "updated"
        elif (question := _question_of(answer)) is None or not question.content.strip():
            outcomes[answer_id] = "skipped: no question"
        else:
            new.append((answer, question, reasons))
    if not new:
        return outcomes
    server = default_embedding_server()
    if server is None:
        return {**outcomes, **{answer.pk: "skipped: no embedding server" for answer, _q, _r in new}}
    client = query_embedder_for(server)
    reused = {answer_id: vector for answer_id, (name, vector) in (vectors or {}).items() if name == client.model}
    missing = [question.content.strip() for answer, question, _r in new if answer.pk not in reused]
    embedded = iter(client.embed_queries(missing) if missing else [])
    question_vectors = [reused[answer.pk] if answer.pk in reused else next(embedded) for answer, _q, _r in new]
    model = embedding_model_ensure(name=client.model, dim=len(question_vectors[0]))
    calibration_wanted(model)  # the grouping distances are the model's own, measured once in the background
    same_language, cross_language = grouping_distances(model, distance_bounds(model, retrieval_settings_get()))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
    groups: dict[int, list[GroupedQuestion]] = {}
    for group_id, vector, language, text in (
            GapQuestion.objects.filter(group__status=GapStatus.OPEN, group__embedding_model=model)
            .order_by("id").values_list("group_id", "embedding", "language", "question__content")):
        groups.setdefault(group_id, []).append(GroupedQuestion.of(vector, language, text))
    touched: set[int] = set()
    rows = []
    for (answer, question, reasons), vector in zip(new, question_vectors):
        conversation, metadata = answer.conversation, answer.metadata or {}
        language = str((metadata.get("retrieval") or {}).get("question_language") or "")[:10]
        member = GroupedQuestion.of(vector, language, question.content)
        reach = {group_id: joins(members, member, same_language=same_language, cross_language=cross_language)
                 for group_id, members in groups.items()}
        reach = {group_id: worst for group_id, worst in reach.items() if worst is not None}
        if reach:
            group_id = min(reach, key=lambda g: (reach[g], g))
        else:
            group_id = GapGroup.objects.create(
                embedding_model=model, category=str(metadata.get("category") or conversation.category or "")[:100],
                subcategory=str(metadata.get("subcategory") or conversation.subcategory or "")[:100]).pk
        groups.setdefault(group_id, []).append(member)
        touched.add(group_id)
        rows.append(GapQuestion(
            answer=answer, question=question, asker_id=conversation.owner_id, group_id=group_id, reasons=reasons,
            language=language, shared=thumbed.get(answer.pk, False), document_ids=answer_document_ids(answer),
            embedding=[float(x) for x in vector], asked_at=question.created_at))
        outcomes[answer.pk] = "grouped"
    GapQuestion.objects.bulk_create(rows)
    GapGroup.objects.filter(pk__in=touched).update(updated_at=timezone.now())
    return outcomes


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
    feedback: list[dict] = field(default_factory=list)  # the 👎 reasons and comments of the questions shown
    category: str = ""  # the group's topic, only when a question of it is shown (a topic can be private too)
    subcategory: str = ""

    @property
    def id(self) -> int:
        return self.group.pk


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
    readable = readable_document_ids(user, {d for ms in by_group.values() for m in ms for d in m.document_ids})
    shown = {m.answer_id for ms in by_group.values() for m in ms
             if may_see_answer(user, owner_id=m.asker_id, document_ids=m.document_ids, shared=m.shared, readable=readable)}
    feedback: dict[int, dict] = {}
    for answer_id, reason, comment, owner_id, user_id in (
            Feedback.objects.filter(message_id__in=shown, rating=FeedbackRating.DOWN, source_id="")
            .values_list("message_id", "reason", "comment", "message__conversation__owner_id", "user_id")):
        if owner_id == user_id and (reason or comment):
            feedback[answer_id] = {"reason": reason, "reason_label": str(FeedbackReason(reason).label) if reason else "",
                                   "comment": comment}
    return [_view(group, by_group.get(group.pk, []), shown=shown, feedback=feedback) for group in groups]


def _view(group: GapGroup, members: list[GapQuestion], *, shown: set[int], feedback: dict[int, dict]) -> GapView:
    visible = [m for m in members if m.answer_id in shown]
    ordered = _order_by_centrality(visible)
    texts = [m.question.content.strip() for m in ordered]
    view = GapView(group=group, questions_count=len(members), askers_count=len({m.asker_id for m in members}),
                   languages=sorted({m.language for m in members if m.language}),
                   reasons=[r for r in GapReason.values if any(r in m.reasons for m in members)],
                   first_asked=members[0].asked_at, last_asked=members[-1].asked_at,
                   example_question=texts[0] if texts else None, questions=texts,
                   private_questions=len(members) - len(visible),
                   feedback=[{"question": m.question.content.strip(), **feedback[m.answer_id]}
                             for m in ordered if m.answer_id in feedback])
    if visible:
        view.category, view.subcategory = group.category, group.subcategory
    if visible:  # the latest answer: the rule that shows a question shows its answer and passages
        latest = visible[-1].answer
        view.answer = latest.content
        view.answer_mode = str((latest.metadata or {}).get("mode") or "")
        view.sources = [{"source_id": s.get("source_id"), "document_id": s.get("document_id"),
                         "document_name": s.get("document_name"), "qa_id": s.get("qa_id"),
                         "page_label": s.get("page_label") or s.get("page_number"), "preview": s.get("preview")}
                        for s in latest.sources or [] if isinstance(s, dict)]
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
