"""The documents API: upload, list, detail, delete, re-index."""
from __future__ import annotations

from django.utils.translation import gettext
from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiRequest, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from documents.collections import collection_curated, collection_get, document_set_active
from documents.downloads import audit_download, download_response
from documents.extraction import SUPPORTED_MIME_TYPES
from documents.models import Document, DocumentStatus
from documents.selectors import document_chunks, document_get, document_text
from documents.collections import document_move
from documents.direct_upload import direct_upload_finalize, direct_upload_start
from documents.serializers import (
    ChunkSerializer,
    DocumentSerializer,
    DocumentTextSerializer,
    DocumentTopicSerializer,
    DocumentUpdateSerializer,
    DocumentUploadSerializer,
    FinalizeRequestSerializer,
    UploadUrlRequestSerializer,
    UploadUrlSerializer,
    VersionSerializer,
    VersionUploadSerializer,
)
from documents.services import document_delete, document_reindex, document_set_topic, document_upload
from documents.uploads import SizeLimitUploadHandler
from documents.versions import document_version_upload, versions_list
from core.parsers import StrictJSONParser
from core.errors import ApplicationError, NotFound, TooLarge
from identity.audit import audit_record
from identity.models import AuditAction


UPLOAD_TYPES = SUPPORTED_MIME_TYPES  # the OpenAPI schema's accepted types: what extraction reads


class FileRenderer(BaseRenderer):
    """Lets a client that asks for the file's own type (`Accept: application/pdf`) past content
    negotiation; the file itself is a FileResponse, errors are still JSON."""

    media_type = "*/*"
    format = "file"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        if response is not None:  # an error: JSON, whatever type the client asked the file in
            response["Content-Type"] = "application/json"
        return JSONRenderer().render(data, "application/json", renderer_context)


class DocumentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = DocumentSerializer
    # Uploads are multipart; PATCH (moving a document) is JSON.
    parser_classes = [MultiPartParser, FormParser, StrictJSONParser]

    def get_queryset(self):
        user = self.request.user
        # What the user reads, plus what they curate (a curator also sees deactivated documents).
        qs = Document.objects.visible_to(user) | Document.objects.manageable_by(user)
        collection = self.request.query_params.get("collection")
        if collection == "own":
            qs = qs.filter(collection__isnull=True)
        elif collection:
            qs = qs.filter(collection=collection_get(user=user, ref=collection))
        wanted = self.request.query_params.get("status")
        if wanted:
            statuses = [s for s in wanted.split(",") if s]
            unknown = set(statuses) - set(DocumentStatus.values)
            if unknown:
                raise ApplicationError(gettext("Unknown status %(unknown)s; use one of %(choices)s.") % {"unknown": ', '.join(sorted(unknown)), "choices": ', '.join(DocumentStatus.values)}, code="invalid")
            qs = qs.filter(status__in=statuses)
        owner = self.request.query_params.get("owner")
        if owner == "me":  # what this person uploaded (the pages' toasts watch these), not what they only read
            qs = qs.filter(owner=user)
        elif owner:
            raise ApplicationError(gettext("Unknown owner %(owner)s; use \"me\" or leave it out.") % {"owner": owner}, code="invalid")
        return qs.order_by("-created_at", "-id")

    def initialize_request(self, request, *args, **kwargs):
        # Must be in place before anything reads the body.
        request.upload_handlers.insert(0, SizeLimitUploadHandler(request))
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(parameters=[
        OpenApiParameter("status", str, description="uploaded, processing, indexed, failed, reindexing (comma-separated)"),
        OpenApiParameter("collection", str, description="'own' for private documents, or a collection's id or slug"),
        OpenApiParameter("owner", str, description="'me' for the documents the caller uploaded")])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(request={"multipart/form-data": OpenApiRequest(DocumentUploadSerializer, encoding={"file": {
        "contentType": ", ".join(UPLOAD_TYPES)}})}, responses={201: DocumentSerializer, 200: DocumentSerializer})
    def create(self, request):
        """Upload a document (the types in the request body's encoding); it is indexed in the background."""
        data = _upload_body(request)
        form = DocumentUploadSerializer(data=data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        ref = form.validated_data.get("collection")
        collection = collection_curated(user=request.user, ref=ref) if ref else None
        result = document_upload(
            owner=request.user, source=upload, filename=upload.name, collection=collection,
            title=form.validated_data.get("title", ""), category=form.validated_data.get("category", ""),
            subcategory=form.validated_data.get("subcategory", ""), language=form.validated_data.get("language", ""),
        )
        body = {**DocumentSerializer(result.document).data, "duplicate": result.duplicate}
        return Response(body, status=status.HTTP_200_OK if result.duplicate else status.HTTP_201_CREATED)

    @extend_schema(request=DocumentUpdateSerializer, responses={200: DocumentSerializer})
    def partial_update(self, request, pk=None):
        """Move the document into a collection you curate, or back to its uploader's private library
        (`collection`: null). Its chunks follow at once; nothing is re-indexed."""
        form = DocumentUpdateSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        if "collection" in form.validated_data:
            document = document_move(document_id=_pk(pk), user=request.user,
                                     collection=form.validated_data["collection"])
        else:
            document = document_get(document_id=_pk(pk), user=request.user)
        return Response(DocumentSerializer(document).data)

    @extend_schema(request=UploadUrlRequestSerializer, responses={201: UploadUrlSerializer})
    @action(detail=False, methods=["post"], url_path="upload-url", parser_classes=[StrictJSONParser])
    def upload_url(self, request):
        """A presigned POST straight to the bucket for a big file (object storage only; 400 otherwise).
        Post `fields` and then the file to `url`, then call finalize with the `upload_id`."""
        form = UploadUrlRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        ref = form.validated_data.get("collection")
        collection = collection_curated(user=request.user, ref=ref) if ref else None
        offer = direct_upload_start(owner=request.user, name=form.validated_data["name"],
                                    size=form.validated_data["size"],
                                    content_type=form.validated_data["content_type"], collection=collection)
        body = {"upload_id": offer.upload_id, "url": offer.url, "method": "POST", "fields": offer.fields,
                "expires_at": offer.expires_at}
        return Response(UploadUrlSerializer(body).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=FinalizeRequestSerializer, responses={201: DocumentSerializer, 200: DocumentSerializer})
    @action(detail=False, methods=["post"], parser_classes=[StrictJSONParser])
    def finalize(self, request):
        """Check the uploaded object (size, type, sha256) and queue its indexing like a normal upload;
        200 with `duplicate` when the same bytes are a document already."""
        form = FinalizeRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        result = direct_upload_finalize(owner=request.user, upload_id=form.validated_data["upload_id"],
                                        sha256=form.validated_data.get("sha256", ""))
        body = {**DocumentSerializer(result.document).data, "duplicate": result.duplicate}
        return Response(body, status=status.HTTP_200_OK if result.duplicate else status.HTTP_201_CREATED)

    def destroy(self, request, pk=None):
        """Delete the document, its stored file, chunks and vectors."""
        document_delete(document_id=_pk(pk), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=DocumentTopicSerializer, responses=DocumentSerializer)
    @action(detail=True, methods=["patch"], parser_classes=[StrictJSONParser])
    def topic(self, request, pk=None):
        """Change the document's category / subcategory (its owner or a curator of its collection)."""
        form = DocumentTopicSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        document = document_set_topic(document_id=_pk(pk), user=request.user, **form.validated_data)
        return Response(DocumentSerializer(document).data)

    @extend_schema(methods=["GET"], responses={200: VersionSerializer(many=True)})
    @extend_schema(methods=["POST"], request={"multipart/form-data": OpenApiRequest(VersionUploadSerializer, encoding={
        "file": {"contentType": ", ".join(UPLOAD_TYPES)}})}, responses={201: VersionSerializer})
    @action(detail=True, methods=["get", "post"])
    def versions(self, request, pk=None):
        """GET: the document's versions, newest first. POST: upload a new file as its next version (its owner or
        a curator of its collection); the current version answers until the new one is indexed."""
        if request.method == "GET":
            document = document_get(document_id=_pk(pk), user=request.user)
            page = self.paginate_queryset(versions_list(document=document))
            return self.get_paginated_response(VersionSerializer(page, many=True).data)
        data = _upload_body(request)
        form = VersionUploadSerializer(data=data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        version = document_version_upload(document_id=_pk(pk), user=request.user, source=upload, filename=upload.name)
        return Response(VersionSerializer(version).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: DocumentSerializer})
    @action(detail=True, methods=["post"])
    def reindex(self, request, pk=None):
        """Index the document again; its current chunks keep answering until the new ones are ready."""
        document = document_reindex(document_id=_pk(pk), user=request.user)
        return Response(DocumentSerializer(document).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: DocumentTextSerializer})
    @action(detail=True, methods=["get"])
    def text(self, request, pk=None):
        """The extracted text with its pages and segments (chunk index, offsets, page, heading path): what a
        document viewer needs. 409 while the text is not extracted yet."""
        document = document_get(document_id=pk, user=request.user)
        text = document_text(document=document)
        audit_record(action=AuditAction.TEXT, user=request.user, via="api", document=document)
        return Response(text)

    @extend_schema(responses={200: ChunkSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def chunks(self, request, pk=None):
        """The document's chunks (passages) in order, paginated."""
        document = document_get(document_id=pk, user=request.user)
        page = self.paginate_queryset(document_chunks(document=document))
        audit_record(action=AuditAction.TEXT, user=request.user, via="api", document=document,
                     detail={"chunks": [c.pk for c in page] if page is not None else []})
        return self.get_paginated_response(ChunkSerializer(page, many=True).data)

    @extend_schema(responses={(200, "*/*"): OpenApiTypes.BINARY}, parameters=[OpenApiParameter(
        "version", int, description="A superseded version's kept file (404 when it is not kept); default: the current one")])
    @action(detail=True, methods=["get"], renderer_classes=[JSONRenderer, FileRenderer])
    def file(self, request, pk=None):
        """The original file as uploaded (404 when it is no longer stored)."""
        document = document_get(document_id=pk, user=request.user)
        response = download_response(document, version=request.query_params.get("version"))
        if response is None:
            raise NotFound(gettext("The original file is no longer stored."))
        audit_download(request.user, document, request.query_params.get("version"), via="api")
        return response
    @extend_schema(request=None, responses={200: DocumentSerializer})
    @action(detail=True, methods=["post"])
    def activate(self, request, pk=None):
        """Let retrieval use the document again (owner, or a curator of its collection)."""
        document = document_set_active(document_id=_pk(pk), user=request.user, active=True)
        return Response(DocumentSerializer(document).data)

    @extend_schema(request=None, responses={200: DocumentSerializer})
    @action(detail=True, methods=["post"])
    def deactivate(self, request, pk=None):
        """Keep the document stored and indexed, but out of every search (and out of readers' sight)."""
        document = document_set_active(document_id=_pk(pk), user=request.user, active=False)
        return Response(DocumentSerializer(document).data)


def _pk(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        from core.errors import NotFound

        raise NotFound(gettext("No such document.")) from None


def _upload_body(request):
    """The multipart body, parsed through the size-limit handler: 413 when the file passed the limit."""
    data = request.data
    if getattr(request._request, "upload_too_large", False):
        limit_mb = settings.MAX_UPLOAD_SIZE / (1024 * 1024)
        raise TooLarge(gettext("This file is larger than the limit of %(limit_mb)s MB.") % {"limit_mb": format(limit_mb, '.0f')}, code="file_too_large")
    return data
