"""Conversations, the documents attached to them, and their messages."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from pgvector.django import VectorField

from core.ownership import OwnedQuerySet
from core.reasons import render as render_reason


class ConversationQuerySet(OwnedQuerySet):
    """Every read goes through visible_to (core.ownership): a user sees only their own."""


class ConversationOrigin(models.TextChoices):
    """Where a conversation was started: the chat page, the API (/api, /v1) or an MCP client."""

    WEB = "web", _("Chat page")
    API = "api", _("API")
    MCP = "mcp", _("MCP")


class Conversation(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations", db_index=False, verbose_name=_("owner")
    )
    title = models.CharField(max_length=200, blank=True, verbose_name=_("title"))
    documents = models.ManyToManyField(
        "documents.Document", through="ConversationDocument", related_name="conversations", blank=True, verbose_name=_("documents")
    )
    # Narrows the conversation's questions to one collection (when nothing is attached); a collection
    # the user no longer reads is refused at question time, never searched.
    collection = models.ForeignKey("documents.Collection", on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+", verbose_name=_("collection"))
    # The topic its questions are asked under (retrieval's tiers); one of retrieval.topics' topics in use
    # when set, changeable at any time: each question records the topic it was asked under.
    category = models.CharField(max_length=100, blank=True, default="", verbose_name=_("category"))
    subcategory = models.CharField(max_length=100, blank=True, default="", verbose_name=_("subcategory"))
    origin = models.CharField(max_length=10, choices=ConversationOrigin.choices, default=ConversationOrigin.WEB,
                              verbose_name=_("origin"))
    # Pinned conversations head the sidebar, most recently pinned first; null: not pinned.
    pinned_at = models.DateTimeField(null=True, blank=True, verbose_name=_("pinned at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = ConversationQuerySet.as_manager()

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
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
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="attachments", db_index=False, verbose_name=_("conversation"))
    document = models.ForeignKey("documents.Document", on_delete=models.CASCADE, related_name="attachments", db_index=False, verbose_name=_("document"))
    attached_at = models.DateTimeField(auto_now_add=True, verbose_name=_("attached at"))

    class Meta:
        verbose_name = _("conversation document")
        verbose_name_plural = _("conversation documents")
        indexes = [models.Index(fields=["document"], name="conversationdoc_document")]

    def __str__(self) -> str:
        return f"{self.conversation_id} ↔ {self.document_id}"


class MessageRole(models.TextChoices):
    USER = "user", _("User")
    ASSISTANT = "assistant", _("Assistant")
    SYSTEM = "system", _("System")


class MessageStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    STREAMING = "streaming", _("Streaming")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")


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

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages", db_index=False, verbose_name=_("conversation"))
    role = models.CharField(max_length=20, choices=MessageRole.choices, verbose_name=_("role"))
    status = models.CharField(max_length=20, choices=MessageStatus.choices, default=MessageStatus.DONE, verbose_name=_("status"))
    content = models.TextField(blank=True, verbose_name=_("content"))
    sources = models.JSONField(default=list, blank=True, verbose_name=_("sources"))
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    # Why the answer failed: `error` in English (logs, rows older than reasons), `error_reason` for the
    # reader, in their language (core.reasons: {"code", "text", "params"}; empty when there is none).
    error = models.TextField(blank=True, verbose_name=_("error"))
    error_reason = models.JSONField(default=dict, blank=True, verbose_name=_("error (code and parameters)"))
    # Set by the reader's Stop (chat.services.message_stop); the answerer checks it between streamed chunks,
    # keeps what was written and ends the answer as done with metadata.stopped.
    stop_requested = models.BooleanField(default=False, verbose_name=_("stop requested"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = MessageQuerySet.as_manager()

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(role__in=MessageRole.values), name="message_role_valid"),
            models.CheckConstraint(condition=models.Q(status__in=MessageStatus.values), name="message_status_valid"),
        ]
        indexes = [models.Index(fields=["conversation", "created_at"], name="message_conversation_created")]

    def __str__(self) -> str:
        return f"{self.role} {self.pk}"

    @property
    def error_text(self) -> str:
        """Why the answer failed, in the active language (a row older than reasons: its stored text)."""
        return render_reason(self.error_reason, fallback=self.error)


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

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="feedback", db_index=False, verbose_name=_("message"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("user"))
    source_id = models.CharField(max_length=10, blank=True, default="",
                                 help_text=_("The cited source's tag (S1…); empty for the whole answer"), verbose_name=_("source ID"))
    rating = models.CharField(max_length=10, choices=FeedbackRating.choices, verbose_name=_("rating"))
    reason = models.CharField(max_length=20, choices=FeedbackReason.choices, blank=True, default="", verbose_name=_("reason"))
    comment = models.TextField(blank=True, default="", max_length=FEEDBACK_COMMENT_MAX_CHARS, verbose_name=_("comment"))
    # A 👎 the user chose to share with the curators: the gap inbox shows its question (and the
    # reason and comment) to Q&A curators even when the answer drew on no document; never text of a
    # document the curator may not read (documents.answer_access). The choice is remembered per user.
    shared = models.BooleanField(default=False, verbose_name=_("shared with the curators"))
    mode = models.CharField(max_length=30, blank=True, default="", verbose_name=_("mode"))
    cited_sources = models.JSONField(default=list, blank=True, verbose_name=_("cited sources"))
    retrieval_settings = models.JSONField(default=dict, blank=True, verbose_name=_("retrieval settings"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("feedback")
        verbose_name_plural = _("feedback")
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["message", "user", "source_id"], name="feedback_one_per_source"),
            models.CheckConstraint(condition=models.Q(rating__in=FeedbackRating.values), name="feedback_rating_valid"),
            models.CheckConstraint(condition=models.Q(reason__in=["", *FeedbackReason.values]),
                                   name="feedback_reason_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.rating} on {self.message_id}{' ' + self.source_id if self.source_id else ''}"


class GapReason(models.TextChoices):
    """Why a question is in the gap inbox (chat.gaps.gap_reasons)."""

    REFUSED = "refused", _("Refused")
    GENERAL = "general", _("Not from the documents")
    WEAK = "weak", _("Weak matches")
    NUMBERS = "numbers", _("Numbers not in the sources")
    THUMBS_DOWN = "thumbs_down", _("Thumbed down")


class GapStatus(models.TextChoices):
    OPEN = "open", _("Open")
    ANSWERED = "answered", _("Answered")
    DOCUMENT = "document", _("Answer in a document")
    DISMISSED = "dismissed", _("Dismissed")


class GapGroup(models.Model):
    """Questions about one thing that the knowledge base answered badly (chat/gaps.py groups them).

    It holds no question text: the texts are its questions' messages, so a deleted conversation takes
    them with it (GapQuestion cascades), and a group left without questions is not shown.
    """

    status = models.CharField(max_length=20, choices=GapStatus.choices, default=GapStatus.OPEN, verbose_name=_("status"))
    embedding_model = models.ForeignKey("retrieval.EmbeddingModel", on_delete=models.PROTECT, related_name="+", verbose_name=_("embedding model"))
    category = models.CharField(max_length=100, blank=True, default="", verbose_name=_("category"))
    subcategory = models.CharField(max_length=100, blank=True, default="", verbose_name=_("subcategory"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    closed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("closed at"))
    closed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                  related_name="+", verbose_name=_("closed by"))
    answer = models.ForeignKey("retrieval.KnowledgeEntry", on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="+", verbose_name=_("approved answer"))
    document = models.ForeignKey("documents.Document", on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="+", verbose_name=_("document"))

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [models.CheckConstraint(condition=models.Q(status__in=GapStatus.values), name="gapgroup_status_valid")]
        indexes = [models.Index(fields=["status", "-updated_at"], name="gapgroup_status_updated")]
        verbose_name = _("knowledge gap")
        verbose_name_plural = _("knowledge gaps")

    def __str__(self) -> str:
        return f"gap {self.pk} ({self.status})"


class GapPending(models.Model):
    """An answer waiting for the gap inbox's batch task (chat.gaps.gap_inbox_run): to be grouped, have its
    reasons changed, or be taken out. Written when the answer finishes or its rating changes; one row per
    answer, deleted in the transaction that records it."""

    answer = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="+", verbose_name=_("answer"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    # The question's vector when the answer path embedded it already (chat.answering), and by which
    # embedding model: the batch run reuses it when that is the model the inbox groups with.
    embedding = VectorField(null=True, blank=True, verbose_name=_("question's embedding"))
    embedding_model = models.CharField(max_length=200, blank=True, default="", verbose_name=_("embedding model"))

    class Meta:
        ordering = ["id"]  # not shown anywhere: no names of its own to translate

    def __str__(self) -> str:
        return f"gap inbox: answer {self.answer_id} waiting"


class GapQuestion(models.Model):
    """One badly answered question in a gap group: the answer message (one row each), why, and the
    question's vector (default embedding model). No text: it is read from the messages, which cascade."""

    answer = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="gap")
    question = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+", db_index=False)
    asker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    group = models.ForeignKey(GapGroup, on_delete=models.CASCADE, related_name="questions")
    reasons = models.JSONField(default=list)
    language = models.CharField(max_length=10, blank=True, default="")
    # The asker shared the question with the curators (a 👎 with Feedback.shared); who may read its
    # text is documents.answer_access.may_see_answer's rule.
    shared = models.BooleanField(default=False)
    document_ids = models.JSONField(default=list, blank=True)  # every document the answer drew on
    embedding = VectorField()
    asked_at = models.DateTimeField()

    class Meta:
        ordering = ["asked_at", "id"]
