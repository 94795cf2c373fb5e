"""The conversations API: conversations, attached documents, messages, retry, retrieval details."""
from __future__ import annotations

from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from django.utils.translation import gettext
from rest_framework import generics, permissions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import gaps, selectors, services
from chat.gaps import can_curate
from chat.models import ConversationOrigin, GapStatus
from chat.serializers import (
    AttachSerializer,
    FeedbackCreateSerializer,
    FeedbackListSerializer,
    FeedbackSerializer,
    GapAnswerSerializer,
    GapDocumentSerializer,
    GapGroupSerializer,
    ConversationCreateSerializer,
    ConversationSerializer,
    ConversationUpdateSerializer,
    MessageCreateSerializer,
    MessagePairSerializer,
    MessageRetrievalSerializer,
    MessageSerializer,
)
from documents.serializers import DocumentSerializer
from core.errors import ApplicationError
from core.throttles import QuestionThrottle


_list_parameters = [
    OpenApiParameter("q", str, required=False, description="Only conversations whose title or messages contain this"),
    OpenApiParameter("origin", str, required=False, enum=["web", "api", "mcp"],
                     description="Only conversations started there"),
]


class ConversationListView(generics.ListAPIView):
    serializer_class = ConversationSerializer

    def get_throttles(self):
        # Starting a conversation with its first question is asking (THROTTLE_QUESTIONS).
        asking = self.request.method == "POST" and isinstance(self.request.data, dict) and "question" in self.request.data
        return [QuestionThrottle()] if asking else []

    def get_queryset(self):
        params = self.request.query_params
        if params.get("origin", "") not in ("", *ConversationOrigin.values):
            raise ApplicationError(gettext("origin is one of %(origins)s.") % {
                "origins": ", ".join(ConversationOrigin.values)}, code="invalid")
        return selectors.conversation_search(user=self.request.user, q=params.get("q", ""),
                                             origin=params.get("origin", ""))

    @extend_schema(parameters=_list_parameters)
    def get(self, request, *args, **kwargs):
        """Your conversations, pinned first, then by last activity; ?q= searches titles and messages."""
        return super().get(request, *args, **kwargs)

    @extend_schema(request=ConversationCreateSerializer, responses={201: ConversationSerializer})
    def post(self, request):
        """Start a conversation with its first `question` (the answer is queued; follow it as after POST
        …/messages/), optionally with documents attached (its questions then search only those). Without
        a question the conversation stays empty until one is asked."""
        form = ConversationCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        # Asked from the chat page (its session) or by an API client (a token).
        origin = "web" if isinstance(request.successful_authenticator, SessionAuthentication) else "api"
        question = data.pop("question", None)
        if question is None:
            data.pop("metadata", None)
            conversation = services.conversation_create(user=request.user, origin=origin, **data)
            pair = None
        else:
            conversation, *pair = services.conversation_start(user=request.user, question=question, origin=origin,
                                                              **data)
        conversation = selectors.conversation_get(conversation_id=conversation.pk, user=request.user)
        body = ConversationSerializer(conversation).data
        if pair:
            body.update(_asked(request, *pair))
        return Response(body, status=status.HTTP_201_CREATED)


def _asked(request, question, answer) -> dict:
    """The question and its pending answer, and where to follow the answer."""
    base = f"/api/conversations/{answer.conversation_id}/messages/{answer.pk}"
    return {
        "user_message": MessageSerializer(question).data,
        "assistant_message": MessageSerializer(answer).data,
        "stream_url": request.build_absolute_uri(f"{base}/stream/"),
        "websocket_url": f"/ws/conversations/{answer.conversation_id}/",
    }


