"""Documents in the staff admin: status badges, filters, read-only indexing facts, the first chunks, re-index.

The retrieval app extends this admin with the actions that touch vectors (clear and re-index,
re-embed), since documents never imports retrieval.
"""
from __future__ import annotations

from django.utils.text import format_lazy
from django.utils.translation import gettext, gettext_lazy
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.http import Http404, HttpResponseRedirect
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from documents.collections.admin import CollectionAdmin  # noqa: F401 - registers the collection admin
from documents.collections import document_set_active
from documents.governance import with_dates
from documents.models import Chunk, Collection, Document, DocumentStatus, ExpiredPolicy
from documents.collections import document_move
from documents.services import document_delete, document_reindex
from documents.versions import document_version_upload, versions_list
from core.errors import ApplicationError
from identity.audit import audit_record
from identity.models import AuditAction, AuditChannel

FIRST_CHUNKS = 10
STATUS_COLOURS = {
    DocumentStatus.UPLOADED: "#175cd3", DocumentStatus.PROCESSING: "#175cd3", DocumentStatus.INDEXED: "#1f7a3a",
    DocumentStatus.FAILED: "#b42318", DocumentStatus.REINDEXING: "#9a6700",
}


def status_badge(document: Document) -> str:
    return format_html('<span class="rs-badge rs-status-{}" title="{}" style="background:{};color:#fff;'
                       'padding:1px 7px;border-radius:9px;font-size:11px;white-space:nowrap">{}</span>',
                       document.status, document.index_error_text[:300], STATUS_COLOURS.get(document.status, "#667085"),
                       document.get_status_display())


def progress_text(document: Document) -> str:
    """"pages 3/10 · chunks 40/120 embedded" while a document is being indexed."""
    parts = [document.progress_note_text] if document.progress_note else []
    if document.pages_total:
        parts.append(f"pages {document.pages_done}/{document.pages_total}")
    if document.chunks_total:
        parts.append(f"chunks {document.chunks_embedded}/{document.chunks_total} embedded")
    return " · ".join(parts) or "—"


class FirstChunksInline(admin.TabularInline):
    """The first chunks, read-only: enough to see what extraction and chunking produced."""

    model = Chunk
    fields = ("chunk_index", "page_number", "heading", "token_count", "text")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True
    verbose_name_plural = format_lazy(gettext_lazy("first {count} chunks"), count=FIRST_CHUNKS)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(chunk_index__lt=FIRST_CHUNKS).defer("search_vector")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return True  # shown only on a document's page, which its own admin has let the user open

    @admin.display(description=gettext_lazy("heading path"))
    def heading(self, chunk):
        return " › ".join(chunk.heading_path) or "—"

    @admin.display(description=gettext_lazy("text"))
    def text(self, chunk):
        content = " ".join(chunk.content.split())
        content = content if len(content) <= 360 else content[:360] + "…"
        return format_html('<div style="min-width:50em;max-width:90em">{}</div>', content)


