"""The documents API: upload, list, detail, delete, re-index."""
from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from documents.models import Document, DocumentStatus
from documents.serializers import DocumentSerializer, DocumentUploadSerializer
from documents.services import document_delete, document_reindex, document_upload
from documents.uploads import SizeLimitUploadHandler
from core.errors import ApplicationError


class DocumentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = DocumentSerializer
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        qs = Document.objects.visible_to(self.request.user)
        wanted = self.request.query_params.get("status")
        if wanted:
            statuses = [s for s in wanted.split(",") if s]
            unknown = set(statuses) - set(DocumentStatus.values)
            if unknown:
                raise ApplicationError(f"Unknown status {', '.join(sorted(unknown))}; use one of "
                                       f"{', '.join(DocumentStatus.values)}.", code="invalid")
            qs = qs.filter(status__in=statuses)
        return qs.order_by("-created_at", "-id")

    def initialize_request(self, request, *args, **kwargs):
        # Must be in place before anything reads the body.
        request.upload_handlers.insert(0, SizeLimitUploadHandler(request))
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(parameters=[OpenApiParameter("status", str, description="uploaded, processing, indexed, failed, reindexing (comma-separated)")])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(request={"multipart/form-data": DocumentUploadSerializer}, responses={201: DocumentSerializer, 200: DocumentSerializer})
    def create(self, request):
        """Upload a PDF, DOCX, TXT or Markdown file; it is indexed in the background."""
        data = request.data  # parses the body through the size-limit handler
        if getattr(request._request, "upload_too_large", False):
            limit_mb = settings.MAX_UPLOAD_SIZE / (1024 * 1024)
            raise ApplicationError(f"This file is larger than the limit of {limit_mb:.0f} MB.",
                                   code="file_too_large", status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        form = DocumentUploadSerializer(data=data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        result = document_upload(
            owner=request.user, source=upload, filename=upload.name,
            title=form.validated_data.get("title", ""), category=form.validated_data.get("category", ""),
            subcategory=form.validated_data.get("subcategory", ""), language=form.validated_data.get("language", ""),
        )
        body = {**DocumentSerializer(result.document).data, "duplicate": result.duplicate}
        return Response(body, status=status.HTTP_200_OK if result.duplicate else status.HTTP_201_CREATED)

    def destroy(self, request, pk=None):
        """Delete the document, its stored file, chunks and vectors."""
        document_delete(document_id=_pk(pk), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={202: DocumentSerializer})
    @action(detail=True, methods=["post"])
    def reindex(self, request, pk=None):
        """Index the document again; its current chunks keep answering until the new ones are ready."""
        document = document_reindex(document_id=_pk(pk), user=request.user)
        return Response(DocumentSerializer(document).data, status=status.HTTP_202_ACCEPTED)


def _pk(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        from core.errors import NotFound

        raise NotFound("No such document.") from None
