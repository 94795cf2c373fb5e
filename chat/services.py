"""Changes to conversations and messages. Answers are produced by chat.orchestrator in the chat worker."""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext

from chat.citations import normalize_tag
from chat.events import status_event, writer
from chat.gaps import gap_wanted
from chat.models import (
    Conversation,
    ConversationDocument,
    ConversationOrigin,
    Feedback,
    FeedbackRating,
    Message,
    MessageRole,
    MessageStatus,
)
from chat.selectors import conversation_get, feedback_share_default, message_get
from chat.threads import parents, thread_path
from chat.titles import title_from_question
from chat.threads import root_of
from chat.serializers import message_data
from chat.tasks import enqueue_answer
from documents.models import Document
from core.errors import ApplicationError, Conflict, NotFound
from retrieval.topics import topic_validate
from usage.quotas import ModelCall, model_call_check
from usage.recorder import question_recorded

logger = logging.getLogger(__name__)



def _enqueue_with(conversation_id: int) -> None:
    """Queue the answer as part of the current transaction when the queue is this database.

    The task row then commits with the messages (a worker cannot see one without the other, and
    nothing is lost if the process dies right after the commit); it also saves the two new
    connections django-q2's broker opens when called after the commit (~20 ms per question).
    With another broker (Redis) the task is sent after the commit.
    """
    from django_q.conf import Conf

    # The documented exception to core.tasks' after-commit rule: see above.
    enqueue_answer(conversation_id, in_transaction=Conf.ORM == "default" and not (
        Conf.BROKER_CLASS or Conf.REDIS or Conf.DJANGO_REDIS))


def _readable_collection(user, ref):
    """The collection `ref` (id or slug) names if the user reads it; None for an empty ref; else 404."""
    if ref is None or str(ref).strip() == "":
        return None
    from documents.collections import collection_readable  # noqa: PLC0415

    return collection_readable(user=user, ref=ref)


def conversation_create(*, user, title: str = "", document_ids: list[int] | None = None,
                        collection=None, category: str = "", subcategory: str = "",
                        origin: str = ConversationOrigin.API) -> Conversation:
    """Start a conversation; its topic (category / subcategory) must be one in use (retrieval.topics).

    Without a question it stays empty until one is asked: only API clients do that (to attach
    documents first); the chat page starts a conversation with its first question (conversation_start).
    """
    if origin not in ConversationOrigin.values:
        raise ApplicationError(gettext("Unknown origin %(origin)s.") % {"origin": origin}, code="invalid")
    category, subcategory = topic_validate(user=user, category=category, subcategory=subcategory)
    with transaction.atomic():
        conversation = Conversation.objects.create(owner=user, title=title.strip()[:200],
                                                   collection=_readable_collection(user, collection),
                                                   category=category, subcategory=subcategory, origin=origin)
        for document_id in document_ids or []:
            conversation_document_attach(conversation_id=conversation.pk, document_id=document_id, user=user)
    return conversation


def conversation_start(*, user, question: str, origin: str, title: str = "", document_ids: list[int] | None = None,
                       collection=None, category: str = "", subcategory: str = "",
                       metadata: dict | None = None) -> tuple[Conversation, Message, Message]:
    """Start a conversation with its first question, as one unit: a refused question (empty, too long)
    or attachment leaves no conversation behind. Returns (conversation, question, pending answer)."""
    with transaction.atomic():
        conversation = conversation_create(user=user, title=title, document_ids=document_ids, collection=collection,
                                           category=category, subcategory=subcategory, origin=origin)
        asked, answer = message_send(conversation_id=conversation.pk, user=user, content=question, metadata=metadata,
                                     origin=origin)
    return conversation, asked, answer


_UNCHANGED = object()


