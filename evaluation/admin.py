"""The evaluation admin: test sets (by hand, from a file, from approved pairs), runs with progress, the
comparison of two runs, the runs-over-time chart, and the settings gate on the retrieval settings page.

The gate replaces retrieval's settings admin with a subclass (registered here, a layer above), so
retrieval knows nothing of test sets.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import Count
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.errors import ApplicationError
from evaluation import charts, selectors, services
from evaluation.models import KIND_APPROVED_PAIR, KIND_LABELS, EvalRun, RunStatus, TestQuestion, TestSet
from identity.audit import audit_answers, audit_record
from identity.models import AuditAction, AuditChannel
from retrieval.admin.registrations import RetrievalSettingsAdmin
from retrieval.models import AiServer, RetrievalSettings
from retrieval.selectors import retrieval_settings_get

# Said wherever a set holds only approved pairs' own questions: what such a set can and cannot tell.
PAIRS_ONLY_NOTE = gettext_lazy(
    "These questions are the approved pairs' own wording, so each finds its own pair almost always: the set "
    "measures only whether pairs are found, not how well the documents answer. Add paraphrases and questions "
    "about the documents (by hand or from a file) to learn that.")


class TestQuestionInline(admin.TabularInline):
    model = TestQuestion
    fields = ("question", "language", "kind", "gold_documents", "gold_passages", "key_facts")
    extra = 0
    show_change_link = True

    def get_queryset(self, request):
        # Gold passages copied from documents the viewer may not read are not shown (nor saved over).
        return selectors.questions_shown_to(super().get_queryset(request), user=request.user)

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name in ("question", "gold_passages", "gold_documents", "key_facts") and field is not None:
            field.widget.attrs.update({"rows": 2, "cols": 30})
        return field


class ImportForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("Questions"),
                           help_text=gettext_lazy("CSV, JSON (SQuAD or a list of questions) or JSONL, as "
                                                  "eval_retrieval reads them (docs/evaluation.md)."))
    passages = forms.FileField(label=gettext_lazy("Passages"), required=False,
                               help_text=gettext_lazy("JSONL of {\"id\", \"text\"}: the texts of the passage ids "
                                                      "named in \"gold\"."))
    replace = forms.BooleanField(label=gettext_lazy("Replace the set's questions"), required=False)


def overrides_form_class():
    """A form with one optional field per setting a run may change on its copy, showing the live values."""
    live = retrieval_settings_get()
    fields: dict = {"label": forms.CharField(label=gettext_lazy("Label"), required=False, max_length=200),
                    "answers": forms.BooleanField(
                        label=gettext_lazy("Answer metrics"), required=False,
                        help_text=gettext_lazy("Also ask the chat server each question and check its answers: "
                                               "citations, key facts, numbers, refusals (no judge model needed).")),
                    "judge": forms.ModelChoiceField(
                        label=gettext_lazy("Judge model (optional)"), required=False,
                        queryset=AiServer.objects.filter(is_active=True).order_by("name"),
                        help_text=gettext_lazy("A chat server that rates each answer's faithfulness to its "
                                               "sources. Its ratings are shown as model-judged."))}
    for name in services.OVERRIDABLE:
        model_field = RetrievalSettings._meta.get_field(name)
        field = model_field.formfield(required=False)
        field.help_text = _("now: %(value)s") % {"value": getattr(live, name)}
        fields[name] = field
    return type("OverridesForm", (forms.Form,), fields)


def overrides_of(cleaned: dict) -> dict:
    """The settings a form gives that differ from the live ones."""
    live = retrieval_settings_get()
    return {name: cleaned[name] for name in services.OVERRIDABLE
            if cleaned.get(name) not in (None, "") and cleaned[name] != getattr(live, name)}


@admin.register(TestSet)
class TestSetAdmin(admin.ModelAdmin):
    list_display = ("name", "collection", "topic", "question_count", "last_run")
    search_fields = ("name", "description")
    inlines = [TestQuestionInline]
    actions = ["run_now", "add_approved_pairs"]
    change_form_template = "admin/evaluation/testset_change_form.html"

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(question_total=Count("questions"))

    @admin.display(description=gettext_lazy("questions"), ordering="question_total")
    def question_count(self, obj):
        return obj.question_total

    @admin.display(description=gettext_lazy("last run"))
    def last_run(self, obj):
        run = obj.runs.first()
        if run is None:
            return "—"
        url = reverse("admin:evaluation_evalrun_change", args=[run.pk])
        return format_html('<a href="{}">{}</a>', url, run.get_status_display())

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [path("<int:pk>/import/", wrap(self.import_view), name="evaluation_testset_import"),
                path("<int:pk>/run/", wrap(self.run_view), name="evaluation_testset_run"),
                path("<int:pk>/chart.svg", wrap(self.chart_view), name="evaluation_testset_chart"),
                path("<int:pk>/from-answers/", wrap(self.from_answers_view), name="evaluation_testset_from_answers"),
                ] + super().get_urls()

    def _set(self, request, pk: int) -> TestSet:
        if not self.has_change_permission(request):
            raise DjangoPermissionDenied
        return get_object_or_404(TestSet, pk=pk)

    def import_view(self, request, pk: int):
        test_set = self._set(request, pk)
        form = ImportForm(request.POST or None, request.FILES or None)
        error = ""
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            passages = form.cleaned_data["passages"]
            try:
                added = services.testset_import(test_set=test_set, filename=upload.name, data=upload.read(),
                                                passages=passages.read() if passages else None,
                                                replace=form.cleaned_data["replace"])
            except ApplicationError as exc:
                error = exc.message
            else:
                self.message_user(request, _("%(count)d questions imported.") % {"count": added}, messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:evaluation_testset_change", args=[test_set.pk]))
        return TemplateResponse(request, "admin/evaluation/import.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "test_set": test_set, "form": form,
            "error": error, "title": _("Import questions into %(name)s") % {"name": test_set.name}})

    def run_view(self, request, pk: int):
        test_set = self._set(request, pk)
        form_class = overrides_form_class()
        form = form_class(request.POST or None)
        error = ""
        if request.method == "POST" and form.is_valid():
            try:
                judge = form.cleaned_data["judge"]
                run = services.run_start(test_set_id=test_set.pk, user=request.user,
                                         overrides=overrides_of(form.cleaned_data), label=form.cleaned_data["label"],
                                         answers=form.cleaned_data["answers"], judge_id=judge.pk if judge else None)
            except ApplicationError as exc:
                error = exc.message
            else:
                return HttpResponseRedirect(reverse("admin:evaluation_evalrun_change", args=[run.pk]))
        return TemplateResponse(request, "admin/evaluation/run_form.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "test_set": test_set, "form": form,
            "error": error, "title": _("Run %(name)s") % {"name": test_set.name}})

    def from_answers_view(self, request, pk: int):
        """Answers users thumbed up, with their cited passages: the curator ticks the ones that become questions."""
        test_set = self._set(request, pk)
        if request.method == "POST":
            chosen = [int(x) for x in request.POST.getlist("message") if x.isascii() and x.isdigit()]
            if not chosen:
                self.message_user(request, _("Tick the answers to add first."), messages.ERROR)
                return HttpResponseRedirect(request.path)
            added = services.testset_add_thumbed_up(test_set=test_set, message_ids=chosen, user=request.user)
            self.message_user(request, _("%(count)d questions added from thumbed-up answers.") % {"count": added},
                              messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:evaluation_testset_change", args=[test_set.pk]))
        candidates = selectors.thumbed_up_candidates(test_set, user=request.user)
        # Staff read users' questions and answers here: a line each in the audit log.
        audit_answers(user=request.user, answers=[(c["message_id"], c["document_ids"]) for c in candidates],
                      via=AuditChannel.ADMIN, detail={"page": "from-answers", "test_set": test_set.pk})
        return TemplateResponse(request, "admin/evaluation/from_answers.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "test_set": test_set,
            "candidates": candidates,
            "title": _("Add thumbed-up answers to %(name)s") % {"name": test_set.name}})

    def chart_view(self, request, pk: int):
        test_set = self._set(request, pk)
        runs = list(test_set.runs.filter(status=RunStatus.FINISHED).order_by("-created_at", "-id")[:30])[::-1]
        points = [{"label": f"#{run.pk}", "overall": run.metrics.get("overall", {})} for run in runs]
        svg = charts.runs_svg(points, title=_("Runs of %(name)s over time") % {"name": test_set.name})
        return HttpResponse(svg, content_type="image/svg+xml")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        _audit_gold_passages(request, TestQuestion.objects.filter(test_set_id=_int(object_id)))
        kinds = set(TestQuestion.objects.filter(test_set_id=_int(object_id)).values_list("kind", flat=True)[:10_000]) \
            if str(object_id).isdigit() else set()
        extra = {"pairs_only_note": PAIRS_ONLY_NOTE if kinds == {KIND_APPROVED_PAIR} else "",
                 "import_url": reverse("admin:evaluation_testset_import", args=[object_id]),
                 "run_url": reverse("admin:evaluation_testset_run", args=[object_id]),
                 "chart_url": reverse("admin:evaluation_testset_chart", args=[object_id]),
                 "from_answers_url": reverse("admin:evaluation_testset_from_answers", args=[object_id]),
                 **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)

    @admin.action(description=gettext_lazy("Run the selected sets on the current settings"))
    def run_now(self, request, queryset):
        for test_set in queryset:
            try:
                services.run_start(test_set_id=test_set.pk, user=request.user)
            except ApplicationError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(request, _("%(name)s: run queued.") % {"name": test_set.name}, messages.SUCCESS)

    @admin.action(description=gettext_lazy("Add the approved pairs' own questions (they measure only whether pairs are found)"))
    def add_approved_pairs(self, request, queryset):
        for test_set in queryset:
            added = services.testset_add_approved_pairs(test_set=test_set, subcategory=test_set.topic)
            self.message_user(request, _("%(name)s: %(count)d questions added from approved pairs.")
                              % {"name": test_set.name, "count": added}, messages.SUCCESS)
        self.message_user(request, PAIRS_ONLY_NOTE, messages.WARNING)


@admin.register(TestQuestion)
class TestQuestionAdmin(admin.ModelAdmin):
    list_display = ("question", "test_set", "language", "kind_shown")
    list_filter = ("test_set", "language", "kind")

    @admin.display(description=gettext_lazy("kind"), ordering="kind")
    def kind_shown(self, obj):
        return KIND_LABELS.get(obj.kind, obj.kind)
    search_fields = ("question", "external_id")

    def get_queryset(self, request):
        return selectors.questions_shown_to(super().get_queryset(request), user=request.user)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        _audit_gold_passages(request, TestQuestion.objects.filter(pk=_int(object_id)))
        return super().change_view(request, object_id, form_url, extra_context)


def _int(value) -> int | None:
    return int(value) if str(value).isascii() and str(value).isdigit() else None


def _audit_gold_passages(request, questions) -> None:
    """Gold passages are copies of document text (from thumbed-up answers or files): showing them to
    staff in the admin is a read, one audit line per page view (the set and how many questions hold them)."""
    if request.method != "GET" or not request.user.has_perm("evaluation.view_testquestion"):
        return
    holding = list(questions.exclude(gold_passages=[]).values_list("pk", "test_set_id"))
    if holding:
        audit_record(action=AuditAction.TEXT, user=request.user, via=AuditChannel.ADMIN,
                     detail={"page": "test set", "test_set": holding[0][1], "questions": [pk for pk, _s in holding]})


def _pct(value) -> str:
    return "—" if value is None else f"{value:.3f}"


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ("__str__", "status", "progress", "hit1", "mrr", "recall", "created_at")
    list_filter = ("test_set", "status")
    actions = ["compare_two"]

    def has_add_permission(self, request):
        return False  # runs start from a test set (its “Run” page) or from the settings check

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=gettext_lazy("progress"))
    def progress(self, obj):
        return f"{obj.questions_done} / {obj.questions_total}"

    @admin.display(description="hit@1")
    def hit1(self, obj):
        return _pct(obj.metrics.get("overall", {}).get("hit@1"))

    @admin.display(description="MRR")
    def mrr(self, obj):
        return _pct(obj.metrics.get("overall", {}).get("mrr"))

    @admin.display(description=gettext_lazy("recall"))
    def recall(self, obj):
        return _pct(obj.metrics.get("overall", {}).get("recall"))

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [path("compare/<int:before>/<int:after>/", wrap(self.compare_view), name="evaluation_compare"),
                path("gate/<str:gate>/", wrap(self.gate_view), name="evaluation_gate"),
                ] + super().get_urls()

    def _context(self, request, **context):
        return {**self.admin_site.each_context(request), "opts": self.model._meta, **context}

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if not self.has_view_permission(request):
            raise DjangoPermissionDenied
        run = get_object_or_404(EvalRun.objects.select_related("test_set", "baseline"), pk=object_id)
        questions = TestQuestion.objects.filter(test_set_id=run.test_set_id)
        shown = selectors.questions_shown_to(questions, user=request.user)
        # A question grown from an answer the viewer may not see is left out of the rows (its text is the user's).
        results = run.results.exclude(question__in=questions.exclude(pk__in=shown.values("pk"))).order_by("id")
        return TemplateResponse(request, "admin/evaluation/run.html", self._context(
            request, run=run, results=results, title=str(run),
            refresh=run.status in (RunStatus.QUEUED, RunStatus.RUNNING),
            compare_url=(reverse("admin:evaluation_compare", args=[run.baseline_id, run.pk])
                         if run.baseline_id else "")))

    @admin.action(description=gettext_lazy("Compare the two selected runs"))
    def compare_two(self, request, queryset):
        runs = list(queryset.order_by("created_at", "id"))
        if len(runs) != 2:
            self.message_user(request, _("Select exactly two runs to compare."), messages.ERROR)
            return None
        return HttpResponseRedirect(reverse("admin:evaluation_compare", args=[runs[0].pk, runs[1].pk]))

    def compare_view(self, request, before: int, after: int):
        if not self.has_view_permission(request):
            raise DjangoPermissionDenied
        first = get_object_or_404(EvalRun.objects.select_related("test_set"), pk=before)
        second = get_object_or_404(EvalRun.objects.select_related("test_set"), pk=after)
        comparison = selectors.runs_compare(first, second)
        return TemplateResponse(request, "admin/evaluation/compare.html", self._context(
            request, before=first, after=second, comparison=comparison,
            title=_("Run #%(a)s compared with run #%(b)s") % {"a": first.pk, "b": second.pk},
            chart_url=reverse("admin:evaluation_testset_chart", args=[second.test_set_id])))

    def gate_view(self, request, gate: str):
        if not self.has_view_permission(request):
            raise DjangoPermissionDenied
        report = selectors.gate_report(gate)
        if not report["pairs"]:
            raise Http404(_("No such settings check."))
        if request.method == "POST" and "_apply" in request.POST:
            if not request.user.has_perm("retrieval.change_retrievalsettings"):
                raise DjangoPermissionDenied
            services.gate_apply(gate=gate)
            self.message_user(request, _("Saved: the next question uses these settings."), messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:retrieval_retrievalsettings_change", args=[1]))
        return TemplateResponse(request, "admin/evaluation/gate.html", self._context(
            request, report=report, refresh=not report["finished"], title=_("Settings check")))


admin.site.unregister(RetrievalSettings)


@admin.register(RetrievalSettings)
class GatedRetrievalSettingsAdmin(RetrievalSettingsAdmin):
    """Retrieval's settings admin with a second button: try the changed search settings on every test set
    (against a copy) before saving them."""

    change_form_template = "admin/evaluation/retrievalsettings_change_form.html"

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        if request.method == "POST" and "_evaluate" in request.POST and object_id:
            obj = self.get_object(request, object_id)
            form = self.get_form(request, obj, change=True)(request.POST, request.FILES, instance=obj)
            if form.is_valid():
                changed = [name for name in form.changed_data if name not in services.OVERRIDABLE]
                overrides = {name: form.cleaned_data[name] for name in form.changed_data
                             if name in services.OVERRIDABLE}
                if changed:
                    self.message_user(request, _("Only search settings can be tried on a copy; not checked: "
                                                 "%(names)s.") % {"names": ", ".join(changed)}, messages.WARNING)
                try:
                    gate = services.gate_start(user=request.user, overrides=overrides)
                except ApplicationError as exc:
                    self.message_user(request, exc.message, messages.ERROR)
                    return HttpResponseRedirect(request.path)
                return HttpResponseRedirect(reverse("admin:evaluation_gate", args=[gate]))
        return super().changeform_view(request, object_id, form_url, extra_context)
