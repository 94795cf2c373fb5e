"""Collections in the staff admin: readers, curators and document counts; multi-file upload into a
collection; deletion with its documents after a confirmation.

Staff see the collections they curate (superusers: all). Uploads go through /api/documents/ from
the page, so they take exactly the library page's pipeline, checks and error messages.
"""
from __future__ import annotations

from django.utils.translation import gettext, gettext_lazy
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Count, Q
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from documents.collections.services import can_create_collections, collection_delete
from documents.models import Collection
from core.errors import ApplicationError


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "visibility", "readers", "curator_group", "is_active", "documents_column",
                    "upload_link")
    list_filter = ("is_active", "visibility")
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}
    filter_horizontal = ("groups",)
    fields = ("name", "slug", "description", "is_active", "visibility", "groups", "curator_group", "category",
              "subcategory", "owner", "review_by", "valid_until", "expired_policy")
    raw_id_fields = ("owner",)
    actions = None  # no bulk delete: a collection goes with its documents, through delete_view's confirmation

    def get_queryset(self, request):
        qs = Collection.objects.curated_by(request.user).select_related("curator_group").prefetch_related("groups")
        return qs.annotate(active_documents=Count("documents", filter=Q(documents__is_active=True)),
                           all_documents=Count("documents"))

    # Curators change what they curate; creating one takes the model permission (or a superuser).
    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff and (
            obj is None or Collection.objects.curated_by(request.user).filter(pk=obj.pk).exists())

    has_change_permission = has_view_permission
    has_delete_permission = has_view_permission

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request):
        return can_create_collections(request.user)

    @admin.display(description=gettext_lazy("readers"))
    def readers(self, obj):
        if obj.visibility == "everyone":
            return "everyone signed in"
        return ", ".join(g.name for g in obj.groups.all()) or "nobody yet"

    @admin.display(description=gettext_lazy("documents"), ordering="all_documents")
    def documents_column(self, obj):
        url = reverse("admin:documents_document_changelist") + f"?collection__id__exact={obj.pk}"
        inactive = obj.all_documents - obj.active_documents
        text = (gettext("%(count)s document(s), %(inactive)s inactive") if inactive else gettext("%(count)s document(s)"))
        return format_html('<a href="{}">{}</a>', url, text % {"count": obj.all_documents, "inactive": inactive})

    @admin.display(description=gettext_lazy("upload"))
    def upload_link(self, obj):
        return format_html('<a href="{}">{}</a>', reverse("admin:documents_collection_upload", args=[obj.pk]), gettext("Upload files…"))

    def get_urls(self):
        return [path("<int:collection_id>/upload/", self.admin_site.admin_view(self.upload_view),
                     name="documents_collection_upload")] + super().get_urls()

    def _curated(self, request, collection_id) -> Collection:
        collection = Collection.objects.curated_by(request.user).filter(pk=collection_id).first()
        if collection is None:
            raise Http404("No such collection.")
        return collection

    def upload_view(self, request, collection_id: int):
        """Several files into the collection, each with its progress and the upload pipeline's own errors."""
        collection = self._curated(request, collection_id)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "collection": collection,
                   "title": gettext("Upload into %(name)s") % {"name": collection.name}, "max_upload_size": settings.MAX_UPLOAD_SIZE,
                   "documents_url": reverse("admin:documents_document_changelist")
                   + f"?collection__id__exact={collection.pk}"}
        return TemplateResponse(request, "admin/documents/collection/upload.html", context)

    def delete_view(self, request, object_id, extra_context=None):
        """Confirm with what goes (documents, chunks, vectors, files), then delete it all in one go."""
        collection = self._curated(request, object_id)
        documents = collection.documents.count()
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            try:
                result = collection_delete(user=request.user, ref=collection.pk, confirm=True)
            except ApplicationError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return HttpResponseRedirect(request.path)
            if result["background"]:
                self.message_user(request, gettext("“%(collection)s” is deactivated; its %(documents)s documents are being deleted in the background.") % {"collection": collection, "documents": documents}, messages.SUCCESS)
            else:
                self.message_user(request, gettext("Deleted “%(collection)s” and its %(documents)s document(s).") % {"collection": collection, "documents": documents}, messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:documents_collection_changelist"))
        chunks = sum(collection.documents.values_list("chunk_count", flat=True))
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "collection": collection,
                   "documents": documents, "chunks": chunks, "title": f"Delete {collection.name}?"}
        return TemplateResponse(request, "admin/documents/collection/delete.html", context)
