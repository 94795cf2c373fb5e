"""The document admin with the actions that touch vectors: clear and re-index, re-embed with the default model.

documents/admin.py registers the plain document admin (documents never imports retrieval); this
module replaces that registration with a subclass.
"""
from __future__ import annotations

from django.utils.translation import gettext, gettext_lazy
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Count
from django.template.response import TemplateResponse
from django.utils.html import format_html_join

from documents.admin import DocumentAdmin
from documents.models import Document
from core.errors import ApplicationError
from retrieval.maintenance import clear_plan, document_clear_and_reindex, documents_reembed_default
from retrieval.models import AiServer, ChunkEmbedding, EmbeddingModel

# The plain document admin shows the server's id; here, where AI servers are known, its name.
_SERVER_FIELDS = {"embedding_server_id": "embedding_server"}


class DocumentMaintenanceAdmin(DocumentAdmin):
    actions = [*DocumentAdmin.actions, "clear_and_reindex", "reembed_default"]

    def get_fieldsets(self, request, obj=None):
        fieldsets = [list(f) for f in super().get_fieldsets(request, obj)]
        for fieldset in fieldsets:
            if fieldset[0] == gettext("Chunks and vectors"):
                fields = [_SERVER_FIELDS.get(f, f) for f in fieldset[1]["fields"]]
                fieldset[1] = {**fieldset[1], "fields": tuple(fields) + ("vectors",)}
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        fields = [_SERVER_FIELDS.get(f, f) for f in super().get_readonly_fields(request, obj)]
        return tuple(fields) + ("vectors",)

    @admin.display(description=gettext_lazy("embedding server"))
    def embedding_server(self, obj):
        """The server's name (documents records only its id)."""
        server = AiServer.objects.filter(pk=obj.embedding_server_id).first() if obj.embedding_server_id else None
        return str(server) if server else "—"

    @admin.display(description=gettext_lazy("vectors"))
    def vectors(self, obj):
        counts = list(ChunkEmbedding.objects.filter(document_id=obj.pk).values_list("model").annotate(n=Count("id"))
                      .order_by("model"))
        if not counts:
            return gettext("none")
        names = {m.pk: str(m) for m in EmbeddingModel.objects.filter(pk__in=[model_id for model_id, _ in counts])}
        return format_html_join(", ", gettext("{} of {}"), ((n, names.get(model_id, model_id)) for model_id, n in counts))

    @admin.action(description=gettext_lazy("Clear and re-index the selected documents…"), permissions=["change"])
    def clear_and_reindex(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        if request.POST.get("confirm") == "yes":
            done, refused = 0, []
            for document_id in ids:
                try:
                    document_clear_and_reindex(document_id=document_id)
                    done += 1
                except ApplicationError as exc:
                    refused.append(exc.message)
            if done:
                self.message_user(request, gettext("Cleared %(done)s document(s); their indexing is queued.") % {"done": done}, messages.SUCCESS)
            for reason in refused:
                self.message_user(request, reason, messages.WARNING)
            return None
        plan = clear_plan(ids)
        context = {
            **self.admin_site.each_context(request), "title": "Clear and re-index: are you sure?",
            "opts": self.model._meta, "plan": plan, "queryset": queryset, "ids": ids,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME, "media": self.media,
        }
        return TemplateResponse(request, "admin/documents/document/clear_and_reindex.html", context)

    @admin.action(description=gettext_lazy("Re-embed the selected documents with the default embedding model"),
                  permissions=["change"])
    def reembed_default(self, request, queryset):
        try:
            outcome = documents_reembed_default(document_ids=list(queryset.values_list("id", flat=True)))
        except ApplicationError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        model = f"{outcome.server.embedding_model} ({outcome.server.embedding_dim}d)"
        if outcome.queued:
            self.message_user(request, gettext("Re-embedding %(count)s document(s) with %(model)s from '%(name)s' in the background; their current vectors answer until each one switches.") % {"count": len(outcome.queued), "model": model, "name": outcome.server.name}, messages.SUCCESS)
        if outcome.already:
            self.message_user(request, gettext("%(count)s document(s) already use %(model)s.") % {"count": len(outcome.already), "model": model}, messages.INFO)
        if outcome.not_indexed:
            self.message_user(request, gettext("%(count)s document(s) are not indexed; re-index them instead.") % {"count": len(outcome.not_indexed)}, messages.WARNING)


def register_document_admin(site: admin.AdminSite) -> None:
    if site.is_registered(Document):
        site.unregister(Document)
    site.register(Document, DocumentMaintenanceAdmin)
