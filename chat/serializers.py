from __future__ import annotations

import json

from django.conf import settings
from rest_framework import serializers

from core.pagination import StrictCharField
from documents.governance import current_versions, mark_superseded

from chat.models import (
    FEEDBACK_COMMENT_MAX_CHARS,
    Conversation,
    Feedback,
    FeedbackRating,
    FeedbackReason,
    Message,
)

_datetime = serializers.DateTimeField()
CLIENT_METADATA_MAX_BYTES = 4096


def message_data(message: Message, *, segments: bool = False) -> dict:
    """A message as the API and live events show it (retrieved segments only when asked for)."""
    metadata = dict(message.metadata or {})
    if not segments:
        metadata.pop("retrieved_segments", None)
    return {
        "id": message.pk,
        "conversation_id": message.conversation_id,
        "role": message.role,
        "status": message.status,
        "content": message.content,
        "sources": message.sources,
        "metadata": metadata,
        "error": message.error_text,
        "created_at": _datetime.to_representation(message.created_at),
        "updated_at": _datetime.to_representation(message.updated_at),
    }


def client_metadata_problem(value) -> str | None:
    """Why a client's metadata object cannot be kept (None when it can): an object, at most
    CLIENT_METADATA_MAX_BYTES as JSON, and text PostgreSQL's jsonb can hold (no NUL, no lone surrogate)."""
    if not isinstance(value, dict):
        return "metadata must be a JSON object."
    try:
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return "metadata holds text that is not valid Unicode (a lone surrogate)."
    except (TypeError, ValueError):
        return "metadata must be plain JSON."
    if any("\x00" in text for text in _texts(value)):
        return "metadata may not contain NUL characters."
    if len(encoded) > CLIENT_METADATA_MAX_BYTES:
        return f"metadata is {len(encoded)} bytes as JSON; at most {CLIENT_METADATA_MAX_BYTES} are kept."
    return None


