from django.utils.translation import gettext, gettext_lazy
from django.contrib import admin

from chat.models import Conversation, ConversationDocument, Message


class AttachmentInline(admin.TabularInline):
    model = ConversationDocument
    fields = ("document", "attached_at")
    readonly_fields = ("attached_at",)
    raw_id_fields = ("document",)
    extra = 0


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("role", "status", "content", "error", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    max_num = 0


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "owner", "created_at", "updated_at")
    search_fields = ("title", "owner__username")
    list_select_related = ("owner",)
    raw_id_fields = ("owner",)
    inlines = [AttachmentInline, MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "role", "status", "created_at")
    list_filter = ("role", "status")
    search_fields = ("content",)
    raw_id_fields = ("conversation",)
    readonly_fields = ("created_at", "updated_at")
    actions = ["promote_to_qa_pair"]

    @admin.action(description=gettext_lazy("Promote to Q&A pair (prefilled with the question and this answer)"))
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
