"""The answer task: the pending answers of a conversation, one at a time, oldest first.

django-q2 delivers at least once, so the task takes a conversation id and does whatever is
pending: a second delivery, or a task for a conversation someone else is answering, finds
nothing to do. One answerer per conversation is a PostgreSQL advisory lock, held on the
worker's session while it answers; a worker that dies releases it with its connection, and the
next answerer puts the answer it left half-written back in the queue (up to MAX_ATTEMPTS).

One answer: claim (pending → streaming) → chat.answering.produce streams text through the
stream writer (saved, then sent as token events) → citations parsed by tag → content, sources
and metadata saved, status done — or failed with the reason in plain words.
"""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from datetime import timedelta
from typing import Callable

from django.db import connection, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext_noop

from chat.answering import produce
from chat.reply_language import reply_language
from chat.citations import parse_any
from chat.contracts import MessageMetadata, Source
from chat.events import status_event, writer
from chat.grounding import mark_ungrounded_sections
from chat.gaps import gap_check_wanted
from documents.governance import current_versions, expired_document_ids, mark_superseded
from chat.generation import AnswerFailed, Outcome, chat_server, context_sources, source_origin, without_addresses
from chat.titles import title_after_first_answer
from retrieval.selectors import retrieval_settings_get
from chat.models import Conversation, Message, MessageRole, MessageStatus
from chat.serializers import message_data
from retrieval.telemetry import UNGROUNDED_SECTIONS
from core.dbcheck import transient_database_error
from core.reasons import in_english, reason
from core.errors import ApplicationError
from identity.audit import audit_passages
from identity.models import AuditAction, AuditChannel
from retrieval.ai import AiServerError
from usage.recorder import answer_recorded

logger = logging.getLogger(__name__)

LOCK_NAMESPACE = 0x43484154  # "CHAT": the first key of the conversation's advisory lock
MAX_ATTEMPTS = 3
STALE_AFTER = timedelta(seconds=60)
DATABASE_RETRY_DELAY = 1.0  # seconds before answering again after a temporary database error
UNEXPECTED = reason("answer.unexpected", gettext_noop("Something went wrong while answering; it has been logged. Try again."))
STOP_CHECK_SECONDS = 0.25  # how often, at most, the answerer looks whether the reader pressed Stop


class AnswerStopped(Exception):
    """The reader pressed Stop: raised from Job.emit between streamed chunks (the model's stream is closed)."""


@contextmanager
def conversation_lock(conversation_id: int):
    """Yield True when this session now answers the conversation, False when another one does."""
    key = int(conversation_id) & 0x7FFFFFFF
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s::int, %s::int)", [LOCK_NAMESPACE, key])
        locked = cursor.fetchone()[0]
    session = connection.connection
    try:
        yield locked
    finally:
        # A session lost to a database error took its lock with it: nothing to unlock.
        if locked and connection.connection is session:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", [LOCK_NAMESPACE, key])


def answer_conversation(conversation_id: int) -> str:
    """django-q2 task: answer the conversation's pending messages in order. Safe to run twice."""
    answered = 0
    while _unfinished(conversation_id):
        with conversation_lock(conversation_id) as locked:
            if not locked:
                # The holder checks for pending answers again after it unlocks: it answers ours too.
                return f"answered {answered}; the rest is being answered by another worker"
            _requeue_interrupted(conversation_id)
            while (message_id := _next_pending(conversation_id)) is not None:
                if answer_message(message_id) == RETRY:
                    break  # a new database session: take the conversation's lock again first
                answered += 1
    return f"answered {answered}"


def recover_interrupted_answers(*, enqueue: Callable[[int], None]) -> int:
    """Queue again conversations with answers that have waited or stalled too long (chat.tasks schedules it).

    `enqueue(conversation_id)` is chat.tasks.enqueue_answer: this module never names a task.
    """
    cutoff = timezone.now() - STALE_AFTER
    conversation_ids = set(Message.objects.filter(
        role=MessageRole.ASSISTANT, status__in=[MessageStatus.PENDING, MessageStatus.STREAMING],
        updated_at__lt=cutoff).values_list("conversation_id", flat=True)[:1000])
    for conversation_id in conversation_ids:
        enqueue(conversation_id)
    return len(conversation_ids)


