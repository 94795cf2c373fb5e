"""Admin pages that are not a model's list or form: server checks, Q&A import, health, retrieval test.

Each view is mounted by a ModelAdmin's get_urls() behind `admin_site.admin_view` (staff only) and
checks its own permission on top.
"""
from __future__ import annotations

import json
import re

from django.utils.translation import gettext_lazy
from django.apps import apps
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views import View

from core.errors import ApplicationError
from documents.answer_access import answer_document_ids, may_see_answer
from retrieval.admin.forms import EmbedTextForm, KnowledgeImportForm, RetrievalTestForm
from retrieval.ai import AiServerError
from retrieval.admin.dashboard import dashboard
from retrieval.knowledge.importing import MAX_FILE_BYTES, knowledge_entries_import
from retrieval.models import AiServer, KnowledgeEntry
from retrieval.search.scope import scope_for
from retrieval.search import retrieve
from identity.audit import audit_answers, audit_passages
from identity.models import AuditAction, AuditChannel
from retrieval.selectors import retrieval_settings_get
from retrieval.ai.server_check import ai_server_embed_texts, ai_server_test_connection

# Assistant messages keep citations as canonical tags ([S1][S3]); a Q&A answer stands on its own.
CITATION_TAGS = re.compile(r"\s*\[S\d+\]")


class AdminPage(View):
    model_admin = None
    template_name = ""
    title = ""

    def render(self, request, **context):
        admin_site = self.model_admin.admin_site
        base = {**admin_site.each_context(request), "opts": self.model_admin.model._meta, "title": self.title}
        return TemplateResponse(request, self.template_name, {**base, **context})


# --- AI servers --------------------------------------------------------------------------------


class AiServerTestConnection(AdminPage):
    """List the server's models, embed a probe, check the dimension, show the latency (one attempt each)."""

    template_name = "admin/retrieval/aiserver/test_connection.html"
    title = gettext_lazy("Test connection")

    def get(self, request, object_id):
        server = get_object_or_404(AiServer, pk=object_id)
        if not self.model_admin.has_change_permission(request, server):
            raise PermissionDenied
        report = ai_server_test_connection(server)
        return self.render(request, server=server, report=report, original=server)


class AiServerEmbedText(AdminPage):
    """Embed a few texts with the server and show the vectors' size, start, norm and pairwise cosines."""

    template_name = "admin/retrieval/aiserver/embed_text.html"
    title = gettext_lazy("Embed text")

    def dispatch(self, request, object_id):
        self.server = get_object_or_404(AiServer, pk=object_id)
        if not self.model_admin.has_change_permission(request, self.server):
            raise PermissionDenied
        return super().dispatch(request, object_id)

    def get(self, request, object_id):
        return self.render(request, server=self.server, original=self.server, form=EmbedTextForm())

    def post(self, request, object_id):
        form = EmbedTextForm(request.POST)
        result = error = None
        if form.is_valid():
            try:
                result = ai_server_embed_texts(self.server, form.cleaned_data["texts"], kind=form.cleaned_data["kind"])
            except (AiServerError, ApplicationError) as exc:
                error = getattr(exc, "message", str(exc))
        return self.render(request, server=self.server, original=self.server, form=form, result=result, error=error)


# --- Q&A pairs ---------------------------------------------------------------------------------


class KnowledgeImport(AdminPage):
    """Bulk import from CSV or JSON; the report lists every row accepted and rejected."""

    template_name = "admin/retrieval/knowledgeentry/import.html"
    title = gettext_lazy("Import Q&A pairs")

    def dispatch(self, request, *args, **kwargs):
        if not self.model_admin.has_curate_permission(request):
            raise PermissionDenied
        return super().dispatch(request, *args, **kwargs)

    def get(self, request):
        return self.render(request, form=KnowledgeImportForm())

    def post(self, request):
        form = KnowledgeImportForm(request.POST, request.FILES)
        if not form.is_valid():
            return self.render(request, form=form)
        upload = form.cleaned_data["file"]
        # One byte past the limit is enough for the import to refuse the file with its reason.
        report = knowledge_entries_import(data=upload.read(MAX_FILE_BYTES + 1), filename=upload.name,
                                          user=request.user, approve=form.cleaned_data["approve"])
        if report.error:
            messages.error(request, f"{upload.name}: {report.error}")
        else:
            level = messages.SUCCESS if not report.rejected else messages.WARNING
            messages.add_message(request, level, f"{upload.name}: {len(report.accepted)} row(s) accepted, "
                                                 f"{len(report.rejected)} rejected.")
        return self.render(request, form=KnowledgeImportForm(), report=report, filename=upload.name,
                           changelist_url=reverse("admin:retrieval_knowledgeentry_changelist"))


