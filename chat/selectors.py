"""Reads of conversations and messages; every one is scoped to the user (others get 404)."""
from __future__ import annotations

from django.db import connection
from django.db.models.expressions import RawSQL
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils.translation import gettext

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
from documents.answer_access import VIEW_MESSAGE
from documents.models import VISIBLE_DOCUMENT_SQL, Document
from core.errors import NotFound
from retrieval.search.scope import Scope, collection_scope, scope_of_rows

IN_FLIGHT = (MessageStatus.PENDING, MessageStatus.STREAMING)

# Conversations with a message that drew on a document the user may not read: every source list an
# answer keeps (documents.answer_access.answer_document_ids reads the same four), in SQL for the admin's lists.
_SOURCE_LISTS = " || ".join(
    f"CASE WHEN jsonb_typeof({expr}) = 'array' THEN {expr} ELSE '[]'::jsonb END"
    for expr in ("m.sources", "m.metadata -> 'sources'", "m.metadata -> 'context_sources'",
                 "m.metadata -> 'retrieved_segments'"))
_UNREADABLE_CONVERSATIONS_SQL = (
    f"SELECT m.conversation_id FROM chat_message m CROSS JOIN LATERAL jsonb_array_elements({_SOURCE_LISTS}) AS s(item) "
    "WHERE jsonb_typeof(s.item) = 'object' AND (s.item ->> 'document_id') ~ '^[0-9]{1,18}$' "
    "AND NOT EXISTS (SELECT 1 FROM documents_document d WHERE d.id = (s.item ->> 'document_id')::bigint AND "
    + VISIBLE_DOCUMENT_SQL.replace("%(user)s", "%s") + ")")


def conversations_shown_to_staff(queryset: QuerySet, *, user, field: str = "pk") -> QuerySet:
    """`queryset` (conversations, or messages with `field="conversation_id"`) narrowed to what `user`
    may see by the rule for answers (documents.answer_access.may_see_answer): their own, and for
    holders of `chat.view_message` those whose every answer drew only on documents they may read."""
    own = Q(**{"conversation__owner_id" if field != "pk" else "owner_id": user.pk})
    if not user.is_active or not user.is_staff or not user.has_perm(VIEW_MESSAGE):
        return queryset.filter(own)
    unreadable = RawSQL(_UNREADABLE_CONVERSATIONS_SQL, [user.pk, user.pk])
    return queryset.filter(own | ~Q(**{f"{field}__in": unreadable}))


def conversation_shown_to_staff(conversation: Conversation, *, user) -> bool:
    """One conversation by the same rule (its change page, its messages' pages)."""
    return conversations_shown_to_staff(Conversation.objects.filter(pk=conversation.pk), user=user).exists()


def _count(model) -> Coalesce:
    rows = model.objects.filter(conversation=OuterRef("pk")).values("conversation").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def conversation_list(*, user) -> QuerySet[Conversation]:
    return Conversation.objects.visible_to(user).select_related("collection").annotate(
        document_count=_count(ConversationDocument), message_count=_count(Message))


SEARCH_MAX_CHARS = 200


def conversation_search(*, user, q: str = "", origin: str = "") -> QuerySet[Conversation]:
    """The user's conversations, pinned first (most recently pinned on top), then by last activity;
    `q` keeps those whose title or any message contains it (case- and accent-insensitive: "prispevek"
    finds "příspěvek", through PostgreSQL's unaccent), `origin` those started
    there (web, api, mcp; anything else: none). Only the user's own conversations are ever searched."""
    rows = conversation_list(user=user)
    if origin:
        rows = rows.filter(origin=origin) if origin in ConversationOrigin.values else rows.none()
    q = " ".join((q or "").split())[:SEARCH_MAX_CHARS]
    if q:
        said = Message.objects.filter(conversation=OuterRef("pk"), content__unaccent__icontains=q)
        rows = rows.filter(Q(title__unaccent__icontains=q) | Exists(said))
    return rows.order_by(F("pinned_at").desc(nulls_last=True), "-updated_at", "-id")


def conversation_get(*, conversation_id, user) -> Conversation:
    conversation = conversation_list(user=user).filter(pk=_int(conversation_id)).first()
    if conversation is None:
        raise NotFound(gettext("No such conversation."))
    return conversation


def conversation_documents(*, conversation: Conversation) -> QuerySet[Document]:
    """The documents attached to a conversation that its owner may read now (whatever was stored)."""
    return Document.objects.visible_to(conversation.owner).filter(attachments__conversation=conversation).order_by(
        "attachments__attached_at", "id")