def conversation_update(*, conversation_id, user, title: str | None = None, collection=_UNCHANGED,
                        category: str | None = None, subcategory: str | None = None,
                        pinned: bool | None = None) -> Conversation:
    """Rename the conversation, narrow its questions to one readable collection (None: everything),
    change its topic (a category or subcategory not sent keeps its value; "" clears it), and/or pin it
    to the top of the list (pinning alone does not make it "recently active")."""
    conversation = conversation_get(conversation_id=conversation_id, user=user)
    if pinned is not None and title is None and collection is _UNCHANGED and category is None and subcategory is None:
        # updated_at orders the list by activity: a pin is no activity (auto_now would bump it on save()).
        if pinned != (conversation.pinned_at is not None):
            conversation.pinned_at = timezone.now() if pinned else None
            Conversation.objects.filter(pk=conversation.pk).update(pinned_at=conversation.pinned_at)
        return conversation
    fields = ["updated_at"]
    if pinned is not None and pinned != (conversation.pinned_at is not None):
        conversation.pinned_at = timezone.now() if pinned else None
        fields.append("pinned_at")
    if category is not None or subcategory is not None:
        new_category = conversation.category if category is None else category
        # A new category without a subcategory clears the old one: it belonged to the old category.
        new_subcategory = subcategory if subcategory is not None else (
            conversation.subcategory if category is None or category.strip() == conversation.category else "")
        conversation.category, conversation.subcategory = topic_validate(
            user=user, category=new_category, subcategory=new_subcategory)
        fields += ["category", "subcategory"]
    if title is not None:
        conversation.title = title.strip()[:200]
        fields.append("title")
    if collection is not _UNCHANGED:
        conversation.collection = _readable_collection(user, collection)
        fields.append("collection")
    conversation.save(update_fields=fields)
    return conversation


def conversation_delete(*, conversation_id, user) -> None:
    """Delete the conversation and its messages (an answer being written stops quietly)."""
    conversation_get(conversation_id=conversation_id, user=user).delete()


def conversation_document_attach(*, conversation_id, document_id, user) -> tuple[Document, bool]:
    """Attach one of the user's documents; (document, whether it was newly attached)."""
    conversation = conversation_get(conversation_id=conversation_id, user=user)
    document = Document.objects.visible_to(user).filter(pk=_int(document_id)).first()
    if document is None:
        raise NotFound(gettext("No such document."))
    _, created = ConversationDocument.objects.get_or_create(conversation=conversation, document=document)
    if created:
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now())
    return document, created


def conversation_document_detach(*, conversation_id, document_id, user) -> None:
    conversation = conversation_get(conversation_id=conversation_id, user=user)
    deleted, _ = ConversationDocument.objects.filter(conversation=conversation, document_id=_int(document_id)).delete()
    if not deleted:
        raise NotFound(gettext("This document is not attached to the conversation."))


def message_send(*, conversation_id, user, content: str, category: str | None = None, subcategory: str | None = None,
                 metadata: dict | None = None, origin: str = "", enqueue: bool = True,
                 edit_of: int | None = None) -> tuple[Message, Message]:
    """Save the question and a pending answer; the chat worker answers it (in order) after commit.

    `metadata`: the client's own object, kept with the question as `metadata.client` (validated
    and size-limited by the caller's serializer); `origin`: which interface asked (`web`, `api`, `openai`,
    `mcp`: the audit channel of its answer, chat.orchestrator.answer_channel).
    `category` / `subcategory`: this question's own topic; None (not sent) asks under the
    conversation's topic. The question records the topic it was asked under (`metadata.category`,
    `metadata.subcategory`, `metadata.topic_from`: "question" or "conversation").
    `edit_of`: a question of the conversation, edited: the new question is a version of it
    (`metadata.version_of`: the first version's id), kept beside it with its own answer, and the
    conversation branches there (`metadata.after`: the question version it follows; chat/threads.py).
    """
    content = (content or "").strip()
    if not content:
        raise ApplicationError(gettext("The question is empty."), code="invalid")
    if len(content) > settings.CHAT_MAX_QUESTION_CHARS:
        raise ApplicationError(gettext("The question is longer than %(limit)s characters.") % {"limit": settings.CHAT_MAX_QUESTION_CHARS},
                               code="invalid")
    with transaction.atomic():
        conversation = Conversation.objects.visible_to(user).select_for_update().filter(pk=_int(conversation_id)).first()
        if conversation is None:
            raise NotFound(gettext("No such conversation."))
        # The group's quotas: QuotaExceeded (429) names the limit and its reset.
        model_call_check(user=user, call=ModelCall.EDIT if edit_of is not None else ModelCall.QUESTION)
        versions = _edited(conversation, edit_of) if edit_of is not None else {"after": _thread_end(conversation)}
        own = category is not None or subcategory is not None
        if own:
            category, subcategory = (category or "").strip(), (subcategory or "").strip()
        else:
            category, subcategory = conversation.category, conversation.subcategory
        question = Message.objects.create(
            conversation=conversation, role=MessageRole.USER, status=MessageStatus.DONE, content=content,
            metadata={"category": category, "subcategory": subcategory,
                      "topic_from": "question" if own else "conversation",
                      **({"client": metadata} if metadata else {}), **({"origin": origin} if origin else {}),
                      **versions},
        )
        answer = Message.objects.create(conversation=conversation, role=MessageRole.ASSISTANT,
                                        status=MessageStatus.PENDING, metadata={"question_id": question.pk})
        fields = ["updated_at"]
        if not conversation.title:
            conversation.title = title_from_question(content)  # chat/titles.py: what it asks about
            fields.append("title")
        conversation.save(update_fields=fields)
        question_recorded(user_id=user.pk, collection_id=conversation.collection_id,
                          origin=origin or conversation.origin)
        if enqueue:
            _enqueue_with(conversation.pk)
    logger.info("question queued", extra={"conversation_id": conversation.pk, "message_id": answer.pk})
    return question, answer


