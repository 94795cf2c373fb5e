"""The staff admin for retrieval: AI servers, vector spaces, Q&A pairs, subcategories, settings and tools.

The health dashboard and the retrieval test page hang off the settings admin's URLs
(`/admin/retrieval/retrievalsettings/health/` and `.../test/`) and are linked from the admin index.
"""
from __future__ import annotations

import json

from django.conf import settings
from django.contrib import admin, messages
from django.utils.translation import gettext, gettext_lazy
from django.db.models import Exists, OuterRef
from django.http import HttpResponseRedirect
from django.core.exceptions import PermissionDenied
from django.template.defaultfilters import filesizeformat
from django.urls import path, reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localtime
from django.utils.translation import gettext_lazy as _

from retrieval.admin import views as admin_views
from retrieval.admin.documents import register_document_admin
from retrieval.admin.forms import AiServerForm, KnowledgeEntryForm, RetrievalSettingsForm
from retrieval.knowledge import services as knowledge
from retrieval.models import (
    AiServer,
    AiServerKind,
    EmbeddingModel,
    EmbeddingState,
    KnowledgeDraft,
    KnowledgeEntry,
    RetrievalSettings,
    SubcategoryMapping,
)
from retrieval.knowledge.calibrating import calibration_request, distance_bounds
from retrieval.selectors import retrieval_settings_get
from retrieval.ai.server_check import ai_server_test_connection
from retrieval.ai.servers import url_is_external
from retrieval.vectors import hnsw_indexes

CURATE_PERMISSION = "retrieval.curate_knowledgeentry"

admin.site.site_header = gettext_lazy("ragsite administration")
admin.site.site_title = gettext_lazy("ragsite admin")
admin.site.index_title = gettext_lazy("Knowledge base and indexing")

BADGE_COLOURS = {"ok": "#1f7a3a", "warn": "#9a6700", "bad": "#b42318", "info": "#175cd3", "off": "#667085"}


def badge(text: str, tone: str, title: str = "") -> str:
    return format_html('<span class="rs-badge" title="{}" style="background:{};color:#fff;padding:1px 7px;'
                       'border-radius:9px;font-size:11px;white-space:nowrap">{}</span>',
                       title, BADGE_COLOURS[tone], text)


def can_curate(user) -> bool:
    """Q&A curation: staff holding the curator permission (the `curator` group has it)."""
    return bool(user.is_active and user.is_staff and user.has_perm(CURATE_PERMISSION))


# --- AI servers ------------------------------------------------------------------------------