def _texts(value):
    """Every key and string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def feedback_data(feedback: Feedback) -> dict:
    """A feedback as the API shows it to the user who gave it."""
    return {
        "message_id": feedback.message_id,
        "source_id": feedback.source_id or None,
        "rating": feedback.rating,
        "reason": feedback.reason,
        "comment": feedback.comment,
        "shared": feedback.shared,
        "mode": feedback.mode,
        "cited_sources": feedback.cited_sources,
        "retrieval_settings": feedback.retrieval_settings,
        "created_at": _datetime.to_representation(feedback.created_at),
        "updated_at": _datetime.to_representation(feedback.updated_at),
    }


class FeedbackSerializer(serializers.ModelSerializer):
    """Your rating of an answer (source_id null) or of one of its cited sources, and what it was given on."""

    source_id = serializers.CharField(allow_null=True, help_text="The cited source rated (S1…); null: the answer")
    cited_sources = serializers.ListField(child=serializers.DictField(),
                                         help_text="The answer's cited sources by id (no passage text)")
    retrieval_settings = serializers.DictField(help_text="The retrieval settings in force when it was given")
    # "" when none was given (a 👍, or a 👎 without one): the schema says so (it listed the five reasons only).
    reason = serializers.ChoiceField(choices=FeedbackReason.choices, allow_blank=True, read_only=True)

    class Meta:
        model = Feedback
        fields = ["message_id", "source_id", "rating", "reason", "comment", "shared", "mode", "cited_sources",
                  "retrieval_settings", "created_at", "updated_at"]
        read_only_fields = fields

    def to_representation(self, instance):
        return feedback_data(instance)


class FeedbackCreateSerializer(serializers.Serializer):
    rating = serializers.ChoiceField(choices=FeedbackRating.choices)
    reason = serializers.ChoiceField(choices=FeedbackReason.choices, required=False, allow_blank=True, default="",
                                     help_text="Why not helpful (with rating 'down' only)")
    comment = StrictCharField(required=False, allow_blank=True, default="", max_length=FEEDBACK_COMMENT_MAX_CHARS)
    source_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=10, default=None,
                                help_text="One of the answer's cited sources (S1…) to rate it alone")
    shared = serializers.BooleanField(required=False, allow_null=True, default=None,
                                      help_text="Share this 'down' (question, reason, comment) with the curators' gap "
                                                "inbox; omitted: your last choice")


def _cited_documents(messages) -> set[int]:
    return {s.get("document_id") for m in messages for s in (m.sources or []) if isinstance(s, dict) and s.get("document_id")}


class MessageListSerializer(serializers.ListSerializer):
    """Reads the current version of every cited document once for the whole list (no query per message)."""

    def to_representation(self, data):
        items = list(data.all() if hasattr(data, "all") else data)
        self.child.context["document_versions"] = current_versions(_cited_documents(items))
        return super().to_representation(items)


class MessageSerializer(serializers.ModelSerializer):
    """`metadata` holds sections, citations, llm_usage, retrieval and timings (segments: see /retrieval/);
    `feedback` your own ratings of the answer and of its sources. A source quoting a version of its
    document that a newer one has replaced since says `superseded: true`."""

    conversation_id = serializers.IntegerField(read_only=True)
    feedback = FeedbackSerializer(many=True, read_only=True)

    class Meta:
        model = Message
        fields = ["id", "conversation_id", "role", "status", "content", "sources", "metadata", "error",
                  "feedback", "created_at", "updated_at"]
        read_only_fields = fields
        list_serializer_class = MessageListSerializer

    def to_representation(self, instance):
        data = message_data(instance, segments=self.context.get("segments", False))
        if data["sources"]:
            versions = self.context.get("document_versions")
            if versions is None:
                versions = current_versions(_cited_documents([instance]))
            data["sources"] = mark_superseded(data["sources"], versions)
        data["feedback"] = [feedback_data(f) for f in getattr(instance, "my_feedback", [])]
        return data


class MessageCreateSerializer(serializers.Serializer):
    content = StrictCharField(max_length=settings.CHAT_MAX_QUESTION_CHARS, trim_whitespace=True)
    category = StrictCharField(required=False, allow_blank=True, max_length=100,
                               help_text="This question's topic; not sent: the conversation's topic")
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100,
                                  help_text="This question's topic; not sent: the conversation's topic")
    edit_of = serializers.IntegerField(
        required=False, help_text="The conversation's last question, edited: the new question is kept as a new "
        "version of it (metadata.version_of), with its own answer (409 not_last_question for an earlier one)")
    metadata = serializers.DictField(
        required=False, help_text=f"Your own JSON object (at most {CLIENT_METADATA_MAX_BYTES} bytes as JSON), "
        "kept with the question as metadata.client")

    def validate_metadata(self, value: dict) -> dict:
        problem = client_metadata_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class MessagePairSerializer(serializers.Serializer):
    user_message = MessageSerializer()
    assistant_message = MessageSerializer()
    stream_url = serializers.CharField(help_text="Server-sent events of the answer")
    websocket_url = serializers.CharField(help_text="Live events of the whole conversation")


class ConversationSerializer(serializers.ModelSerializer):
    document_count = serializers.IntegerField(read_only=True, default=0)
    message_count = serializers.IntegerField(read_only=True, default=0)
    origin = serializers.CharField(read_only=True, help_text="Where it was started: web (the chat page), api, mcp")
    pinned = serializers.SerializerMethodField(help_text="Pinned to the top of the list")
    collection = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True,
                                              help_text="Questions search only this collection (unless documents are attached)")

    class Meta:
        model = Conversation
        fields = ["id", "title", "document_count", "message_count", "collection", "category", "subcategory",
                  "origin", "pinned", "pinned_at", "created_at", "updated_at"]
        read_only_fields = ["id", "document_count", "message_count", "collection", "category", "subcategory",
                            "origin", "pinned_at", "created_at", "updated_at"]

    def get_pinned(self, conversation) -> bool:
        return conversation.pinned_at is not None


_collection_ref = dict(required=False, allow_null=True, allow_blank=True, max_length=100,
                       help_text="Id or slug of a collection you read, to search only it; null or '' for everything")


_topic_help = ("The topic questions are asked under: a category / subcategory in use (GET /api/topics/); "
               "anything else is refused (400 invalid_topic)")


class ConversationCreateSerializer(serializers.Serializer):
    question = StrictCharField(required=False, max_length=settings.CHAT_MAX_QUESTION_CHARS, trim_whitespace=True,
                               help_text="The first question: the conversation starts with it and the answer is "
                               "queued (the response then holds user_message and assistant_message too)")
    metadata = serializers.DictField(required=False, help_text="With `question`: as for a message's metadata")
    title = StrictCharField(required=False, allow_blank=True, max_length=200, default="")
    document_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list,
                                         max_length=500)
    collection = serializers.CharField(**_collection_ref)
    category = StrictCharField(required=False, allow_blank=True, max_length=100, default="", help_text=_topic_help)
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100, default="", help_text=_topic_help)


    def validate_metadata(self, value: dict) -> dict:
        problem = client_metadata_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class StrictBooleanField(serializers.BooleanField):
    """true or false only: DRF's BooleanField takes 0, 1, "yes" and "off" too, the schema says boolean."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class ConversationUpdateSerializer(serializers.Serializer):
    title = StrictCharField(required=False, allow_blank=True, max_length=200)
    pinned = StrictBooleanField(required=False, help_text="Pin to the top of the list (false: unpin)")
    collection = serializers.CharField(**_collection_ref)
    category = StrictCharField(required=False, allow_blank=True, max_length=100,
                               help_text=_topic_help + "; a new category without a subcategory clears the subcategory")
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100, help_text=_topic_help)