def _edited(conversation: Conversation, edit_of) -> dict:
    """A new version of the question `edit_of` (any question of the conversation): its first version's id
    and the question version it follows, so the conversation branches there (chat/threads.py). No answer
    may still be being written (call inside transaction.atomic, the conversation locked)."""
    original = Message.objects.filter(conversation=conversation, pk=_int(edit_of), role=MessageRole.USER).first()
    if original is None:
        raise NotFound(gettext("No such question to edit."))
    root = (original.metadata or {}).get("version_of") or original.pk
    if Message.objects.filter(conversation=conversation, role=MessageRole.ASSISTANT,
                              status__in=[MessageStatus.PENDING, MessageStatus.STREAMING]).exists():
        raise Conflict(gettext("An answer is still being written; stop it or wait for it first."),
                       code="answer_in_progress")
    rows = list(Message.objects.filter(conversation=conversation, role=MessageRole.USER).only("id", "role", "metadata"))
    for version in Message.objects.filter(conversation=conversation, role=MessageRole.USER).filter(
            Q(pk=root) | Q(metadata__version_of=root)).values_list("pk", flat=True):
        _versions_unchoose(conversation.pk, version)  # the new version is the one shown
    return {"version_of": root, "after": parents(rows).get(original.pk)}


def _thread_end(conversation: Conversation) -> int | None:
    """The last question of the thread the page shows: a new question follows it."""
    rows = list(Message.objects.filter(conversation=conversation, role__in=[MessageRole.USER, MessageRole.ASSISTANT])
                .only("id", "role", "metadata"))
    questions = [m for m in thread_path(rows) if m.role == MessageRole.USER]
    return questions[-1].pk if questions else None


def message_retry(*, conversation_id, message_id, user) -> Message:
    """Answer again a failed message, one that said a document it needs is not indexed yet, or one
    quoted from the passages because the language model was unavailable.

    An answer already queued again (pending or being written: the document it waited for finished
    indexing, see waiting_answers_requeue) is returned as it is."""
    with transaction.atomic():
        message = (Message.objects.owned(user, conversation_id=_int(conversation_id), message_id=_int(message_id))
                   .select_for_update().first())
        if message is None:
            raise NotFound(gettext("No such message."))
        if message.role == MessageRole.ASSISTANT and message.status in (MessageStatus.PENDING, MessageStatus.STREAMING):
            return message
        metadata = message.metadata or {}
        waited = message.status == MessageStatus.DONE and (
            metadata.get("mode") == "waiting" or bool(metadata.get("model_unavailable")))
        if message.role != MessageRole.ASSISTANT or not (message.status == MessageStatus.FAILED or waited):
            raise Conflict(gettext("Only a failed answer, one that waited for a document or for the language model, can be retried."),
                           code="invalid_state", extra={"status": message.status})
        model_call_check(user=user, call=ModelCall.RETRY)  # the month's tokens: QuotaExceeded (429)
        _requeue(message)
    return message