@admin.register(AiServer)
class AiServerAdmin(admin.ModelAdmin):
    form = AiServerForm
    list_display = ("name", "kind", "base_url", "external", "active", "api_key_hint", "capability_list",
                    "default_for", "links")
    list_filter = ("kind", "is_external", "is_active")
    search_fields = ("name", "base_url")
    actions = ["test_connection"]
    fieldsets = (
        (None, {"fields": ("name", "kind", "is_active", "is_external")}),
        (gettext_lazy("Connection"), {"classes": ("rs-remote",), "fields": ("base_url", "api_key", "clear_api_key",
                                                               "connect_timeout", "read_timeout"),
                        "description": gettext_lazy("OpenAI-compatible and Ollama servers only.")}),
        (gettext_lazy("Embeddings"), {"fields": ("embeddings", "embedding_model", "embedding_dim", "embedding_max_input_tokens")}),
        (gettext_lazy("Chat"), {"classes": ("rs-remote",), "fields": ("chat", "chat_model", "context_window", "tools", "json_answers",
                                                        "temperature", "max_tokens")}),
        (gettext_lazy("Reranking and late chunking"), {"classes": ("rs-remote", "collapse"),
                                         "fields": ("rerank", "rerank_model", "token_embeddings")}),
    )

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<int:object_id>/test/", wrap(admin_views.AiServerTestConnection.as_view(model_admin=self)),
                 name="retrieval_aiserver_test"),
            path("<int:object_id>/embed/", wrap(admin_views.AiServerEmbedText.as_view(model_admin=self)),
                 name="retrieval_aiserver_embed"),
        ] + super().get_urls()

    def get_queryset(self, request):
        defaults = RetrievalSettings.objects.filter(pk=RetrievalSettings.singleton_id)
        return super().get_queryset(request).annotate(
            is_default_embedding=Exists(defaults.filter(default_embedding_server=OuterRef("pk"))),
            is_default_chat=Exists(defaults.filter(default_chat_server=OuterRef("pk"))),
        )

    @admin.display(description=gettext_lazy("external"), boolean=True, ordering="is_external")
    def external(self, obj):
        return obj.is_external

    @admin.display(description=gettext_lazy("active"), boolean=True, ordering="is_active")
    def active(self, obj):
        return obj.is_active

    @admin.display(description=gettext_lazy("capabilities"))
    def capability_list(self, obj):
        caps = obj.capabilities or {}
        names = [key for key in ("embeddings", "chat", "rerank", "token_embeddings") if caps.get(key)]
        if caps.get("embeddings"):
            names[0] = f"embeddings ({obj.embedding_model}, {obj.embedding_dim}d)"
        if caps.get("chat"):
            names[names.index("chat")] = f"chat ({obj.chat_model}{', tool calling' if caps.get('tools') else ''})"
        return ", ".join(names) or "—"

    @admin.display(description=gettext_lazy("default for"))
    def default_for(self, obj):
        roles = [role for role, is_default in (("embeddings", obj.is_default_embedding),
                                                ("chat", obj.is_default_chat)) if is_default]
        return format_html_join(" ", "{}", ((badge(role, "info"),) for role in roles)) if roles else "—"

    @admin.display(description="")
    def links(self, obj):  # not "tools": that is the tool-calling capability's form field
        test = reverse("admin:retrieval_aiserver_test", args=[obj.pk])
        embed = reverse("admin:retrieval_aiserver_embed", args=[obj.pk])
        return format_html('<a href="{}">{}</a> · <a href="{}">{}</a>', test, gettext("Test connection"), embed, gettext("Embed text"))

    @admin.action(description=gettext_lazy("Test connection of the selected servers"), permissions=["change"])
    def test_connection(self, request, queryset):
        for server in queryset:
            report = ai_server_test_connection(server)
            self.message_user(request, report.summary, messages.SUCCESS if report.ok else messages.ERROR)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        rs = retrieval_settings_get()
        extra = {"default_embedding_server": rs.default_embedding_server,
                 "default_chat_server": rs.default_chat_server, **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)

    def changelist_view(self, request, extra_context=None):
        rs = retrieval_settings_get()
        extra = {"default_embedding_server": rs.default_embedding_server,
                 "default_chat_server": rs.default_chat_server,
                 "settings_url": reverse("admin:retrieval_retrievalsettings_change", args=[rs.pk]),
                 **(extra_context or {})}
        return super().changelist_view(request, extra)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if obj.kind != AiServerKind.BUILTIN and obj.base_url and not obj.is_external and url_is_external(obj.base_url):
            self.message_user(request, gettext("%(base_url)s looks like an address outside the organisation, but '%(name)s' is not marked external.") % {"base_url": obj.base_url, "name": obj.name}, messages.WARNING)


# --- vector spaces ----------------------------------------------------------------------------


@admin.register(EmbeddingModel)
class EmbeddingModelAdmin(admin.ModelAdmin):
    list_display = ("name", "dim", "index_name", "index_size", "distances", "created_at")
    readonly_fields = ("name", "dim", "created_at", "distances", "calibration_details")
    fields = ("name", "dim", "created_at", "distances", "direct_distance_override", "qa_distance_override",
              "doc_distance_override", "calibration_details")
    actions = ["calibrate"]

    @admin.display(description=_("Distances in use"))
    def distances(self, obj):
        """The bounds retrieval uses for this model, and where each comes from (calibration, override, setting)."""
        bounds = distance_bounds(obj, retrieval_settings_get())
        origin = {"calibration": _("calibrated"), "override": _("staff override"), "setting": _("not calibrated yet: setting")}
        return format_html_join(
            ", ", "{}: {} ({})", [(label, f"{getattr(bounds, name):.4f}", origin[bounds.source[name]])
                                  for name, label in (("direct", _("direct answer")), ("qa", _("approved pairs")),
                                                      ("doc", _("passages")))])

    @admin.display(description=_("Calibration"))
    def calibration_details(self, obj):
        if not obj.calibration:
            return _("Not calibrated yet: it is measured when the model embeds its first approved pair, or with "
                     "the action “Calibrate again” (manage.py calibrate_embeddings).")
        return format_html("<pre>{}</pre>", json.dumps(obj.calibration, indent=2, ensure_ascii=False))

    @admin.action(description=_("Calibrate again (in the background)"))
    def calibrate(self, request, queryset):
        for model in queryset:
            calibration_request(model_id=model.pk)
        self.message_user(request, _("Calibration queued for %(count)d models.") % {"count": queryset.count()})

    @admin.display(description=gettext_lazy("HNSW index size"))
    def index_size(self, obj):
        size = next((index["bytes"] for index in hnsw_indexes() if index["name"] == obj.index_name), None)
        return filesizeformat(size) if size is not None else gettext("missing")

    def has_add_permission(self, request):
        return False  # created with their HNSW index when a server is first used


