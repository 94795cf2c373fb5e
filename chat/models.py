"""Conversations, the documents attached to them, and their messages."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from core.ownership import OwnedQuerySet


class ConversationQuerySet(OwnedQuerySet):
    """Every read goes through visible_to (core.ownership): a user sees only their own."""


class ConversationOrigin(models.TextChoices):
    """Where a conversation was started: the chat page, the API (/api, /v1) or an MCP client."""

    WEB = "web", _("Chat page")
    API = "api", _("API")
    MCP = "mcp", _("MCP")


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations", db_index=False
    )
    title = models.CharField(max_length=200, blank=True)
    documents = models.ManyToManyField(
        "documents.Document", through="ConversationDocument", related_name="conversations", blank=True
    )
    # Narrows the conversation's questions to one collection (when nothing is attached); a collection
    # the user no longer reads is refused at question time, never searched.
    collection = models.ForeignKey("documents.Collection", on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    # The topic its questions are asked under (retrieval's tiers); one of retrieval.topics' topics in use
    # when set, changeable at any time: each question records the topic it was asked under.
    category = models.CharField(max_length=100, blank=True, default="")
    subcategory = models.CharField(max_length=100, blank=True, default="")
    origin = models.CharField(max_length=10, choices=ConversationOrigin.choices, default=ConversationOrigin.WEB)
    # Pinned conversations head the sidebar, most recently pinned first; null: not pinned.
    pinned_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conversation_owner_updated")]
        constraints = [models.CheckConstraint(condition=models.Q(origin__in=ConversationOrigin.values),
                                              name="conversation_origin_valid")]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"


class ConversationDocument(models.Model):
    """A document attached to a conversation: its questions search only the attached documents."""

    pk = models.CompositePrimaryKey("conversation", "document")
    # The primary key (conversation, document) serves lookups by conversation; the index below by document.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="attachments", db_index=False)
    document = models.ForeignKey("documents.Document", on_delete=models.CASCADE, related_name="attachments", db_index=False)
    attached_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["document"], name="conversationdoc_document")]

    def __str__(self) -> str:
        return f"{self.conversation_id} ↔ {self.document_id}"


class MessageRole(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    SYSTEM = "system", "System"


class MessageStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    STREAMING = "streaming", "Streaming"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class MessageQuerySet(OwnedQuerySet):
    """Messages belong to their conversation's owner."""

    owner_field = "conversation__owner_id"

    def owned(self, user, *, conversation_id: int, message_id: int) -> "MessageQuerySet":
        """The message, if it is in that conversation and the user owns the conversation; else no rows.

        The one ownership check of the API, the retry service and the SSE stream (404 for anything else).
        """
        return self.visible_to(user).filter(conversation_id=conversation_id, pk=message_id)


class Message(models.Model):
    """One turn. An assistant message keeps its evidence: sources, sections, citations, usage."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages", db_index=False)
    role = models.CharField(max_length=20, choices=MessageRole.choices)
    status = models.CharField(max_length=20, choices=MessageStatus.choices, default=MessageStatus.DONE)
    content = models.TextField(blank=True)
    sources = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # Set by the reader's Stop (chat.services.message_stop); the answerer checks it between streamed chunks,
    # keeps what was written and ends the answer as done with metadata.stopped.
    stop_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(role__in=MessageRole.values), name="message_role_valid"),
            models.CheckConstraint(condition=models.Q(status__in=MessageStatus.values), name="message_status_valid"),
        ]
        indexes = [models.Index(fields=["conversation", "created_at"], name="message_conversation_created")]

    def __str__(self) -> str:
        return f"{self.role} {self.pk}"


class FeedbackRating(models.TextChoices):
    UP = "up", _("Helpful")
    DOWN = "down", _("Not helpful")


class FeedbackReason(models.TextChoices):
    WRONG = "wrong", _("Wrong")
    OUTDATED = "outdated", _("Outdated")
    INCOMPLETE = "incomplete", _("Incomplete")
    WRONG_SOURCE = "wrong_source", _("Wrong source")
    OTHER = "other", _("Other")


FEEDBACK_COMMENT_MAX_CHARS = 2000


class Feedback(models.Model):
    """A user's 👍/👎 on one answer (source_id "") or on one of its cited sources ("S1"), with what it
    was given on: the answer's mode, its cited sources' ids and the retrieval settings then in force.

    The snapshot keeps ids only (document, chunk, version, Q&A pair), never passage text.
    """

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="feedback", db_index=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    source_id = models.CharField(max_length=10, blank=True, default="",
                                 help_text="The cited source's tag (S1…); empty for the whole answer")
    rating = models.CharField(max_length=10, choices=FeedbackRating.choices)
    reason = models.CharField(max_length=20, choices=FeedbackReason.choices, blank=True, default="")
    comment = models.TextField(blank=True, default="", max_length=FEEDBACK_COMMENT_MAX_CHARS)
    mode = models.CharField(max_length=30, blank=True, default="")
    cited_sources = models.JSONField(default=list, blank=True)
    retrieval_settings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["message", "user", "source_id"], name="feedback_one_per_source"),
            models.CheckConstraint(condition=models.Q(rating__in=FeedbackRating.values), name="feedback_rating_valid"),
            models.CheckConstraint(condition=models.Q(reason__in=["", *FeedbackReason.values]),
                                   name="feedback_reason_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.rating} on {self.message_id}{' ' + self.source_id if self.source_id else ''}"
