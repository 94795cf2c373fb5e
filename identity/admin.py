"""Admin: which accounts and groups a directory holds (staff link an existing account to a
directory subject here, the one deliberate way a local account becomes a directory one)."""
import csv
import json

from django.contrib import admin
from django.http import StreamingHttpResponse
from django.utils.translation import gettext_lazy
from rest_framework.authtoken.models import TokenProxy

from core.admin import ReadOnlyModelAdmin
from identity.models import AUDIT_CHANNELS, ApiToken, AuditEvent, DirectoryGroup, DirectoryIdentity


@admin.register(DirectoryIdentity)
class DirectoryIdentityAdmin(admin.ModelAdmin):
    list_display = ["user", "source", "subject", "created_at", "checked_at"]
    list_filter = ["source"]
    search_fields = ["user__username", "subject"]
    autocomplete_fields = ["user"]
    # The stored OpenID Connect grant is a credential: never shown or edited.
    fields = ["user", "source", "subject", "checked_at", "signed_out_at"]
    readonly_fields = ["checked_at", "signed_out_at"]


@admin.register(DirectoryGroup)
class DirectoryGroupAdmin(admin.ModelAdmin):
    list_display = ["group", "source"]
    list_filter = ["source"]
    search_fields = ["group__name"]
    autocomplete_fields = ["group"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff see and end tokens (never their keys: only digests are stored); users make them."""

    list_display = ["name", "user", "prefix", "created_at", "expires_at", "last_used_at"]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "rotated_at", "expires_at", "last_used_at"]
    exclude = ["digest"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


AUDIT_CSV_FIELDS = ["id", "at", "action", "user_id", "username", "actor", "via", "document_id", "document_title",
                    "chunk_id", "version", "message_id", "detail"]


class _Echo:
    def write(self, value):
        return value


def audit_csv_response(queryset) -> StreamingHttpResponse:
    """The lines as CSV, streamed (a long log is never held in memory). A cell starting with = + - @
    is prefixed with ' so a spreadsheet never runs it as a formula (titles are user input)."""
    writer = csv.writer(_Echo())

    def safe(value) -> str:
        if isinstance(value, (dict, list)):
            text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        else:
            text = value.isoformat() if hasattr(value, "isoformat") else ("" if value is None else str(value))
        return "'" + text if text[:1] in ("=", "+", "-", "@") else text

    def rows():
        yield writer.writerow(AUDIT_CSV_FIELDS)
        for row in queryset.order_by("at", "id").values_list(*AUDIT_CSV_FIELDS).iterator(chunk_size=2000):
            yield writer.writerow([safe(v) for v in row])

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="audit-log.csv"'
    return response


# DRF's own token table is no longer read (its keys were hashed into ApiToken by a migration):
# its admin page would make tokens that never sign in.
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


class ChannelFilter(admin.SimpleListFilter):
    """The audit lines' channels (stored as codes) by their names in the reader's language."""

    title = gettext_lazy("channel")
    parameter_name = "via"

    def lookups(self, request, model_admin):
        return [(code, label) for code, label in AUDIT_CHANNELS.items()]

    def queryset(self, request, queryset):
        return queryset.filter(via=self.value()) if self.value() else queryset


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    """The audit log: searched, filtered and exported (CSV), never changed — not even by a
    superuser (and the database refuses UPDATE and DELETE too: migration 0005)."""

    list_display = ["at", "action", "username", "channel", "document_id", "document_title", "chunk_id", "version",
                    "message_id", "actor"]
    list_filter = ["action", ChannelFilter, ("at", admin.DateFieldListFilter)]
    search_fields = ["username", "actor", "document_title", "=document_id", "=message_id", "=chunk_id"]
    date_hierarchy = "at"
    actions = ["export_csv"]
    list_per_page = 100
    show_full_result_count = False  # a count(*) of a long log on every page is slow

    @admin.display(description=gettext_lazy("channel"), ordering="via")
    def channel(self, obj):
        return AUDIT_CHANNELS.get(obj.via, obj.via)

    @admin.action(description=gettext_lazy("Export the selected lines as CSV"))
    def export_csv(self, request, queryset):
        return audit_csv_response(queryset)