# `Conversation.objects.visible_to(user)` (the owner's) and its attached documents by
# `Document.objects.visible_to(user)`, active, as one plain statement: every question reads it, and the two
# ORM queries cost ~1.2 ms of CPU to build against ~0.2 ms here (docs/benchmarks.md, "100k chunks"). One
# row without a document when nothing readable is attached; none when the conversation is not the user's.
_SCOPE_SQL = f"""
SELECT c.collection_id, d.id, d.chunk_count
FROM chat_conversation c
LEFT JOIN (chat_conversationdocument a JOIN documents_document d
           ON d.id = a.document_id AND d.is_active AND {VISIBLE_DOCUMENT_SQL}) ON a.conversation_id = c.id
WHERE c.id = %(conversation)s AND c.owner_id = %(user)s
ORDER BY d.id
"""


def conversation_scope(user, conversation) -> Scope:
    """What a question in the conversation searches: its attached documents (those the user still
    reads, active), else its collection (which the user must still read: NotFound otherwise), else
    everything the user reads. `conversation` is an id or the object; someone else's is NotFound."""
    conversation_id = conversation if isinstance(conversation, int) else conversation.pk
    found: list = []
    if user and user.is_authenticated:
        with connection.cursor() as cursor:
            cursor.execute(_SCOPE_SQL, {"conversation": int(conversation_id), "user": int(user.pk)})
            found = cursor.fetchall()
    if not found:
        raise NotFound(gettext("No such conversation."))
    rows = [(document_id, chunks) for _, document_id, chunks in found if document_id is not None]
    collection_id = found[0][0]
    if not rows and collection_id is not None:
        return collection_scope(user, collection_id, conversation_id=conversation_id)
    return scope_of_rows(rows, conversation_id=conversation_id)


def message_list(*, conversation: Conversation) -> QuerySet[Message]:
    """The conversation's messages, each with its owner's feedback as `my_feedback` (one query more)."""
    return Message.objects.filter(conversation=conversation).order_by("created_at", "id").prefetch_related(
        Prefetch("feedback", queryset=Feedback.objects.filter(user_id=conversation.owner_id).order_by("source_id"),
                 to_attr="my_feedback"))


def feedback_attach(*, message: Message, user) -> Message:
    """The message with the user's feedback on it as `my_feedback` (as message_list gives it)."""
    setattr(message, "my_feedback", list(Feedback.objects.filter(message=message, user=user).order_by("source_id")))
    return message


def message_get(*, conversation_id, message_id, user) -> Message:
    message = Message.objects.owned(user, conversation_id=_int(conversation_id), message_id=_int(message_id)).first()
    if message is None:
        raise NotFound(gettext("No such message."))
    return message


def messages_in_flight(*, conversation_id: int) -> list[Message]:
    """Assistant messages of the conversation still waiting for or receiving their answer."""
    return list(Message.objects.filter(conversation_id=conversation_id, role=MessageRole.ASSISTANT,
                                       status__in=IN_FLIGHT).order_by("created_at", "id"))


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise NotFound(gettext("Not found.")) from None


def answer_locate(*, user, message_id=None, conversation_id=None) -> Message:
    """The user's answer to rate: message `message_id`, else the latest finished answer of conversation
    `conversation_id` (over /v1, where clients know the completion's id or the conversation). NotFound else."""
    rows = Message.objects.visible_to(user).filter(role=MessageRole.ASSISTANT)
    if message_id is not None:
        message = rows.filter(pk=_int(message_id)).first()
    elif conversation_id is not None:
        message = rows.filter(conversation_id=_int(conversation_id), status=MessageStatus.DONE).order_by(
            "-created_at", "-id").first()
    else:
        message = None
    if message is None:
        raise NotFound(gettext("No such answer."))
    return message


def feedback_share_default(*, user) -> bool:
    """Whether the user's next 👎 is shared with the curators: the choice of their last 👎 (off at first)."""
    last = (Feedback.objects.filter(user=user, rating=FeedbackRating.DOWN).order_by("-updated_at", "-id")
            .values_list("shared", flat=True).first())
    return bool(last)


def feedback_list(*, user):
    """The user's own ratings, newest first, on answers of conversations they still own."""
    return (Feedback.objects.filter(user=user, message__conversation__owner=user)
            .select_related("message").order_by("-updated_at", "-id"))