def message_stop(*, conversation_id, message_id, user) -> Message:
    """Stop an answer of the user's: one still waiting in the queue ends at once (done, empty, stopped);
    one being written is flagged, and its answerer ends it between two streamed chunks, keeping what it
    wrote (chat.orchestrator). Either way the conversation's live pages get the final status event. An answer already finished is returned as it is."""
    with transaction.atomic():
        message = (Message.objects.owned(user, conversation_id=_int(conversation_id), message_id=_int(message_id))
                   .select_for_update().first())
        if message is None:
            raise NotFound(gettext("No such message."))
        if message.role != MessageRole.ASSISTANT:
            raise ApplicationError(gettext("Only an answer can be stopped, not a question."), code="not_an_answer")
        if message.status == MessageStatus.PENDING:
            message.status = MessageStatus.DONE
            message.metadata = {**(message.metadata or {}), "stopped": True}
            message.save(update_fields=["status", "metadata", "updated_at"])
            # No answerer will say it: the pages following the conversation are told here, once it is saved.
            stopped = message
            transaction.on_commit(lambda: writer.send(stopped.conversation_id, status_event(message_data(stopped))))
        elif message.status == MessageStatus.STREAMING and not message.stop_requested:
            message.stop_requested = True
            message.save(update_fields=["stop_requested"])
    logger.info("answer stop asked", extra={"message_id": message.pk, "status": message.status})
    return message


def message_regenerate(*, conversation_id, message_id, user) -> Message:
    """Write a new version of the conversation's last answer, kept beside the earlier ones: a new pending
    answer to the same question (metadata.question_id), queued. Only a finished or failed answer of the
    last question can be regenerated (a later question would have been asked after the older version).
    A regeneration is a new model call: held to the day's questions and counted as one (usage.quotas)."""
    with transaction.atomic():
        conversation = Conversation.objects.visible_to(user).select_for_update().filter(pk=_int(conversation_id)).first()
        message = (Message.objects.owned(user, conversation_id=_int(conversation_id), message_id=_int(message_id))
                   .first()) if conversation is not None else None
        if message is None:
            raise NotFound(gettext("No such message."))
        if message.role != MessageRole.ASSISTANT:
            raise ApplicationError(gettext("Only an answer can be regenerated, not a question."), code="not_an_answer")
        question_id = (message.metadata or {}).get("question_id")
        # The answer that ends a branch (chat.threads): no later question followed its question; on the
        # branch of an earlier version of an edited question too (_branch_kept keeps the thread there).
        rows = list(Message.objects.filter(conversation=conversation).only("pk", "role", "metadata"))
        links = parents(rows)
        if not question_id or question_id not in links or question_id in links.values():
            raise Conflict(gettext("Only the answer to the last question can be regenerated."), code="not_last_answer")
        asked = next(m for m in rows if m.pk == question_id)
        turn = [m.pk for m in rows if m.role == MessageRole.USER and root_of(m) == root_of(asked)]
        if Message.objects.filter(conversation=conversation, role=MessageRole.ASSISTANT,
                                  status__in=[MessageStatus.PENDING, MessageStatus.STREAMING]).exists():
            raise Conflict(gettext("An answer is still being written; stop it or wait for it first."),
                           code="answer_in_progress")
        # A new model call like a question: the day's questions and the month's tokens (QuotaExceeded, 429).
        model_call_check(user=user, call=ModelCall.REGENERATE)
        answer = Message.objects.create(conversation=conversation, role=MessageRole.ASSISTANT,
                                        status=MessageStatus.PENDING,
                                        metadata={"question_id": question_id, "version_of": message.pk})
        _versions_unchoose(conversation.pk, question_id)  # the new version is the one shown
        _branch_kept(conversation.pk, answer, turn)
        conversation.save(update_fields=["updated_at"])
        question_recorded(user_id=user.pk, collection_id=conversation.collection_id,
                          origin=conversation.origin)  # counted as a question of the day
        _enqueue_with(conversation.pk)
    logger.info("answer regenerated", extra={"conversation_id": conversation.pk, "message_id": answer.pk})
    return answer


