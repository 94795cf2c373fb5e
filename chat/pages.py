"""Web pages of conversations: the list (served at `/`) and the chat page of one conversation."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Left
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chat import selectors, services
from chat.models import Message, MessageRole
from chat.serializers import AttachedDocumentSerializer, ConversationSerializer, MessageSerializer
from documents.collections import collection_choices
from documents.models import Document
from core.errors import ApplicationError, NotFound

LIST_LIMIT = 200
PREVIEW_CHARS = 140


@login_required
@require_GET
def conversation_list(request):
    """The user's conversations, most recently active first, with their last question."""
    last_question = (Message.objects.filter(conversation=OuterRef("pk"), role=MessageRole.USER)
                     .order_by("-created_at", "-id")
                     .annotate(preview=Left("content", PREVIEW_CHARS)).values("preview")[:1])
    conversations = (selectors.conversation_list(user=request.user).annotate(last_question=Subquery(last_question))
                     .order_by("-updated_at", "-id")[:LIST_LIMIT])
    rows = [{**ConversationSerializer(c).data, "last_question": " ".join((c.last_question or "").split())}
            for c in conversations]
    return render(request, "chat/conversations.html", {"nav": "conversations", "conversations": rows})


@login_required
@require_POST
def conversation_new(request):
    """Start a conversation (optionally with one document attached) and open it."""
    document_ids = [int(v) for v in request.POST.getlist("document_id") if v.isascii() and v.isdigit() and len(v) <= 18]
    try:
        conversation = services.conversation_create(user=request.user, document_ids=document_ids)
    except NotFound:
        raise Http404("No such document.") from None
    return redirect("chat", conversation_id=conversation.pk)


@login_required
@require_GET
def chat(request, conversation_id: int):
    """One conversation: its history, attached documents and the composer; answers stream in live."""
    try:
        conversation = selectors.conversation_get(conversation_id=conversation_id, user=request.user)
    except ApplicationError:
        raise Http404("No such conversation.") from None
    messages = selectors.message_list(conversation=conversation)
    attached = selectors.conversation_documents(conversation=conversation)
    searchable = Document.objects.visible_to(request.user).filter(chunk_count__gt=0).count()
    collections = collection_choices(user=request.user)
    return render(request, "chat/chat.html", {
        "nav": "conversations",
        "conversation": conversation,
        "collection_control": _collection_control(conversation, collections),
        "chat": {
            "collections": collections,
            "conversation": ConversationSerializer(conversation).data,
            "messages": MessageSerializer(messages, many=True).data,
            "attached": AttachedDocumentSerializer(attached, many=True).data,
            "searchable_count": searchable,
        },
    })


def _collection_control(conversation, collections: list[dict]) -> dict:
    """The header's collection picker: the readable collections, which one is chosen, and whether the
    conversation still names one the user no longer reads (shown without its name; asking fails until
    another is chosen)."""
    chosen = conversation.collection.slug if conversation.collection_id else ""
    return {"collections": collections, "chosen": chosen,
            "lost": bool(chosen) and all(c["slug"] != chosen for c in collections)}