class ReviewFilter(admin.SimpleListFilter):
    """Source governance: documents due for review or expired (their own dates, else their collection's),
    the most overdue first."""

    title = gettext_lazy("review")
    parameter_name = "review"

    def lookups(self, request, model_admin):
        return [("due", gettext_lazy("due for review or expired")), ("expired", gettext_lazy("expired")),
                ("leaving", gettext_lazy("expired, left out of retrieval"))]

    def queryset(self, request, queryset):
        today = timezone.localdate()
        if self.value() == "due":
            queryset = queryset.filter(Q(expires__lt=today) | Q(due_review__lte=today))
        elif self.value() == "expired":
            queryset = queryset.filter(expires__lt=today)
        elif self.value() == "leaving":
            queryset = queryset.filter(expires__lt=today, policy=ExpiredPolicy.LEAVE)
        return queryset  # ordered by DocumentAdmin.get_ordering: the most overdue first


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "owner", "collection", "is_active", "status_column", "progress", "chunk_count",
                    "embedding_model", "category", "subcategory", "review_column", "answerable_column", "created_at")
    list_display_links = ("id", "title")
    list_filter = (ReviewFilter, "status", "is_active", "collection", ("owner", admin.RelatedOnlyFieldListFilter),
                   "embedding_model", "category", "subcategory", "mime_type")
    search_fields = ("title", "original_filename", "sha256", "owner__username")
    list_select_related = ("owner", "collection")
    fieldsets = (
        (None, {"fields": ("title", "owner", "collection", "is_active", "original_filename", "file_size", "mime_type", "sha256",
                           "category", "subcategory", "review_by", "valid_until", "expired_policy")}),
        (gettext_lazy("Indexing"), {"fields": ("status_column", "progress", "index_error_shown", "index_warnings_shown",
                                 "empty_pages", "index_attempts", "heartbeat_at", "indexed_at")}),
        (gettext_lazy("Versions"), {"fields": ("versions",)}),
        (gettext_lazy("Chunks and vectors"), {"fields": ("chunk_count", "chunking_strategy", "chunking_note_shown", "embedding_server_id",
                                           "embedding_model", "embedding_dim", "language", "text_config")}),
        (gettext_lazy("Dates"), {"classes": ("collapse",), "fields": ("created_at", "updated_at")}),
    )
    # Staff may rename and recategorise; everything about the file and its indexing is a fact.
    readonly_fields = ("owner", "collection", "is_active", "original_filename", "file_size", "mime_type", "sha256", "status_column", "progress",
                       "index_error_shown", "index_warnings_shown", "empty_pages", "index_attempts", "heartbeat_at",
                       "indexed_at", "chunk_count", "chunking_strategy", "chunking_note_shown", "embedding_server_id",
                       "embedding_model", "embedding_dim", "language", "text_config", "created_at", "updated_at",
                       "versions")
    inlines = [FirstChunksInline]
    actions = ["reindex", "activate", "deactivate", "move", "delete_documents"]

    @admin.display(description=gettext_lazy("index error"))
    def index_error_shown(self, obj):
        return obj.index_error_text

    @admin.display(description=gettext_lazy("chunking note"))
    def chunking_note_shown(self, obj):
        return obj.chunking_note_text

    @admin.display(description=gettext_lazy("index warnings"))
    def index_warnings_shown(self, obj):
        return format_html_join(mark_safe("<br>"), "{}", ((w,) for w in obj.index_warnings_text)) or "-"

    def has_add_permission(self, request):
        return False  # documents come in through the upload page, the API or `manage.py ingest`

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        if request.method == "GET" and response.status_code == 200:
            # The page shows the document's first chunks: a read of its text, as the viewer's would be.
            document = Document.objects.filter(pk=_int(object_id)).only("id", "title", "original_filename", "version").first()
            if document is not None:
                audit_record(action=AuditAction.TEXT, user=request.user, via=AuditChannel.ADMIN, document=document,
                             detail={"page": "document admin", "chunks": FIRST_CHUNKS})
        return response

    # Curators manage their collections' documents by the collection rule (documents/collections:
    # who curates), whatever model permissions they hold; a model permission still shows all documents.
    def _sees_all(self, request, action: str) -> bool:
        return request.user.is_superuser or request.user.has_perm(f"documents.{action}_document")

    def _may(self, request, obj, action: str) -> bool:
        user = request.user
        if not (user.is_active and user.is_staff):
            return False
        if self._sees_all(request, action):
            return True
        if obj is None:
            return Collection.objects.curated_by(user).exists()
        return Document.objects.manageable_by(user).filter(pk=obj.pk, collection__isnull=False).exists()

    def has_module_permission(self, request):
        return self._may(request, None, "view")

    def has_view_permission(self, request, obj=None):
        return self._may(request, obj, "view") or self._may(request, obj, "change")

    def has_change_permission(self, request, obj=None):
        return self._may(request, obj, "change")

    def has_delete_permission(self, request, obj=None):
        return self._may(request, obj, "delete")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if not self._sees_all(request, "view") and not self._sees_all(request, "change"):
            queryset = queryset.filter(collection__in=Collection.objects.curated_by(request.user))
        return with_dates(queryset).select_related("collection__owner")

    def get_actions(self, request):
        actions = super().get_actions(request)
        if "delete_selected" in actions:  # Django's bulk delete skips the stored files: ours goes through the service
            del actions["delete_selected"]
        return actions

    def delete_model(self, request, obj):
        document_delete(document_id=obj.pk, user=_acting_user(request, obj))

    def delete_queryset(self, request, queryset):
        for document in queryset:
            self.delete_model(request, document)

    def get_ordering(self, request):
        if request.GET.get(ReviewFilter.parameter_name):
            return [Coalesce("due_review", "expires").asc(nulls_last=True), "id"]
        return super().get_ordering(request)

    @admin.display(description=gettext_lazy("review by"), ordering="due_review")
    def review_column(self, obj):
        """The effective review date (the document's, else its collection's), and "expired" when past valid_until."""
        today = timezone.localdate()
        expired = obj.expires is not None and obj.expires < today
        if obj.due_review is None and not expired:
            return "—"
        when = date_format(obj.due_review, "SHORT_DATE_FORMAT") if obj.due_review else ""
        if not expired:
            return when
        note = gettext("left out of retrieval") if obj.policy == ExpiredPolicy.LEAVE else gettext("may be outdated")
        return format_html('{} <span class="badge badge-warning">{}</span> ({})', when, gettext("expired"), note)

    @admin.display(description=gettext_lazy("answerable"))
    def answerable_column(self, obj):
        """Who answers for the document being current: its collection's owner, else who uploaded it."""
        if obj.collection_id and obj.collection.owner_id:
            return obj.collection.owner
        return obj.owner

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_column(self, obj):
        return status_badge(obj)

    @admin.display(description=gettext_lazy("progress"))
    def progress(self, obj):
        if obj.status == DocumentStatus.INDEXED:
            return "—"
        return progress_text(obj)

    @admin.display(description=gettext_lazy("versions"))
    def versions(self, obj):
        rows = format_html_join("", "<li>{} {} · {} · {} · {} chunks ({} embedded, {} reused){}</li>", (
            ("▶" if v.number == obj.version else "", f"v{v.number}", v.original_filename, v.get_status_display(),
             v.chunk_count, v.embedded_chunks, v.reused_chunks, f" — {v.index_error_text}" if v.index_error else "")
            for v in versions_list(document=obj)))
        link = reverse("admin:documents_document_upload_version", args=[obj.pk])
        return format_html('<ul style="margin:0;padding-left:1em">{}</ul><a class="button" href="{}">{}</a>', rows, link,
                           gettext("Upload new version…"))

    def get_urls(self):
        return [path("<int:document_id>/upload-version/", self.admin_site.admin_view(self.upload_version_view),
                     name="documents_document_upload_version")] + super().get_urls()

    def upload_version_view(self, request, document_id: int):
        """A new file for the document, through the same service as the API (owner or curator only)."""
        document = self.get_queryset(request).filter(pk=document_id).first()
        if document is None or not self.has_change_permission(request, document):
            raise Http404("No such document.")
        change_url = reverse("admin:documents_document_change", args=[document.pk])
        if request.method == "POST" and request.FILES.get("file"):
            upload = request.FILES["file"]
            try:
                version = document_version_upload(document_id=document.pk, user=_acting_user(request, document),
                                                  source=upload, filename=upload.name)
            except ApplicationError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(request, gettext("Version %(number)s is being indexed; version %(version)s answers until it is ready.") % {"number": version.number, "version": document.version}, messages.SUCCESS)
                return HttpResponseRedirect(change_url)
        return TemplateResponse(request, "admin/documents/document/upload_version.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "document": document,
            "change_url": change_url, "title": gettext("Upload a new version of %(document)s") % {"document": document}})

    @admin.display(description=gettext_lazy("size"), ordering="size")
    def file_size(self, obj):
        return filesizeformat(obj.size)

    @admin.action(description=gettext_lazy("Re-index the selected documents (their chunks answer until the new ones are ready)"),
                  permissions=["change"])
    def reindex(self, request, queryset):
        queued, refused = [], []
        for document in queryset.select_related("owner"):
            try:
                # The owner's own re-index (a collection's: the curator's), with the API's state checks.
                document_reindex(document_id=document.pk, user=_acting_user(request, document))
                queued.append(document)
            except ApplicationError as exc:
                refused.append(f"{document}: {exc.message}")
        if queued:
            self.message_user(request, gettext("Re-indexing queued for %(count)s document(s).") % {"count": len(queued)}, messages.SUCCESS)
        for reason in refused:
            self.message_user(request, reason, messages.WARNING)


    def _set_active(self, request, queryset, active: bool) -> None:
        done, refused = 0, []
        for document in queryset.select_related("owner"):
            try:
                document_set_active(document_id=document.pk, user=_acting_user(request, document), active=active)
                done += 1
            except ApplicationError as exc:
                refused.append(f"{document}: {exc.message}")
        if done:
            self.message_user(request, (gettext("Activated %(count)s document(s).") if active else gettext("Deactivated %(count)s document(s).")) % {"count": done}, messages.SUCCESS)
        for reason in refused:
            self.message_user(request, reason, messages.WARNING)

    @admin.action(description=gettext_lazy("Activate the selected documents (retrieval uses them again)"), permissions=["change"])
    def activate(self, request, queryset):
        self._set_active(request, queryset, True)

    @admin.action(description=gettext_lazy("Deactivate the selected documents (kept and indexed, but never searched)"),
                  permissions=["change"])
    def deactivate(self, request, queryset):
        self._set_active(request, queryset, False)


    @admin.action(description=gettext_lazy("Delete the selected documents with their chunks, vectors and files…"),
                  permissions=["delete"])
    def delete_documents(self, request, queryset):
        """Asks first (what goes), then deletes each document through the same service as the API."""
        if request.POST.get("rs_delete") == "yes":
            done, refused = 0, []
            for document in queryset:
                try:
                    document_delete(document_id=document.pk, user=_acting_user(request, document))
                    done += 1
                except ApplicationError as exc:
                    refused.append(f"{document}: {exc.message}")
            if done:
                self.message_user(request, gettext("Deleted %(count)s document(s).") % {"count": done}, messages.SUCCESS)
            for reason in refused:
                self.message_user(request, reason, messages.WARNING)
            return None
        return TemplateResponse(request, "admin/documents/document/delete_documents.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta,
            "title": gettext("Delete the selected documents?"), "documents": queryset.select_related("collection"),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        })

    @admin.action(description=gettext_lazy("Move the selected documents to another collection (or to their uploader's private library)"),
                  permissions=["change"])
    def move(self, request, queryset):
        """Asks where to first; then moves each document as the staff member (who must curate both sides)."""
        targets = Collection.objects.curated_by(request.user).order_by("name", "id")
        if request.POST.get("rs_move") == "yes":
            choice = request.POST.get("target", "")
            if choice != "private" and not targets.filter(pk=int(choice) if choice.isascii() and choice.isdigit() and len(choice) <= 18 else 0).exists():
                self.message_user(request, gettext("Choose a collection you curate, or private."), messages.ERROR)
                return None
            moved, refused = 0, []
            for document in queryset:
                try:
                    document_move(document_id=document.pk, user=request.user,
                                  collection=None if choice == "private" else choice)
                    moved += 1
                except ApplicationError as exc:
                    refused.append(f"{document}: {exc.message}")
            if moved:
                self.message_user(request, gettext("Moved %(moved)s document(s); their chunks follow, nothing is re-indexed.") % {"moved": moved},
                                  messages.SUCCESS)
            for reason in refused:
                self.message_user(request, reason, messages.WARNING)
            return None
        return TemplateResponse(request, "admin/documents/document/move.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": gettext("Move documents"),
            "documents": queryset.select_related("collection", "owner"), "targets": targets,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        })