def promotion_prefill(message_id: int, *, user) -> dict | None:
    """Question and answer for a new Q&A pair from an assistant message and the user message before it.

    None when there is no such answer, or when `user` may not see it (`may_see_answer`, the one rule
    for every page that shows an answer to someone other than its asker). The same None for "not
    yours" and "no such message", so ids reveal nothing.
    """
    # By app registry, not import: chat depends on retrieval, never the reverse.
    Message = apps.get_model("chat", "Message")
    answer = Message.objects.filter(pk=message_id, role="assistant").select_related("conversation").first()
    if answer is None or not answer.content.strip():
        return None
    # The one rule (documents.answer_access): the asker, or staff reading others' answers when
    # every document the answer drew on is one they may read.
    drawn_on = answer_document_ids(answer.sources, answer.metadata)
    if not may_see_answer(user, owner_id=answer.conversation.owner_id, document_ids=drawn_on):
        return None
    question = (Message.objects.filter(conversation_id=answer.conversation_id, role="user")
                .filter(created_at__lte=answer.created_at).exclude(pk=answer.pk)
                .order_by("-created_at", "-id").first())
    if question is None:
        return None
    audit_answers(user=user, answers=[(answer.pk, drawn_on)], via=AuditChannel.ADMIN, detail={"page": "Q&A prefill"})
    return {"question": question.content.strip(), "answer": CITATION_TAGS.sub("", answer.content).strip()}


# --- health and retrieval test ---------------------------------------------------------------------


class HealthDashboard(AdminPage):
    """Queue, documents by status, vectors per model, HNSW indexes, recent errors, throughput."""

    template_name = "admin/retrieval/health_dashboard.html"
    title = gettext_lazy("Indexing health")

    def get(self, request):
        context = dashboard()
        if not request.user.has_perm("documents.view_document"):
            context["errors"] = None  # they name users' documents: as private as the document admin
        return self.render(request, **context, test_url=reverse("admin:retrieval_test"))


class RetrievalTest(AdminPage):
    """Run retrieve() — the chat's own retrieval — for a user and a query, and show its segments and trace."""

    template_name = "admin/retrieval/retrieval_test.html"
    title = gettext_lazy("Retrieval test")

    def get(self, request):
        # It shows passages of the chosen user's documents: as much as the document admin shows.
        if not request.user.has_perm("documents.view_document"):
            raise PermissionDenied
        form = RetrievalTestForm(request.GET or None)
        context = {"form": form, "settings": retrieval_settings_get(), "health_url": reverse("admin:retrieval_health")}
        if form.is_bound and form.is_valid():
            data = form.cleaned_data
            try:
                result = retrieve(data["user"], data["q"], scope_for(data["user"], conversation=data.get("conversation")),
                                  category=data.get("category"), subcategory=data.get("subcategory"), k=data.get("k"))
            except (AiServerError, ApplicationError) as exc:
                context["error"] = getattr(exc, "message", str(exc))
            else:
                # Staff read these passages (as the user would get them): the lines name the staff member.
                audit_passages(action=AuditAction.SEARCH, user=request.user, segments=result.segments, via="admin",
                               detail={"as_user": data["user"].get_username()})
                context.update(segments=_annotated(result.segments), trace=result.trace,
                               timings=sorted(result.trace.get("timings_ms", {}).items(), key=lambda kv: kv[0] != "total"),
                               raw=json.dumps({"segments": result.segments, "trace": result.trace}, indent=2,
                                              default=str, ensure_ascii=False))
        return self.render(request, **context)


def _annotated(segments: list[dict]) -> list[dict]:
    """Segments with their position and admin links, everything else exactly as retrieve() gave it."""
    entries = KnowledgeEntry.objects.in_bulk([s["qa_id"] for s in segments if s.get("qa_id")])
    rows = []
    for rank, segment in enumerate(segments, start=1):
        row = {"rank": rank, "segment": segment}
        if segment.get("document_id"):
            row["url"] = reverse("admin:documents_document_change", args=[segment["document_id"]])
        elif segment.get("qa_id") in entries:
            row["url"] = reverse("admin:retrieval_knowledgeentry_change", args=[segment["qa_id"]])
        rows.append(row)
    return rows
