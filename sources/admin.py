"""Sources in the staff admin: the sources of the collections a curator curates (credentials never shown
back), their last runs with live progress and the next run, "sync now"; the runs; the quarantine with
restore and delete."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import Http404, HttpResponse
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, gettext_lazy, ngettext

from core.admin import ReadOnlyModelAdmin
from core.errors import ApplicationError
from core.reasons import render as render_reason
from documents.models import Collection
from sources.kinds import CONNECTORS
from sources.models import QuarantinedItem, RunStatus, Source, SyncRun
from sources.secrets import encrypt
from sources.services import (curated_sources, quarantine_delete, quarantine_restore, source_next_run,
                              source_schedule, source_sync_now)


class SourceForm(forms.ModelForm):
    # Write-only: the stored value is never put back into the page.
    secret = forms.CharField(label=gettext_lazy("password or secret key"), required=False, strip=False,
                             widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
                             help_text=gettext_lazy("Stored encrypted; leave empty to keep the one stored."))
    clear_secret = forms.BooleanField(label=gettext_lazy("remove the stored password or secret key"), required=False)

    class Meta:
        model = Source
        fields = ("name", "collection", "owner", "kind", "location", "endpoint_url", "username", "include_patterns",
                  "exclude_patterns", "file_types", "max_size_mb", "schedule_minutes", "grace_days", "is_active")

    def clean_kind(self):
        kind = self.cleaned_data["kind"]
        if kind not in CONNECTORS:
            raise forms.ValidationError(gettext("This kind of source is not available."))
        return kind

    def clean(self):
        data = super().clean()
        owner, collection = data.get("owner"), data.get("collection")
        if owner and collection and not Collection.objects.curated_by(owner).filter(pk=collection.pk).exists():
            self.add_error("owner", gettext("The owner must curate the collection (its curator group, or a superuser)."))
        if data.get("secret"):
            try:
                self.encrypted = encrypt(data["secret"])
            except ApplicationError as exc:
                self.add_error("secret", exc.message)
        return data


def _run_line(run: SyncRun) -> str:
    counts = gettext("%(new)s new, %(changed)s changed, %(unchanged)s unchanged, %(moved)s moved, "
                     "%(quarantined)s quarantined, %(failed)s failed, %(skipped)s skipped") % {
        f: getattr(run, f) for f in ("new", "changed", "unchanged", "moved", "quarantined", "failed", "skipped")}
    return counts


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    form = SourceForm
    list_display = ("name", "kind", "collection", "is_active", "last_run", "next_run", "has_secret")
    list_filter = ("kind", "is_active")
    search_fields = ("name", "location")
    raw_id_fields = ("owner",)
    readonly_fields = ("has_secret", "next_run", "runs_panel")
    actions = ["sync_now"]
    fieldsets = (
        (None, {"fields": ("name", "collection", "owner", "kind", "location", "endpoint_url", "is_active")}),
        (gettext_lazy("Credentials"), {"fields": ("username", "secret", "clear_secret", "has_secret")}),
        (gettext_lazy("What to take"), {"fields": ("include_patterns", "exclude_patterns", "file_types", "max_size_mb")}),
        (gettext_lazy("Schedule and quarantine"), {"fields": ("schedule_minutes", "next_run", "grace_days")}),
        (gettext_lazy("Runs"), {"fields": ("runs_panel",)}),
    )

    class Media:
        js = ("sources/admin_progress.js",)

    def get_queryset(self, request):
        return curated_sources(request.user).select_related("collection")

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if obj is None:
            form.base_fields["owner"].initial = request.user.pk
        form.base_fields["collection"].queryset = Collection.objects.curated_by(request.user)
        return form

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff and (
            obj is None or curated_sources(request.user).filter(pk=obj.pk).exists())

    has_change_permission = has_view_permission
    has_delete_permission = has_view_permission

    def has_add_permission(self, request):
        return request.user.is_active and request.user.is_staff and Collection.objects.curated_by(request.user).exists()

    def save_model(self, request, obj, form, change):
        if form.cleaned_data.get("clear_secret"):
            obj.credentials_encrypted = ""
        elif getattr(form, "encrypted", ""):
            obj.credentials_encrypted = form.encrypted
        super().save_model(request, obj, form, change)
        source_schedule(source=obj)

    def delete_model(self, request, obj):
        from django_q.models import Schedule

        from sources.services import schedule_name

        Schedule.objects.filter(name=schedule_name(obj.pk)).delete()
        super().delete_model(request, obj)

    @admin.display(description=gettext_lazy("credentials stored"), boolean=True)
    def has_secret(self, obj):
        return bool(obj and obj.credentials_encrypted)

    @admin.display(description=gettext_lazy("next run"))
    def next_run(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        when = source_next_run(source=obj)
        return timezone.localtime(when).strftime("%Y-%m-%d %H:%M") if when else gettext("only when asked")

    @admin.display(description=gettext_lazy("last run"))
    def last_run(self, obj):
        run = obj.runs.first()
        if run is None:
            return gettext("never")
        if run.status == RunStatus.FAILED:
            return format_html('<span class="errornote-inline">{}: {}</span>', run.get_status_display(),
                               run.error_text())
        if run.status == RunStatus.RUNNING:
            return gettext("running: %(done)s of %(listed)s") % {"done": run.done, "listed": run.listed}
        return f"{run.get_status_display()}: {_run_line(run)}"

    @admin.display(description=gettext_lazy("last runs"))
    def runs_panel(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        return mark_safe(render_to_string("admin/sources/source/runs.html", runs_context(obj)))  # escaped by the template

    def get_urls(self):
        return [path("<int:source_id>/runs/", self.admin_site.admin_view(self.runs_view), name="sources_source_runs"),
                path("<int:source_id>/sync/", self.admin_site.admin_view(self.sync_view), name="sources_source_sync"),
                ] + super().get_urls()

    def runs_view(self, request, source_id: int):
        """The runs panel alone: the change page's script reloads it while a run is going."""
        source = curated_sources(request.user).filter(pk=source_id).first()
        if source is None:
            raise Http404
        return HttpResponse(render_to_string("admin/sources/source/runs.html", runs_context(source)))

    def sync_view(self, request, source_id: int):
        from django.http import HttpResponseNotAllowed, HttpResponseRedirect

        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not curated_sources(request.user).filter(pk=source_id).exists():
            raise Http404
        source_sync_now(source_id=source_id)
        self.message_user(request, gettext("A sync was queued; its progress shows below."), messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:sources_source_change", args=[source_id]))

    @admin.action(description=gettext_lazy("Sync now"))
    def sync_now(self, request, queryset):
        for source in queryset:
            source_sync_now(source_id=source.pk)
        self.message_user(request, ngettext("%(count)d sync was queued.", "%(count)d syncs were queued.",
                                            len(queryset)) % {"count": len(queryset)}, messages.SUCCESS)


def runs_context(source: Source) -> dict:
    runs = list(source.runs.all()[:10])
    rows = []
    for run in runs:
        rows.append({"run": run, "counts": _run_line(run), "error": run.error_text(), "errors": run.error_lines()[:20],
                     "skipped": [f"{render_reason(slot.get('reason'))}: {slot.get('count')}"
                                 for slot in (run.skipped_why or {}).values()],
                     "seconds": f"{run.duration_seconds:.1f}" if run.duration_seconds is not None else ""})
    running = any(r.status == RunStatus.RUNNING for r in runs)
    return {"source": source, "rows": rows, "running": running,
            "runs_url": reverse("admin:sources_source_runs", args=[source.pk]),
            "sync_url": reverse("admin:sources_source_sync", args=[source.pk])}


@admin.register(SyncRun)
class SyncRunAdmin(ReadOnlyModelAdmin):
    list_display = ("source", "status", "started_at", "duration", "new", "changed", "unchanged", "moved",
                    "quarantined", "failed", "skipped", "bytes_downloaded", "error_column")
    list_filter = ("status", "source")
    readonly_fields = ("source", "status", "trigger", "started_at", "finished_at", "listed", "done", "new", "changed",
                       "unchanged", "moved", "quarantined", "restored", "deleted", "failed", "skipped",
                       "bytes_downloaded", "error_column", "file_errors")
    exclude = ("errors", "error", "skipped_why", "heartbeat_at")

    def get_queryset(self, request):
        return super().get_queryset(request).filter(source__in=curated_sources(request.user)).select_related("source")

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    @admin.display(description=gettext_lazy("seconds"))
    def duration(self, obj):
        return f"{obj.duration_seconds:.1f}" if obj.duration_seconds is not None else "—"

    @admin.display(description=gettext_lazy("error"))
    def error_column(self, obj):
        return obj.error_text() or "—"

    @admin.display(description=gettext_lazy("file errors"))
    def file_errors(self, obj):
        lines = obj.error_lines()
        return format_html("<br>".join(["{}"] * len(lines)), *lines) if lines else "—"


@admin.register(QuarantinedItem)
class QuarantineAdmin(ReadOnlyModelAdmin):
    """Documents whose files vanished at their source: out of retrieval, kept until the grace period ends."""

    list_display = ("document_column", "source", "path", "quarantined_at", "deleted_on")
    list_filter = ("source",)
    search_fields = ("path", "document__title")
    actions = ["restore", "delete_now"]
    readonly_fields = ("source", "path", "document_column", "quarantined_at", "deleted_on")
    exclude = ("marker", "size", "sha256", "document", "skip_reason")

    def get_queryset(self, request):
        return (super().get_queryset(request).filter(quarantined_at__isnull=False, document__isnull=False,
                                                     source__in=curated_sources(request.user))
                .select_related("source", "document"))

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_change_permission(self, request, obj=None):  # the actions below (not the form)
        return obj is None and request.user.is_active and request.user.is_staff

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description=gettext_lazy("document"))
    def document_column(self, obj):
        return obj.document.title if obj.document else "—"

    @admin.display(description=gettext_lazy("deleted on"))
    def deleted_on(self, obj):
        from datetime import timedelta

        return timezone.localtime(obj.quarantined_at + timedelta(days=obj.source.grace_days)).strftime("%Y-%m-%d")

    @admin.action(description=gettext_lazy("Restore: keep the document and put it back in retrieval"))
    def restore(self, request, queryset):
        for item in queryset:
            quarantine_restore(item_id=item.pk, user=request.user)
        self.message_user(request, ngettext("%(count)d document restored.", "%(count)d documents restored.",
                                            len(queryset)) % {"count": len(queryset)}, messages.SUCCESS)

    @admin.action(description=gettext_lazy("Delete the documents now"))
    def delete_now(self, request, queryset):
        count = len(queryset)
        for item in queryset:
            quarantine_delete(item_id=item.pk, user=request.user)
        self.message_user(request, ngettext("%(count)d document deleted.", "%(count)d documents deleted.",
                                            count) % {"count": count}, messages.SUCCESS)