def _acting_user(request, document: Document):
    """Who a staff action on a document acts as: the owner for a private document, the staff member
    (who must curate the collection) for a shared one."""
    return document.owner if document.collection_id is None else request.user


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ("id", "document", "chunk_index", "page_number", "token_count")
    search_fields = ("content",)
    list_select_related = ("document",)
    raw_id_fields = ("document", "owner")
    readonly_fields = ("search_vector",)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        if request.method == "GET" and response.status_code == 200:
            chunk = Chunk.objects.filter(pk=_int(object_id)).select_related("document").only(
                "id", "document__id", "document__title", "document__original_filename", "document__version").first()
            if chunk is not None:
                audit_record(action=AuditAction.TEXT, user=request.user, via=AuditChannel.ADMIN, document=chunk.document,
                             chunk_id=chunk.pk, detail={"page": "chunk admin"})
        return response

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        query = request.GET.get("q", "").strip()
        if request.method == "GET" and query and response.status_code == 200:
            # Searching chunks' text tells which documents hold the words: a search, audited like one.
            audit_record(action=AuditAction.SEARCH, user=request.user, via=AuditChannel.ADMIN,
                         detail={"page": "chunk admin", "query_chars": len(query)})
        return response


def _int(value) -> int | None:
    return int(value) if str(value).isascii() and str(value).isdigit() else None