class ConversationDetailView(APIView):
    @extend_schema(responses=ConversationSerializer)
    def get(self, request, conversation_id):
        conversation = selectors.conversation_get(conversation_id=conversation_id, user=request.user)
        return Response(ConversationSerializer(conversation).data)

    @extend_schema(request=ConversationUpdateSerializer, responses=ConversationSerializer)
    def patch(self, request, conversation_id):
        form = ConversationUpdateSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        if form.validated_data:  # PATCH: what is not sent (title, collection) stays as it is
            services.conversation_update(conversation_id=conversation_id, user=request.user, **form.validated_data)
        conversation = selectors.conversation_get(conversation_id=conversation_id, user=request.user)
        return Response(ConversationSerializer(conversation).data)

    @extend_schema(responses={204: None})
    def delete(self, request, conversation_id):
        services.conversation_delete(conversation_id=conversation_id, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConversationDocumentsView(APIView):
    @extend_schema(responses=DocumentSerializer(many=True))
    def get(self, request, conversation_id):
        """The attached documents: full document rows (as GET /api/documents/{id}/), in the order attached."""
        conversation = selectors.conversation_get(conversation_id=conversation_id, user=request.user)
        documents = selectors.conversation_documents(conversation=conversation)
        return Response(DocumentSerializer(documents, many=True).data)

    @extend_schema(request=AttachSerializer, responses={201: DocumentSerializer, 200: DocumentSerializer})
    def post(self, request, conversation_id):
        """Attach one of your documents (201; 200 when it already was)."""
        form = AttachSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        document, created = services.conversation_document_attach(
            conversation_id=conversation_id, document_id=form.validated_data["document_id"], user=request.user)
        return Response(DocumentSerializer(document).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ConversationDocumentDetailView(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request, conversation_id, document_id):
        services.conversation_document_detach(conversation_id=conversation_id, document_id=document_id,
                                              user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MessageListView(generics.ListAPIView):
    serializer_class = MessageSerializer

    def get_throttles(self):
        # Asking is limited per user (THROTTLE_QUESTIONS); reading the messages is not.
        return [QuestionThrottle()] if self.request.method == "POST" else []

    def get_queryset(self):
        conversation = selectors.conversation_get(conversation_id=self.kwargs["conversation_id"], user=self.request.user)
        return selectors.message_list(conversation=conversation)

    @extend_schema(request=MessageCreateSerializer, responses={201: MessagePairSerializer})
    def post(self, request, conversation_id):
        """Ask: the question and a pending answer at once; follow the answer over SSE or the WebSocket."""
        form = MessageCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        origin = "web" if isinstance(request.successful_authenticator, SessionAuthentication) else "api"
        question, answer = services.message_send(conversation_id=conversation_id, user=request.user, origin=origin,
                                                 **form.validated_data)
        return Response(_asked(request, question, answer), status=status.HTTP_201_CREATED)


class MessageDetailView(APIView):
    @extend_schema(responses=MessageSerializer)
    def get(self, request, conversation_id, message_id):
        """One message with everything it keeps, retrieved segments included."""
        message = selectors.message_get(conversation_id=conversation_id, message_id=message_id, user=request.user)
        message = selectors.feedback_attach(message=message, user=request.user)
        return Response(MessageSerializer(message, context={"segments": True}).data)


class MessageRetryView(APIView):
    @extend_schema(request=None, responses={202: MessageSerializer})
    def post(self, request, conversation_id, message_id):
        """Answer a failed message again, or one that waited for a document being indexed."""
        message = services.message_retry(conversation_id=conversation_id, message_id=message_id, user=request.user)
        message = selectors.feedback_attach(message=message, user=request.user)
        return Response(MessageSerializer(message).data, status=status.HTTP_202_ACCEPTED)


class MessageStopView(APIView):
    @extend_schema(request=None, responses={202: MessageSerializer})
    def post(self, request, conversation_id, message_id):
        """Stop an answer: a queued one at once; one being written keeps what it wrote and ends as done with
        metadata.stopped (follow it live). A finished answer is returned unchanged."""
        message = services.message_stop(conversation_id=conversation_id, message_id=message_id, user=request.user)
        message = selectors.feedback_attach(message=message, user=request.user)
        return Response(MessageSerializer(message).data, status=status.HTTP_202_ACCEPTED)


class MessageRegenerateView(APIView):
    def get_throttles(self):
        return [QuestionThrottle()]  # a new answer costs what a question does (THROTTLE_QUESTIONS)

    @extend_schema(request=None, responses={202: MessageSerializer})
    def post(self, request, conversation_id, message_id):
        """A new version of the last answer, kept beside the earlier ones (same metadata.question_id; the new
        one has metadata.version_of): pending, follow it live. Only the last question's answer (409 else)."""
        message = services.message_regenerate(conversation_id=conversation_id, message_id=message_id,
                                              user=request.user)
        return Response(MessageSerializer(message).data, status=status.HTTP_202_ACCEPTED)


class MessageChooseView(APIView):
    @extend_schema(request=None, responses={200: MessageSerializer})
    def post(self, request, conversation_id, message_id):
        """Show this version of an answer from now on (metadata.chosen; the others lose it), after a reload too."""
        message = services.answer_version_choose(conversation_id=conversation_id, message_id=message_id,
                                                 user=request.user)
        return Response(MessageSerializer(message).data)


class MessageRetrievalView(APIView):
    @extend_schema(responses=MessageRetrievalSerializer)
    def get(self, request, conversation_id, message_id):
        """What the answer was built from: retrieved segments, the retrieval trace (agentic: each search), usage."""
        message = selectors.message_get(conversation_id=conversation_id, message_id=message_id, user=request.user)
        metadata = message.metadata or {}
        return Response({
            "message_id": message.pk,
            "status": message.status,
            "mode": metadata.get("mode"),
            "retrieved_segments": metadata.get("retrieved_segments", []),
            "context_sources": metadata.get("context_sources", []),
            "retrieval": metadata.get("retrieval"),
            "agent": metadata.get("agent"),
            "agentic_fallback": metadata.get("agentic_fallback"),
            "waiting_for_documents": metadata.get("waiting_for_documents"),
            "llm_usage": metadata.get("llm_usage"),
            "timings": metadata.get("timings", {}),
        })


class MessageFeedbackView(APIView):
    @extend_schema(request=FeedbackCreateSerializer, responses={201: FeedbackSerializer, 200: FeedbackSerializer})
    def post(self, request, conversation_id, message_id):
        """Rate one of your finished answers 👍/👎 (or, with source_id, one of its cited sources): 201 when new,
        200 when it replaced your earlier rating. A reason (wrong, outdated, incomplete, wrong_source, other)
        goes with 'down' only."""
        form = FeedbackCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        feedback, created = services.feedback_give(conversation_id=conversation_id, message_id=message_id,
                                                   user=request.user, **form.validated_data)
        return Response(FeedbackSerializer(feedback).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(parameters=[OpenApiParameter("source_id", str, required=False, pattern=r"^[^\x00]*$",
                                                description="Withdraw your rating of this cited source (S1…)")],
                   responses={204: None})
    def delete(self, request, conversation_id, message_id):
        """Withdraw your rating of the answer (or, with ?source_id=, of one of its sources)."""
        services.feedback_withdraw(conversation_id=conversation_id, message_id=message_id, user=request.user,
                                   source_id=request.query_params.get("source_id"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class FeedbackListView(generics.ListAPIView):
    """Your ratings of answers and sources, newest first (withdraw one with DELETE on the message's feedback)."""

    serializer_class = FeedbackListSerializer

    def get_queryset(self):
        return selectors.feedback_list(user=self.request.user)


# --- the gap inbox (curators) -------------------------------------------------------------------------


class Curates(permissions.BasePermission):
    """Staff holding the Q&A curator permission: they see the inbox's question texts (chat.gaps' rules)."""

    def has_permission(self, request, view):
        return can_curate(request.user)


class GapListView(generics.ListAPIView):
    """Knowledge gaps: badly answered questions grouped by meaning, latest first (paginated)."""

    permission_classes = [Curates]
    serializer_class = GapGroupSerializer

    def get_queryset(self):
        wanted = self.request.query_params.get("status", GapStatus.OPEN)
        if wanted not in GapStatus.values:
            raise ApplicationError(gettext("Unknown status %(status)s.") % {"status": wanted[:30]}, code="invalid_status")
        return gaps.gap_groups(user=self.request.user, status=wanted)

    @extend_schema(parameters=[OpenApiParameter("status", str, required=False, enum=GapStatus.values,
                                                description="open (default), answered, document or dismissed")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class GapAnswerView(APIView):
    permission_classes = [Curates]

    @extend_schema(request=GapAnswerSerializer, responses={201: None})
    def post(self, request, group_id):
        """Create and approve the Q&A pair answering the group, and close it."""
        form = GapAnswerSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        entry = gaps.gap_answer(group_id=group_id, user=request.user, **form.validated_data)
        return Response({"id": group_id, "status": GapStatus.ANSWERED, "knowledge_entry_id": entry.pk},
                        status=status.HTTP_201_CREATED)


class GapDismissView(APIView):
    permission_classes = [Curates]

    @extend_schema(request=None, responses={200: None})
    def post(self, request, group_id):
        """Dismiss the group: it leaves the inbox."""
        group = gaps.gap_dismiss(group_id=group_id, user=request.user)
        return Response({"id": group.pk, "status": group.status})


class GapDocumentView(APIView):
    permission_classes = [Curates]

    @extend_schema(request=GapDocumentSerializer, responses={200: None})
    def post(self, request, group_id):
        """The answer is in a document you may read: link it and close the group."""
        form = GapDocumentSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        group = gaps.gap_link_document(group_id=group_id, user=request.user, **form.validated_data)
        return Response({"id": group.pk, "status": group.status, "document_id": group.document_id})