def _unfinished(conversation_id: int) -> bool:
    return Message.objects.filter(conversation_id=conversation_id, role=MessageRole.ASSISTANT,
                                  status__in=[MessageStatus.PENDING, MessageStatus.STREAMING]).exists()


def _next_pending(conversation_id: int) -> int | None:
    return (Message.objects.filter(conversation_id=conversation_id, role=MessageRole.ASSISTANT,
                                   status=MessageStatus.PENDING)
            .order_by("created_at", "id").values_list("pk", flat=True).first())


def _requeue_interrupted(conversation_id: int) -> None:
    """Under the conversation's lock nobody is streaming: a `streaming` answer is a dead worker's."""
    for message in Message.objects.filter(conversation_id=conversation_id, role=MessageRole.ASSISTANT,
                                          status=MessageStatus.STREAMING):
        attempts = int(message.metadata.get("attempts", 1))
        if attempts >= MAX_ATTEMPTS:
            _save_failed(message, reason("answer.worker_stopped", gettext_noop(
                "The worker stopped while answering, %(times)s times; giving up. Try again later."), times=attempts))
        else:
            Message.objects.filter(pk=message.pk, status=MessageStatus.STREAMING).update(
                status=MessageStatus.PENDING, content="", updated_at=timezone.now())
        logger.warning("interrupted answer recovered", extra={"message_id": message.pk, "attempts": attempts})


# The interface a question came by (its metadata.origin, else its conversation's origin) → the audit channel
# its answer's passages are recorded under.
_ANSWER_CHANNELS = {"openai": AuditChannel.V1, "mcp": AuditChannel.MCP, "api": AuditChannel.REST}


def answer_channel(question: Message | None, conversation: Conversation) -> str:
    """The audit channel of an answer: `v1`, `mcp`, `api` (REST with a token), else `chat` (the chat page)."""
    origin = ((question.metadata or {}).get("origin") if question is not None else None) or conversation.origin
    return _ANSWER_CHANNELS.get(origin, AuditChannel.CHAT)


class Job:
    """One answer being produced: where its text goes and how long each step took."""

    def __init__(self, message: Message, question: Message, conversation: Conversation):
        self.message = message
        self.question = question
        self.conversation = conversation
        self.started = time.perf_counter()
        self.last_mark = self.started
        self.text = ""
        self.context: list[dict] = []
        self.timings: dict = {"queue_ms": round((timezone.now() - message.created_at).total_seconds() * 1000, 1)}
        self.stop_checked = 0.0
        # (embedding model, vector) of the question, when the answer path embedded it with the default
        # embedding server (chat.answering): the gap inbox reuses it instead of embedding it again.
        self.question_vector: tuple[str, list[float]] | None = None

    def mark(self, step: str) -> None:
        now = time.perf_counter()
        self.timings[f"{step}_ms"] = round((now - self.last_mark) * 1000, 1)
        self.last_mark = now

    def emit(self, delta: str) -> None:
        if not delta:
            return
        if not self.text:
            self.timings["first_token_ms"] = round((time.perf_counter() - self.started) * 1000, 1)
            self.timings["first_token_at"] = round(time.time(), 3)  # to compare with what clients saw
        self.stop_if_asked()
        offset = len(self.text)
        self.text += delta
        writer.token(self.conversation.pk, self.message.pk, delta, offset, self.text)

    def stop_if_asked(self) -> None:
        """Raise AnswerStopped once the reader has pressed Stop (one indexed read per STOP_CHECK_SECONDS)."""
        now = time.perf_counter()
        if now - self.stop_checked < STOP_CHECK_SECONDS:
            return
        self.stop_checked = now
        if Message.objects.filter(pk=self.message.pk, stop_requested=True).exists():
            raise AnswerStopped

    def restart(self) -> None:
        """Start the text again (clients replace theirs from offset 0, as after a retried attempt)."""
        self.text = ""

    def sources(self, sources: list[dict]) -> None:
        self.context = sources
        writer.sources(self.conversation.pk, self.message.pk, sources)