def answer_version_choose(*, conversation_id, message_id, user) -> Message:
    """Remember which version of an answer its reader shows (metadata.chosen on that one, on none of the
    other answers to the same question), so the page shows it again after a reload."""
    with transaction.atomic():
        message = (Message.objects.owned(user, conversation_id=_int(conversation_id), message_id=_int(message_id))
                   .select_for_update().first())
        if message is None:
            raise NotFound(gettext("No such message."))
        question_id = (message.metadata or {}).get("question_id") if message.role == MessageRole.ASSISTANT else None
        if not question_id:
            raise ApplicationError(gettext("Only a version of an answer can be chosen."), code="not_an_answer")
        asked = Message.objects.filter(pk=question_id).values_list("metadata__version_of", flat=True).first()
        root = asked or question_id
        for version in Message.objects.filter(conversation_id=message.conversation_id, role=MessageRole.USER).filter(
                Q(pk=root) | Q(metadata__version_of=root)).values_list("pk", flat=True):
            _versions_unchoose(message.conversation_id, version)
        message.refresh_from_db(fields=["metadata"])
        message.metadata = {**(message.metadata or {}), "chosen": True}
        message.save(update_fields=["metadata"])
    return message


def _branch_kept(conversation_id: int, answer: Message, turn: list[int]) -> None:
    """A regenerated answer is the one shown among every version of its turn (`turn`: the ids of its
    question's versions); to an earlier version of an edited question it is chosen too, as only a chosen
    answer shows an earlier version (chat.threads), so the thread stays on the branch it was asked on."""
    for version in turn:
        _versions_unchoose(conversation_id, version)
    if answer.metadata["question_id"] != max(turn):
        answer.metadata = {**answer.metadata, "chosen": True}
        answer.save(update_fields=["metadata"])


def _versions_unchoose(conversation_id: int, question_id: int) -> None:
    """No version of the answers to `question_id` is the chosen one (inside transaction.atomic)."""
    for other in Message.objects.select_for_update().filter(
            conversation_id=conversation_id, role=MessageRole.ASSISTANT, metadata__question_id=question_id,
            metadata__has_key="chosen"):
        other.metadata = {k: v for k, v in other.metadata.items() if k != "chosen"}
        other.save(update_fields=["metadata"])


def waiting_answers_requeue(*, document_id: int) -> int:
    """Answer again every answer that waited for documents in a conversation this document is attached
    to (its indexing just ended); the answer then waits on, reports a failure, or is answered. Returns how many."""
    with transaction.atomic():
        waiting = list(Message.objects.select_for_update().filter(
            role=MessageRole.ASSISTANT, status=MessageStatus.DONE, metadata__mode="waiting",
            conversation__attachments__document_id=document_id))
        for message in waiting:
            _requeue(message)
    if waiting:
        logger.info("waiting answers queued again", extra={"document_id": document_id, "answers": len(waiting)})
    return len(waiting)


def _requeue(message: Message) -> None:
    """Back to pending and queued (call inside transaction.atomic, the row locked)."""
    message.status = MessageStatus.PENDING
    message.content = ""
    message.error, message.error_reason = "", {}
    message.sources = []
    message.stop_requested = False
    message.metadata = {"question_id": message.metadata.get("question_id"), "retries":
                        int(message.metadata.get("retries", 0)) + 1}
    message.save(update_fields=["status", "content", "error", "error_reason", "sources", "metadata",
                                "stop_requested", "updated_at"])
    _enqueue_with(message.conversation_id)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise NotFound(gettext("Not found.")) from None


def _retrieval_snapshot() -> dict:
    """The retrieval settings in force, as a small dict kept with a feedback (ids and numbers only)."""
    from retrieval.selectors import retrieval_settings_get  # noqa: PLC0415

    rs = retrieval_settings_get()
    server = rs.default_embedding_server
    return {
        "embedding_server_id": rs.default_embedding_server_id,
        "embedding_model": server.embedding_model if server is not None else "",
        "chat_mode": rs.chat_mode,
        "vector_top_k": rs.vector_top_k, "fts_top_k": rs.fts_top_k,
        "vector_weight": rs.vector_weight, "fts_weight": rs.fts_weight, "fusion": rs.fusion, "rrf_k": rs.rrf_k,
        "final_top_n": rs.final_top_n, "fts_ranking": rs.fts_ranking,
        "qa_distance_threshold": rs.qa_distance_threshold, "doc_distance_threshold": rs.doc_distance_threshold,
        "rerank_server_id": rs.rerank_server_id,
    }


