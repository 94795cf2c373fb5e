from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from chat import gaps
from chat.gaps import can_curate
from chat.models import Conversation, ConversationDocument, GapGroup, GapReason, GapStatus, Message, MessageRole
from chat.selectors import conversations_shown_to_staff
from documents.answer_access import answer_document_ids as documents_drawn_on
from identity.audit import audit_answers
from identity.models import AuditChannel
from core.admin import ReadOnlyModelAdmin
from core.errors import ApplicationError
from documents.governance import sources_due
from documents.models import Document


class AttachmentInline(admin.TabularInline):
    model = ConversationDocument
    fields = ("document", "attached_at")
    readonly_fields = ("attached_at",)
    raw_id_fields = ("document",)
    extra = 0


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("role", "status", "content", "error_shown", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    max_num = 0

    @admin.display(description=_("error"))
    def error_shown(self, obj):
        return obj.error_text


def _audit_conversation_read(request, conversation_id, message_ids=None) -> None:
    """Staff opened a conversation or a message in the admin: a line per answer shown (who, which)."""
    if request.method != "GET":
        return
    answers = Message.objects.filter(conversation_id=conversation_id, role=MessageRole.ASSISTANT)
    if message_ids is not None:
        answers = answers.filter(pk__in=message_ids)
    audit_answers(user=request.user, via=AuditChannel.ADMIN, detail={"page": "conversation admin"},
                  answers=[(m.pk, documents_drawn_on(m.sources, m.metadata))
                           for m in answers.only("pk", "sources", "metadata")])


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """Conversations are private: staff holding `chat.view_message` see those whose every answer drew
    only on documents they may read (the rule for answers, documents.answer_access), and each opening
    is audited."""

    list_display = ("id", "title", "owner", "created_at", "updated_at")
    search_fields = ("title", "owner__username")
    list_select_related = ("owner",)
    raw_id_fields = ("owner",)
    inlines = [AttachmentInline, MessageInline]

    def get_queryset(self, request):
        return conversations_shown_to_staff(super().get_queryset(request), user=request.user)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        if response.status_code == 200 and str(object_id).isdigit():
            _audit_conversation_read(request, int(object_id))
        return response


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    """Messages by the same rule as conversations (ConversationAdmin), each opening audited."""

    list_display = ("id", "conversation", "role", "status", "created_at")
    list_filter = ("role", "status")
    search_fields = ("content",)
    raw_id_fields = ("conversation",)
    readonly_fields = ("created_at", "updated_at")
    actions = ["promote_to_qa_pair"]

    def get_queryset(self, request):
        return conversations_shown_to_staff(super().get_queryset(request), user=request.user, field="conversation_id")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        if response.status_code == 200 and str(object_id).isdigit():
            message = Message.objects.filter(pk=int(object_id)).values_list("conversation_id", "role").first()
            if message is not None:
                # A question's page shows the question; its answer's documents say whose it is.
                _audit_conversation_read(request, message[0],
                                         None if message[1] == MessageRole.USER else [int(object_id)])
        return response

    @admin.action(description=_("Promote to Q&A pair (prefilled with the question and this answer)"))
    def promote_to_qa_pair(self, request, queryset):
        from django.contrib import messages
        from django.http import HttpResponseRedirect
        from django.urls import reverse

        answers = list(queryset.filter(role="assistant")[:2])
        if len(answers) != 1:
            self.message_user(request, gettext("Select exactly one assistant message to promote."), messages.WARNING)
            return None
        add = reverse("admin:retrieval_knowledgeentry_add")
        return HttpResponseRedirect(f"{add}?from_message={answers[0].pk}")


# --- the gap inbox -----------------------------------------------------------------------------------

class GapDocumentForm(forms.Form):
    document = forms.ModelChoiceField(queryset=None, label=_("Document"),
                                      help_text=_("A document you may read that answers these questions."))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["document"].queryset = Document.objects.visible_to(user).order_by("title", "pk")


@admin.register(GapGroup)
class GapGroupAdmin(ReadOnlyModelAdmin):
    """The gap inbox: a custom changelist of chat.gaps' groups, with one-click ways to close each."""

    def has_module_permission(self, request):
        return can_curate(request.user)

    def has_view_permission(self, request, obj=None):
        return can_curate(request.user)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<int:group_id>/dismiss/", wrap(self.dismiss_view), name="chat_gapgroup_dismiss"),
            path("<int:group_id>/document/", wrap(self.document_view), name="chat_gapgroup_document"),
        ] + super().get_urls()

    def _page(self, request, template: str, **context):
        base = {**self.admin_site.each_context(request), "opts": self.model._meta}
        return TemplateResponse(request, template, {**base, **context})

    def changelist_view(self, request, extra_context=None):
        if not can_curate(request.user):
            raise PermissionDenied
        status = request.GET.get("status", GapStatus.OPEN)
        if status not in GapStatus.values:
            status = GapStatus.OPEN
        groups = gaps.gap_groups(user=request.user, status=status)
        add = reverse("admin:retrieval_knowledgeentry_add")
        rows = [{"view": view, "answer_url": add + "?" + urlencode(
                    {"question": view.example_question or "", "category": view.category,
                     "subcategory": view.subcategory, "from_gap": view.id})}
                for view in groups]
        return self._page(request, "admin/chat/gap_inbox.html", title=_("Knowledge gaps"), rows=rows,
                          status=status, statuses=GapStatus.choices, reason_labels=dict(GapReason.choices),
                          due=list(sources_due(user=request.user)[:50]), today=timezone.localdate())

    def dismiss_view(self, request, group_id: int):
        if not can_curate(request.user) or request.method != "POST":
            raise PermissionDenied
        try:
            gaps.gap_dismiss(group_id=group_id, user=request.user)
        except ApplicationError as exc:
            self.message_user(request, exc.message, messages.WARNING)
        else:
            self.message_user(request, gettext("Dismissed: the group left the inbox."), messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:chat_gapgroup_changelist"))

    def document_view(self, request, group_id: int):
        if not can_curate(request.user):
            raise PermissionDenied
        views = gaps.gap_groups(user=request.user, group_ids=[group_id])
        if not views:
            raise Http404
        form = GapDocumentForm(request.POST or None, user=request.user)
        if request.method == "POST" and form.is_valid():
            try:
                gaps.gap_link_document(group_id=group_id, user=request.user,
                                       document_id=form.cleaned_data["document"].pk)
            except ApplicationError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, gettext("Linked: the group is closed, pointing at the document."),
                                  messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:chat_gapgroup_changelist"))
        return self._page(request, "admin/chat/gap_document.html", title=_("The answer is in a document"),
                          view=views[0], form=form, library_url=reverse("library"))