RETRY = "retry"
MODEL_MODES = ("documents", "agent")  # answers a model wrote from passages (the others quote them, or cite none)


def answer_message(message_id: int) -> str | None:
    """Produce one pending answer (call with the conversation's lock held).

    Returns RETRY when a temporary database error put the answer back in the queue: the database
    session (and with it the conversation's lock) was replaced, so the caller locks again.
    """
    claimed = _claim(message_id)
    if claimed is None:
        return None
    job = Job(*claimed)
    try:
        try:
            outcome = produce(job)
        except AnswerStopped:
            _stopped(job)
        except AnswerFailed as exc:
            _fail(job, exc.reason)
        except (AiServerError, ApplicationError) as exc:  # shown to the user: never a server's address
            _fail(job, reason("answer.error", "%(error)s", error=without_addresses(str(exc))))
        else:
            _finish(job, outcome)
    except Exception as exc:
        if (problem := transient_database_error(exc)) is not None:
            return _database_problem(job, exc, problem)
        logger.exception("answering failed", extra={"message_id": message_id})
        _fail(job, UNEXPECTED)
    writer.flush()  # the final event is out before the worker may stop
    return None


def _database_problem(job: Job, exc: Exception, problem: dict) -> str:
    """A temporary database error (connection lost, server restarted, deadlock): answer again from
    the start on a new session, up to MAX_ATTEMPTS answers; clients replace the text from offset 0.

    Should the database still be away, the write below fails too and the task ends with the answer
    `streaming`: the recovery schedule answers it again once the database is back.
    """
    logger.warning("database error while answering", exc_info=exc, extra={"message_id": job.message.pk})
    if not connection.in_atomic_block:
        connection.close()  # a terminated session: the next statement opens a new one
    time.sleep(DATABASE_RETRY_DELAY)
    attempts = int(job.message.metadata.get("attempts", 1))
    if attempts >= MAX_ATTEMPTS:
        _fail(job, reason("answer.interrupted", gettext_noop(
            "The answer was interrupted because %(reason)s (attempt %(attempt)s of %(attempts)s); try again later."),
            reason=problem, attempt=attempts, attempts=MAX_ATTEMPTS))
        writer.flush()
        return RETRY
    Message.objects.filter(pk=job.message.pk, status=MessageStatus.STREAMING).update(
        status=MessageStatus.PENDING, content="", updated_at=timezone.now())
    return RETRY


def _claim(message_id: int) -> tuple[Message, Message, Conversation] | None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Should the database crash right after, the answer is still pending and gets re-answered.
            cursor.execute("SET LOCAL synchronous_commit TO off")
        message = (Message.objects.select_for_update().select_related("conversation__owner")
                   .filter(pk=message_id, role=MessageRole.ASSISTANT).first())
        if message is None or message.status != MessageStatus.PENDING:
            return None
        stopped = message.stop_requested  # stopped while being written, then put back in the queue
        question = None if stopped else _question_of(message)
        if stopped:
            message.status = MessageStatus.DONE
            message.metadata = {**message.metadata, "stopped": True}
            message.save(update_fields=["status", "metadata", "updated_at"])
        elif question is None:
            _save_failed(message, reason("answer.question_gone", gettext_noop("The question of this answer no longer exists.")))
            return None
        else:
            message.status = MessageStatus.STREAMING
            message.content = ""
            message.error, message.error_reason = "", {}
            message.sources = []
            message.metadata = {"question_id": question.pk, "attempts": int(message.metadata.get("attempts", 0)) + 1,
                                **{k: message.metadata[k] for k in ("retries", "version_of") if message.metadata.get(k)}}
            message.save(update_fields=["status", "content", "error", "error_reason", "sources", "metadata",
                                         "updated_at"])
    writer.send(message.conversation_id, status_event(message_data(message)))
    if question is None:  # stopped: nothing to write
        return None
    return message, question, message.conversation