class AttachSerializer(serializers.Serializer):
    document_id = serializers.IntegerField()


class AttachedDocumentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    name = serializers.CharField(source="original_filename")
    status = serializers.CharField()
    chunk_count = serializers.IntegerField()
    index_error = serializers.CharField(source="index_error_text")


class MessageRetrievalSerializer(serializers.Serializer):
    message_id = serializers.IntegerField()
    status = serializers.CharField()
    mode = serializers.CharField(allow_null=True,
                                 help_text="qa_direct, documents, general, refused, extractive, agent or waiting")
    retrieved_segments = serializers.ListField(child=serializers.DictField())
    context_sources = serializers.ListField(child=serializers.DictField(), help_text="The tags given to the model")
    retrieval = serializers.DictField(allow_null=True, help_text="Scope, tiers, fallbacks, timings")
    agent = serializers.DictField(allow_null=True, help_text="Agentic mode: max_searches, searches (query, "
                                  "source_ids, chunk_ids, timings_ms, trace), rejected_calls, budget_exhausted")
    agentic_fallback = serializers.CharField(allow_null=True, help_text="Why agentic mode was on but not used")
    waiting_for_documents = serializers.ListField(
        child=serializers.DictField(), allow_null=True,
        help_text="Attached documents the question named that were not indexed yet (document_id, name, status)")
    llm_usage = serializers.DictField(allow_null=True)
    timings = serializers.DictField()


class FeedbackListSerializer(serializers.Serializer):
    """One of your ratings, with where it is (the conversation and message to DELETE it on)."""

    conversation_id = serializers.IntegerField(source="message.conversation_id")
    message_id = serializers.IntegerField()
    source_id = serializers.CharField(allow_null=True)
    rating = serializers.CharField()
    reason = serializers.CharField()
    comment = serializers.CharField()
    mode = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["source_id"] = instance.source_id or None
        return data


class GapGroupSerializer(serializers.Serializer):
    """A knowledge gap as a curator may see it (chat.gaps.GapView): no text of private questions."""

    id = serializers.IntegerField()
    status = serializers.CharField(source="group.status")
    questions_count = serializers.IntegerField()
    askers_count = serializers.IntegerField()
    private_questions = serializers.IntegerField()
    example_question = serializers.CharField(allow_null=True)
    questions = serializers.ListField(child=serializers.CharField())
    languages = serializers.ListField(child=serializers.CharField())
    reasons = serializers.ListField(child=serializers.CharField())
    first_asked = serializers.DateTimeField()
    last_asked = serializers.DateTimeField()
    category = serializers.CharField()
    subcategory = serializers.CharField()
    answer = serializers.CharField(allow_null=True)
    answer_mode = serializers.CharField()
    sources = serializers.ListField(child=serializers.DictField())
    feedback = serializers.ListField(child=serializers.DictField(),
                                     help_text="The askers' 👎 reasons and comments of the questions shown")
    knowledge_entry_id = serializers.IntegerField(source="group.answer_id", allow_null=True)
    document_id = serializers.IntegerField(source="group.document_id", allow_null=True)


class GapAnswerSerializer(serializers.Serializer):
    question = StrictCharField(max_length=10000)
    answer = StrictCharField(max_length=20000)
    category = StrictCharField(required=False, allow_blank=True, max_length=100, default="")
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100, default="")


class GapDocumentSerializer(serializers.Serializer):
    document_id = serializers.IntegerField(min_value=1)