# --- approved Q&A pairs -------------------------------------------------------------------------


class ApprovedFilter(admin.SimpleListFilter):
    title = gettext_lazy("approval")
    parameter_name = "approved"

    def lookups(self, request, model_admin):
        return [("yes", gettext("Approved")), ("no", gettext("Waiting for approval"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(approved_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(approved_at__isnull=True)
        return queryset


@admin.register(KnowledgeEntry)
class KnowledgeEntryAdmin(admin.ModelAdmin):
    """Every staff member may look; changing, approving, retiring and importing need the curator permission."""

    form = KnowledgeEntryForm
    list_display = ("question_short", "category", "subcategory", "live", "approved", "embedding")
    list_display_links = ("question_short",)
    list_filter = ("category", "subcategory", "is_active", ApprovedFilter, "embedding_state")
    list_select_related = ("approved_by",)
    search_fields = ("question", "answer", "category", "subcategory")
    readonly_fields = ("approved_by", "approved_at", "embedding_state", "embedding_error", "created_at", "updated_at")
    actions = ["approve_entries", "retire_entries", "recompute_embeddings"]

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [path("import/", wrap(admin_views.KnowledgeImport.as_view(model_admin=self)),
                     name="retrieval_knowledgeentry_import")] + super().get_urls()

    # permissions
    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request):
        return can_curate(request.user)

    def has_change_permission(self, request, obj=None):
        return can_curate(request.user)

    def has_delete_permission(self, request, obj=None):
        return can_curate(request.user)

    def has_curate_permission(self, request):
        return can_curate(request.user)

    # list columns
    @admin.display(description=gettext_lazy("question"), ordering="question")
    def question_short(self, obj):
        text = obj.question if len(obj.question) <= 120 else obj.question[:119] + "…"
        return format_html('<span style="display:inline-block;min-width:18em">{}</span>', text)

    @admin.display(description=gettext_lazy("approved"), ordering="approved_at")
    def approved(self, obj):
        if obj.approved_at is None:
            return "—"
        when = date_format(localtime(obj.approved_at), "Y-m-d H:i")
        who = obj.approved_by.get_username() if obj.approved_by else "?"
        return format_html('<span style="white-space:nowrap">{}</span><br><span class="quiet">{}</span>', when,
                           gettext("by %(name)s") % {"name": who})

    @admin.display(description=gettext_lazy("live"))
    def live(self, obj):
        if not obj.is_active:
            return badge(gettext("retired"), "off")
        if obj.approved_at is None:
            return badge(gettext("awaiting approval"), "warn")
        return badge(gettext("live"), "ok")

    @admin.display(description=gettext_lazy("embedding"), ordering="embedding_state")
    def embedding(self, obj):
        tone = {EmbeddingState.READY: "ok", EmbeddingState.PENDING: "info", EmbeddingState.FAILED: "bad"}
        return badge(obj.get_embedding_state_display(), tone.get(obj.embedding_state, "off"), obj.embedding_error)

    # forms
    def get_fields(self, request, obj=None):
        fields = ["question", "answer", "category", "subcategory", "is_active"]
        if (obj is None or obj.approved_at is None) and can_curate(request.user):
            fields.append("approve")
            if obj is None:
                fields.append("from_gap")
        return fields + list(self.readonly_fields)

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        message_id = request.GET.get("from_message", "")
        if message_id:
            prefill = (admin_views.promotion_prefill(int(message_id), user=request.user)
                       if message_id.isascii() and message_id.isdigit() else None)
            if prefill is None:
                self.message_user(request, gettext(
                    "Message %(id)s is not an answer you may read with a question before it; nothing was "
                    "prefilled.") % {"id": message_id[:20]}, messages.WARNING)
            else:
                initial.update(prefill)
                self.message_user(request, gettext("Prefilled from the conversation: check and edit the "
                                                   "answer before saving."), messages.INFO)
        return initial

    def save_model(self, request, obj, form, change):
        # Through the one write path (retrieval.knowledge.services), as /api/knowledge/ does: the same
        # rule decides whether the question is embedded again (only the question is embedded).
        fields = {name: form.cleaned_data[name] for name in knowledge.EDITABLE_FIELDS if name in form.cleaned_data}
        approve = bool(form.cleaned_data.get("approve"))
        if change:
            entry = knowledge.knowledge_entry_update(entry_id=obj.pk, user=request.user, approve=approve, **fields)
        else:
            entry = knowledge.knowledge_entry_create(user=request.user, approved=approve, **fields)
            obj.pk, obj._state.adding = entry.pk, False
        obj.refresh_from_db()  # the admin logs and redirects with the object it handed over
        if form.cleaned_data.get("from_gap") and entry.approved_at is not None:
            knowledge.gap_answered.send(sender=KnowledgeEntry, group_id=form.cleaned_data["from_gap"],
                                        entry_id=entry.pk, user=request.user)
        if entry.embedding_state == EmbeddingState.PENDING:
            self.message_user(request, gettext("Its embedding is being computed in the background; the "
                                       "“embedding” column shows when it is ready."), messages.INFO)

    # actions
    @admin.action(description=gettext_lazy("Approve the selected Q&A pairs (records you and now)"), permissions=["curate"])
    def approve_entries(self, request, queryset):
        entries = list(queryset)
        for entry in entries:
            knowledge.knowledge_entry_approve(entry=entry, user=request.user)
        self.message_user(request, gettext("Approved %(count)s Q&A pair(s); they answer questions now.") % {"count": len(entries)}, messages.SUCCESS)

    @admin.action(description=gettext_lazy("Retire the selected Q&A pairs (they stop answering)"), permissions=["curate"])
    def retire_entries(self, request, queryset):
        entries = list(queryset)
        for entry in entries:
            knowledge.knowledge_entry_retire(entry=entry)
        self.message_user(request, gettext("Retired %(count)s Q&A pair(s).") % {"count": len(entries)}, messages.SUCCESS)

    @admin.action(description=gettext_lazy("Recompute the embeddings of the selected Q&A pairs"), permissions=["curate"])
    def recompute_embeddings(self, request, queryset):
        queued = knowledge.knowledge_entries_reembed(entry_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, gettext("Queued %(queued)s embedding(s) with the default embedding model.") % {"queued": queued},
                          messages.SUCCESS)

    def changelist_view(self, request, extra_context=None):
        extra = {"can_curate": can_curate(request.user), **(extra_context or {})}
        return super().changelist_view(request, extra)


# --- subcategory mapping ----------------------------------------------------------------------


@admin.register(SubcategoryMapping)
class SubcategoryMappingAdmin(admin.ModelAdmin):
    """Specific → general; `SubcategoryMapping.clean()` refuses self-references and cycles."""

    list_display = ("subcategory", "general_subcategory")
    search_fields = ("subcategory", "general_subcategory")


# --- retrieval settings (one row) and the tool pages -------------------------------------------

CHUNKING_FIELDS = ("chunking_strategy", "chunk_size", "chunk_overlap", "fixed_chunk_size", "fixed_chunk_overlap",
                   "tokenizer", "max_chunks_per_document")



@admin.register(KnowledgeDraft)
class KnowledgeDraftAdmin(KnowledgeEntryAdmin):
    """The Q&A pairs waiting for approval (drafts), apart from the approved ones: the same rows and actions."""

    list_filter = ("category", "subcategory", "is_active", "embedding_state")

    def get_urls(self):
        return admin.ModelAdmin.get_urls(self)  # the import page stays with the approved pairs

    def get_queryset(self, request):
        return super().get_queryset(request).filter(approved_at__isnull=True)

@admin.register(RetrievalSettings)
class RetrievalSettingsAdmin(admin.ModelAdmin):
    form = RetrievalSettingsForm
    list_display = ("__str__", "rag_enabled", "external_ai_disabled", "default_embedding_server", "default_chat_server",
                    "chunking_strategy", "final_top_n", "updated_at")
    fieldsets = (  # the persona first: it is what a curator changes most; the engineering settings follow
        (gettext_lazy("Persona"), {"fields": ("persona",),
                     "description": gettext_lazy("The start of the system prompt. ragsite always appends its fixed rules: the "
                                    "passages are untrusted data, answer from them, cite their tags. "
                                    "“Preview the prompt” below shows the whole prompt for a sample question.")}),
        (gettext_lazy("Switches"), {"fields": ("rag_enabled", "external_ai_disabled")}),
        (gettext_lazy("Default servers"), {"fields": ("default_embedding_server", "default_chat_server"),
                             "description": gettext_lazy("New and re-indexed documents and Q&A pairs use the default embedding "
                                            "server; existing documents keep their model until re-embedded.")}),
        (gettext_lazy("Chunking (applies when a document is indexed or re-indexed)"),
         {"fields": CHUNKING_FIELDS + ("embed_batch_size",)}),
        (gettext_lazy("Search"), {"fields": ("vector_top_k", "fts_top_k", "vector_weight", "fts_weight", "final_top_n", "fusion",
                               "rrf_k", "fts_ranking", "fts_match_budget")}),
        (gettext_lazy("Thresholds and limits"), {"fields": ("qa_distance_threshold", "qa_limit", "doc_distance_threshold",
                                              "doc_limit")}),
        (gettext_lazy("Reranking (optional second stage)"), {"fields": ("rerank_server", "rerank_candidates", "rerank_timeout")}),
        (gettext_lazy("Chat"), {"fields": ("chat_mode", "agent_max_searches", "no_passages_policy", "temperature", "max_tokens")}),
    )

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("health/", wrap(admin_views.HealthDashboard.as_view(model_admin=self)), name="retrieval_health"),
            path("test/", wrap(admin_views.RetrievalTest.as_view(model_admin=self)), name="retrieval_test"),
        ] + super().get_urls()

    def has_add_permission(self, request):
        return False  # the row exists from the first migration on; retrieval_settings_get() recreates it

    def changelist_view(self, request, extra_context=None):
        """One row only: its list would be a click in the way, so the settings open directly."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        row = retrieval_settings_get()
        return HttpResponseRedirect(reverse("admin:retrieval_retrievalsettings_change", args=[row.pk]))

    def has_delete_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        retrieval_settings_get()  # the row is recreated with defaults if it was ever lost
        return super().get_queryset(request)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        if settings.EXTERNAL_AI_DISABLED and "external_ai_disabled" in form.base_fields:
            form.base_fields["external_ai_disabled"].help_text = gettext(
                "Forced on by the EXTERNAL_AI_DISABLED environment variable, whatever is ticked here.")
        return form

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # retrieval_settings_get() reads the row on every use: the web server and every worker see it now.
        self.message_user(request, gettext("Saved: the next question uses these settings."), messages.SUCCESS)
        changed_chunking = [form.fields[name].label for name in CHUNKING_FIELDS if name in form.changed_data]
        if changed_chunking:
            self.message_user(request, gettext("Chunking changed (%(changes)s): it applies to documents indexed from now on. Existing documents keep their chunks until re-indexed (Documents → action “Re-index”).") % {"changes": ', '.join(str(c).lower() for c in changed_chunking)}, messages.WARNING)
        if "default_embedding_server" in form.changed_data:
            self.message_user(request, gettext("Default embedding server changed: existing documents keep answering with "
                                       "their own model until re-embedded (Documents → action “Re-embed with the "
                                       "default model”), and Q&A pairs need “Recompute the embeddings”."),
                              messages.WARNING)

    def response_change(self, request, obj):
        # One row: stay on it after saving instead of going to a list of one.
        if "_continue" not in request.POST and "_save" in request.POST:
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = {"health_url": reverse("admin:retrieval_health"), "test_url": reverse("admin:retrieval_test"),
                 **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)


register_document_admin(admin.site)