def _question_of(message: Message) -> Message | None:
    question_id = message.metadata.get("question_id")
    base = Message.objects.filter(conversation_id=message.conversation_id, role=MessageRole.USER)
    if question_id:
        return base.filter(pk=question_id).first()
    return base.filter(pk__lt=message.pk).order_by("-id").first()


def _finish(job: Job, outcome: Outcome) -> None:
    parsed = parse_any(outcome.text, outcome.tag_map, json_mode=outcome.json_mode)
    # A model's sections state only numbers their cited passages hold (quoted answers are the passages).
    ungrounded = mark_ungrounded_sections(parsed.sections, outcome.tag_map) if outcome.mode in MODEL_MODES else 0
    if ungrounded:
        UNGROUNDED_SECTIONS.inc(ungrounded)
    job.mark("generation")
    job.timings["total_ms"] = round((time.perf_counter() - job.started) * 1000, 1)
    tags_of = {id(seg): tag for tag, seg in outcome.tag_map.items()}
    metadata: MessageMetadata = {
        **_base_metadata(job),  # type: ignore[typeddict-item] # question_id, attempts, retries, version_of
        "mode": outcome.mode,
        "answer_format": parsed.format,
        "sections": parsed.sections,
        "citations": parsed.citations,
        "invalid_citations": parsed.invalid_citations,
        "invalid_tags": parsed.invalid_tags,
        "streamed_text": outcome.text,
        "context_sources": job.context or context_sources(outcome.tag_map),
        "retrieved_segments": [{"source_id": tags_of.get(id(seg)), **seg} for seg in outcome.segments],
        "llm_usage": outcome.usage,
        "retrieval": outcome.trace,
        "timings": job.timings,
        **outcome.extra,  # agentic searches, documents waited for, why agentic mode was not used
    }
    if ungrounded:
        metadata["ungrounded_sections"] = ungrounded
    if outcome.trace and outcome.trace.get("qa_direct_reason"):  # why the closest approved pair was (not) the answer
        metadata["qa_direct_reason"] = outcome.trace["qa_direct_reason"]
    if outcome.trace and outcome.trace.get("query_rewrite"):  # what was searched for a follow-up, and how
        metadata["query_rewrite"] = outcome.trace["query_rewrite"]
    sources: list[Source] = [
        {"source_id": c["source_id"], "source_type": c["source_type"], "document_id": c["document_id"],
         "document_name": c["document_name"], "document_version": c.get("document_version"),
         "chunk_index": c["chunk_index"], "page_number": c["page_number"],
         "page_label": c.get("page_label"),
         "qa_id": c["qa_id"], "score": outcome.tag_map[c["source_id"]].get("score"), "preview": c["snippet_preview"],
         **source_origin(outcome.tag_map[c["source_id"]])}
        for c in parsed.citations
    ]
    outdated = _mark_outdated(sources)
    if outdated:
        metadata["outdated_sources"] = outdated
    sources = mark_superseded(sources, current_versions({s["document_id"] for s in sources if s.get("document_id")}))
    superseded = sum(bool(s.get("superseded")) for s in sources)
    if superseded:  # a new version was indexed while this answer was written
        metadata["superseded_sources"] = superseded
    writer.flush()
    with transaction.atomic():
        message = Message.objects.select_for_update().filter(pk=job.message.pk).first()
        if message is None or message.status != MessageStatus.STREAMING:
            return  # deleted, or handed to another answerer meanwhile
        message.status = MessageStatus.DONE
        message.content = parsed.content
        message.sources = sources
        message.metadata = metadata
        message.save(update_fields=["status", "content", "sources", "metadata", "updated_at"])
        # Which passages went into this answer (to the model, or quoted): one INSERT, saved with it.
        audit_passages(action=AuditAction.ANSWER, user=job.conversation.owner, segments=outcome.tag_map.values(),
                       via=answer_channel(job.question, job.conversation), message_id=message.pk,
                       detail={"mode": outcome.mode})
        usage = outcome.usage or {}
        answer_recorded(user_id=job.conversation.owner_id, collection_id=job.conversation.collection_id,
                        mode=outcome.mode, chat_model=str(usage.get("model") or ""),
                        chat_server_id=int(usage.get("server_id") or 0),
                        tokens_in=int(usage.get("prompt_tokens") or 0), tokens_out=int(usage.get("completion_tokens") or 0),
                        cited_documents=len({s["document_id"] for s in sources if s.get("document_id")}))
    if outcome.usage:  # a model wrote it, so the server answers: the first exchange's title is asked of it once
        title_after_first_answer(answer=message, server=chat_server(retrieval_settings_get()))
    writer.send(message.conversation_id, status_event(message_data(message)))
    gap_check_wanted(message, question_vector=job.question_vector)  # refused, general, weak or unverified: to the gap inbox (chat.gaps)
    logger.info("answered", extra={"message_id": message.pk, "mode": outcome.mode, "citations": len(sources),
                                   "invalid_citations": parsed.invalid_citations, **job.timings})


