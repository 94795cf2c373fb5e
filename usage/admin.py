"""The usage admin: the daily report with filters, two charts and a CSV export; quotas per group."""
from __future__ import annotations

from django import forms
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.admin import ReadOnlyModelAdmin
from core.charts import lines_svg
from core.errors import ApplicationError
from usage.models import ANSWER_MODES, GroupQuota, UsageDay
from usage.selectors import usage_csv, usage_curated_collections, usage_filter_parse, usage_report, usage_sees_all


@admin.register(GroupQuota)
class GroupQuotaAdmin(admin.ModelAdmin):
    list_display = ("group", "questions_per_day", "tokens_per_month", "pages_per_day")
    search_fields = ("group__name",)
    autocomplete_fields = ("group",)


class UsageFilterForm(forms.Form):
    group = forms.ModelChoiceField(Group.objects.order_by("name"), required=False, label=gettext_lazy("Group"))
    user = forms.CharField(required=False, label=gettext_lazy("User"),
                           help_text=gettext_lazy("User name or id"))
    collection = forms.ChoiceField(required=False, label=gettext_lazy("Collection"))
    start = forms.DateField(required=False, label=gettext_lazy("From"), widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, label=gettext_lazy("To"), widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, viewer=None, **kwargs):
        super().__init__(*args, **kwargs)
        collections = apps.get_model("documents", "Collection").objects.order_by("name")
        if viewer is not None and not usage_sees_all(viewer):
            collections = collections.filter(pk__in=usage_curated_collections(viewer))
        collections = collections.values_list("pk", "name")
        self.fields["collection"].choices = [("", "—"), *((str(pk), name) for pk, name in collections)]


def _params(request) -> dict:
    """The report's query parameters (the API's names) from the admin's filter form."""
    get = request.GET
    return {"group": get.get("group", ""), "user": get.get("user", ""), "collection": get.get("collection", ""),
            "from": get.get("start", ""), "to": get.get("end", "")}


@admin.register(UsageDay)
class UsageDayAdmin(ReadOnlyModelAdmin):
    """Read-only: the changelist is the report (rows are written only by usage/recorder.py). Curators
    without the model permission read their collections' usage (the collection rule, documents/collections)."""

    def has_view_permission(self, request, obj=None):
        user = request.user
        return usage_sees_all(user) or bool(user.is_active and user.is_staff and usage_curated_collections(user))

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [path("chart.svg", wrap(self.chart_view), name="usage_usageday_chart"),
                path("export.csv", wrap(self.csv_view), name="usage_usageday_csv"),
                ] + super().get_urls()

    def _report(self, request) -> dict:
        if not self.has_view_permission(request):
            raise DjangoPermissionDenied
        return usage_report(usage_filter_parse(_params(request), viewer=request.user))

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            raise DjangoPermissionDenied
        form = UsageFilterForm(request.GET or None, viewer=request.user)
        error = report = None
        try:
            report = self._report(request)
        except ApplicationError as exc:
            error = exc.message
        query = urlencode({k: v for k, v in request.GET.items() if v})
        return TemplateResponse(request, "admin/usage/report.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": _("Usage"),
            "form": form, "error": error, "report": report,
            "modes": [UsageDay._meta.get_field(f"answers_{mode}").verbose_name for mode in ANSWER_MODES],
            "chart_url": f"{reverse('admin:usage_usageday_chart')}?{query}",
            "rates_url": f"{reverse('admin:usage_usageday_chart')}?{query}{'&' if query else ''}chart=rates",
            "csv_url": f"{reverse('admin:usage_usageday_csv')}?{query}", **(extra_context or {})})

    def chart_view(self, request):
        try:
            report = self._report(request)
        except ApplicationError as exc:
            return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
        days = report["days"]
        labels = [day["date"][5:] for day in days]
        if request.GET.get("chart") == "rates":
            svg = lines_svg(labels, [(_("unanswered rate"), "#b42318", [d["unanswered_rate"] for d in days])],
                            title=_("Unanswered rate per day"), y_max=1.0)
        else:
            svg = lines_svg(labels, [
                (_("questions"), "#175cd3", [float(d["questions"]) for d in days]),
                (_("answers"), "#1f7a3a", [float(d["answers_total"]) for d in days]),
                (_("cited documents"), "#9a6700", [float(d["cited_documents"]) for d in days]),
            ], title=_("Questions and answers per day"), digits=0)
        return HttpResponse(svg, content_type="image/svg+xml")

    def csv_view(self, request):
        try:
            report = self._report(request)
        except ApplicationError as exc:
            return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
        flt = report["filter"]
        response = HttpResponse(usage_csv(report), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="usage-{flt["from"]}-{flt["to"]}.csv"'
        return response


