"""Web pages of conversations: the list (served at `/`) and the chat page of one conversation."""
from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Left
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods

from chat import selectors
from chat.exporting import conversation_markdown, conversation_pdf
from chat.models import Message, MessageRole
from chat.serializers import AttachedDocumentSerializer, ConversationSerializer, MessageSerializer
from documents.collections import collection_choices
from documents.models import Document
from documents.storage import uses_object_storage
from core.errors import ApplicationError, http_status

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
@require_http_methods(["GET", "POST"])
def conversation_new(request):
    """The chat page before its first question (which creates the conversation), optionally with documents
    to attach: `?document=<id>` (POST: the older form, redirected here). Nothing is stored until then."""
    if request.method == "POST":
        ids = [v for v in request.POST.getlist("document_id") if _is_id(v)]
        return redirect(reverse("conversation-new") + (f"?{urlencode({'document': ids}, doseq=True)}" if ids else ""))
    ids = [int(v) for v in request.GET.getlist("document") if _is_id(v)]
    attached = Document.objects.visible_to(request.user).filter(pk__in=ids).order_by("id")
    if len(attached) != len(set(ids)):
        raise Http404("No such document.")
    return _chat_page(request, None, attached)


def _is_id(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= 18


def _conversation_or_404(request, conversation_id: int):
    """The user's conversation; 404 for one that is not theirs or does not exist (no telling which)."""
    try:
        return selectors.conversation_get(conversation_id=conversation_id, user=request.user)
    except ApplicationError:
        raise Http404("No such conversation.") from None


@login_required
@require_GET
def chat(request, conversation_id: int):
    """One conversation: its history, attached documents and the composer; answers stream in live."""
    conversation = _conversation_or_404(request, conversation_id)
    return _chat_page(request, conversation, selectors.conversation_documents(conversation=conversation))


@login_required
@require_GET
def conversation_export(request, conversation_id: int):
    """The conversation as a Markdown file, with the sources its answers cited (chat.exporting); of each
    answer and question the version the page shows (?versions=all: every version, marked)."""
    conversation = _conversation_or_404(request, conversation_id)
    response = HttpResponse(conversation_markdown(conversation=conversation, user=request.user,
                                                  all_versions=request.GET.get("versions") == "all"),
                            content_type="text/markdown; charset=utf-8")
    name = slugify(conversation.title)[:60] or f"conversation-{conversation.pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.md"'
    return response


@login_required
@require_GET
def conversation_export_pdf(request, conversation_id: int):
    """The conversation as a PDF, with the sources its answers cited (chat.exporting)."""
    conversation = _conversation_or_404(request, conversation_id)
    try:
        body = conversation_pdf(conversation=conversation, user=request.user,
                                all_versions=request.GET.get("versions") == "all")
    except ApplicationError as exc:  # the fonts are missing: say which, in words
        return HttpResponse(str(exc), status=http_status(exc), content_type="text/plain; charset=utf-8")
    response = HttpResponse(body, content_type="application/pdf")
    name = slugify(conversation.title)[:60] or f"conversation-{conversation.pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.pdf"'
    return response


def _chat_page(request, conversation, attached):
    """The chat page of a conversation, or of one not started yet (None)."""
    messages = selectors.message_list(conversation=conversation) if conversation is not None else []
    searchable = Document.objects.visible_to(request.user).filter(chunk_count__gt=0).count()
    collections = collection_choices(user=request.user)
    data = (ConversationSerializer(conversation).data if conversation is not None
            else {"id": None, "title": "", "collection": None, "category": "", "subcategory": "", "pinned": False})
    return render(request, "chat/chat.html", {
        "nav": "conversations",
        "conversation": conversation,
        "collection_control": _collection_control(conversation, collections),
        "chat": {
            "collections": collections,
            "conversation": data,
            "messages": MessageSerializer(messages, many=True).data,
            "attached": AttachedDocumentSerializer(attached, many=True).data,
            "searchable_count": searchable,
            # A file dropped this big goes straight to the bucket (drop.js, documents/direct_upload.py); null: never.
            "direct_upload_min_size": settings.DIRECT_UPLOAD_MIN_SIZE if uses_object_storage() else None,
        },
    })


def _collection_control(conversation, collections: list[dict]) -> dict:
    """The header's collection picker: the readable collections, which one is chosen, and whether the
    conversation still names one the user no longer reads (shown without its name; asking fails until
    another is chosen)."""
    chosen = conversation.collection.slug if conversation is not None and conversation.collection_id else ""
    return {"collections": collections, "chosen": chosen,
            "lost": bool(chosen) and all(c["slug"] != chosen for c in collections)}