def _mark_outdated(sources: list[Source]) -> int:
    """Mark each cited document that has expired (`expired`, documents.governance): the sources list says
    "may be outdated". How many were marked."""
    expired = expired_document_ids({s["document_id"] for s in sources if s.get("document_id")})
    for source in sources:
        if source.get("document_id") in expired:
            source["expired"] = True
    return sum(bool(source.get("expired")) for source in sources)


def _base_metadata(job: Job) -> dict:
    keep = ("question_id", "attempts", "retries", "version_of")
    return {k: job.message.metadata[k] for k in keep if k in job.message.metadata}


def _fail(job: Job, why: dict) -> None:
    """Record the failure `why` (a core.reasons reason) on the answer; its event speaks the question's language."""
    job.timings["total_ms"] = round((time.perf_counter() - job.started) * 1000, 1)
    writer.flush()
    with transaction.atomic():
        message = Message.objects.select_for_update().filter(pk=job.message.pk).first()
        if message is None or message.status != MessageStatus.STREAMING:
            return
        message.status = MessageStatus.FAILED
        message.error, message.error_reason = in_english(why), why
        message.content = job.text  # what was streamed before the failure stays visible
        message.metadata = {**_base_metadata(job), "context_sources": job.context, "timings": job.timings}
        message.save(update_fields=["status", "error", "error_reason", "content", "metadata", "updated_at"])
        answer_recorded(user_id=job.conversation.owner_id, collection_id=job.conversation.collection_id, mode="failed")
    with translation.override(reply_language(job.question.content, job.conversation.owner)):
        writer.send(message.conversation_id, status_event(message_data(message)))
    logger.warning("answer failed", extra={"message_id": message.pk, "error": message.error})


def _stopped(job: Job) -> None:
    """The reader stopped the answer: what was streamed stays, as a finished answer marked stopped."""
    job.timings["total_ms"] = round((time.perf_counter() - job.started) * 1000, 1)
    writer.flush()
    with transaction.atomic():
        message = Message.objects.select_for_update().filter(pk=job.message.pk).first()
        if message is None or message.status != MessageStatus.STREAMING:
            return
        message.status = MessageStatus.DONE
        message.content = job.text
        message.metadata = {**_base_metadata(job), "stopped": True, "streamed_text": job.text,
                            "context_sources": job.context, "timings": job.timings}
        message.save(update_fields=["status", "content", "metadata", "updated_at"])
    writer.send(message.conversation_id, status_event(message_data(message)))
    logger.info("answer stopped by the reader", extra={"message_id": message.pk, "chars": len(job.text)})


def _save_failed(message: Message, why: dict) -> None:
    Message.objects.filter(pk=message.pk).update(status=MessageStatus.FAILED, error=in_english(why), error_reason=why,
                                                 updated_at=timezone.now())
    message.refresh_from_db()
    writer.send(message.conversation_id, status_event(message_data(message)))