_CITED_ID_FIELDS = ("source_id", "source_type", "document_id", "document_version", "chunk_id", "qa_id")


def _cited_sources(message: Message) -> list[dict]:
    """The answer's cited sources by id (document, version, chunk, Q&A pair): never their text."""
    citations = {c.get("source_id"): c for c in (message.metadata or {}).get("citations") or []
                 if isinstance(c, dict)}
    rows = []
    for source in message.sources or []:
        merged = {**citations.get(source.get("source_id"), {}), **source}
        rows.append({field: merged.get(field) for field in _CITED_ID_FIELDS})
    return rows


def _rated_answer(*, conversation_id, message_id, user) -> Message:
    """The user's finished answer (NotFound for anyone else's, or for no such message)."""
    message = message_get(conversation_id=conversation_id, message_id=message_id, user=user)
    if message.role != MessageRole.ASSISTANT:
        raise ApplicationError(gettext("Only an answer can be rated, not a question."), code="not_an_answer")
    if message.status != MessageStatus.DONE:
        raise Conflict(gettext("Only a finished answer can be rated."), code="answer_not_done")
    return message


def _source_tag(message: Message, source_id) -> str:
    """"" for the whole answer, else the canonical tag of one of the answer's cited sources."""
    if source_id is None or source_id == "":
        return ""
    tag = normalize_tag(source_id)
    if tag is None or tag not in {s.get("source_id") for s in message.sources or []}:
        raise ApplicationError(gettext("This answer cites no source %(source)s.") % {"source": source_id},
                               code="unknown_source")
    return tag


def feedback_give(*, conversation_id, message_id, user, rating: str, reason: str = "", comment: str = "",
                  source_id: str | None = None, shared: bool | None = None) -> tuple[Feedback, bool]:
    """Rate one of the user's finished answers, or one of its cited sources: a second rating of the
    same (answer, source) replaces the first. Returns the feedback and whether it is new.

    `shared`: a 👎 shared with the curators (the gap inbox shows them its question, reason and
    comment); None takes the user's last choice (selectors.feedback_share_default). A 👍 is never shared.

    `rating`, `reason` and `comment` are validated by chat.serializers.FeedbackSerializer.
    """
    message = _rated_answer(conversation_id=conversation_id, message_id=message_id, user=user)
    tag = _source_tag(message, source_id)
    if rating != FeedbackRating.DOWN and reason:
        raise ApplicationError(gettext("A reason is given only with a thumbs down."), code="invalid_reason")
    feedback, created = Feedback.objects.update_or_create(
        message=message, user=user, source_id=tag,
        defaults={"rating": rating, "reason": reason, "comment": comment.strip(),
                  "shared": rating == FeedbackRating.DOWN and (
                      feedback_share_default(user=user) if shared is None else bool(shared)),
                  "mode": str((message.metadata or {}).get("mode") or "")[:30],
                  "cited_sources": _cited_sources(message), "retrieval_settings": _retrieval_snapshot()})
    _gap_check(message)
    return feedback, created


def feedback_withdraw(*, conversation_id, message_id, user, source_id: str | None = None) -> None:
    """Withdraw the user's rating of the answer (or of one of its sources); NotFound when there is none."""
    message = message_get(conversation_id=conversation_id, message_id=message_id, user=user)
    tag = "" if source_id in (None, "") else normalize_tag(source_id)
    if tag is None:
        raise NotFound(gettext("You have not rated this."), code="no_feedback")
    deleted, _rows = Feedback.objects.filter(message=message, user=user, source_id=tag).delete()
    if not deleted:
        raise NotFound(gettext("You have not rated this."), code="no_feedback")
    _gap_check(message)


def _gap_check(message: Message) -> None:
    """A rating changed: the gap inbox takes the answer in (thumbs down) or out again (chat.gaps)."""
    gap_wanted(answer_id=message.pk)
