"""`/api/knowledge/`: staff curate approved Q&A pairs over REST, as they do in the admin.

Staff may list and read; creating, changing, approving and retiring need the curator permission
(`retrieval.curate_knowledgeentry`, the `curator` group), as in the admin. Every write goes through
retrieval.knowledge.services, as the admin's do, so both re-embed a pair by the same rule.
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import NotFound
from core.pagination import StrictCharField
from retrieval.knowledge import services
from retrieval.models import KnowledgeEntry

CURATE_PERMISSION = "retrieval.curate_knowledgeentry"


class StaffCurates(permissions.BasePermission):
    """Staff read; curators (staff with the curate permission) write."""

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_active and user.is_staff):
            return False
        return request.method in permissions.SAFE_METHODS or user.has_perm(CURATE_PERMISSION)


class KnowledgeEntrySerializer(serializers.ModelSerializer):
    approved = serializers.SerializerMethodField(help_text="Approved by a curator (answers questions when also active)")
    approved_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = KnowledgeEntry
        fields = ["id", "category", "subcategory", "question", "answer", "is_active", "approved", "approved_by",
                  "approved_at", "embedding_state", "embedding_error", "created_at", "updated_at"]
        read_only_fields = fields

    def get_approved(self, entry: KnowledgeEntry) -> bool:
        return entry.approved_at is not None


class KnowledgeEntryWrite(serializers.Serializer):
    category = StrictCharField(required=False, allow_blank=True, max_length=100, default="")
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100, default="")
    question = StrictCharField(max_length=10000)
    answer = StrictCharField(max_length=20000)
    is_active = serializers.BooleanField(required=False, default=True)
    approved = serializers.BooleanField(required=False, default=False, help_text="Approve it at once (curators)")


class KnowledgeEntryPatch(serializers.Serializer):
    category = StrictCharField(required=False, allow_blank=True, max_length=100)
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100)
    question = StrictCharField(required=False, max_length=10000)
    answer = StrictCharField(required=False, max_length=20000)
    is_active = serializers.BooleanField(required=False)


_filters = [OpenApiParameter("category", str), OpenApiParameter("subcategory", str),
            OpenApiParameter("approved", bool, description="true: approved ones; false: awaiting approval"),
            OpenApiParameter("is_active", bool)]


def _flag(name: str, value: str | None) -> bool | None:
    if value in (None, ""):
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise serializers.ValidationError({name: ["Use true or false."]})


class KnowledgeListView(generics.ListAPIView):
    permission_classes = [StaffCurates]
    serializer_class = KnowledgeEntrySerializer

    def get_queryset(self):
        params = self.request.query_params
        rows = KnowledgeEntry.objects.select_related("approved_by").order_by("category", "subcategory", "id")
        for name in ("category", "subcategory"):
            if params.get(name) is not None:
                rows = rows.filter(**{name: params[name]})
        approved = _flag("approved", params.get("approved"))
        if approved is not None:
            rows = rows.filter(approved_at__isnull=not approved)
        active = _flag("is_active", params.get("is_active"))
        if active is not None:
            rows = rows.filter(is_active=active)
        return rows

    @extend_schema(parameters=_filters)
    def get(self, request, *args, **kwargs):
        """The Q&A pairs, by category and subcategory (staff)."""
        return super().get(request, *args, **kwargs)

    @extend_schema(request=KnowledgeEntryWrite, responses={201: KnowledgeEntrySerializer})
    def post(self, request):
        """Add a Q&A pair (curators); `approved: true` approves it at once. Its embedding is queued."""
        form = KnowledgeEntryWrite(data=request.data)
        form.is_valid(raise_exception=True)
        entry = services.knowledge_entry_create(user=request.user, **form.validated_data)
        return Response(KnowledgeEntrySerializer(entry).data, status=status.HTTP_201_CREATED)


def _entry(entry_id) -> KnowledgeEntry:
    entry = KnowledgeEntry.objects.select_related("approved_by").filter(pk=entry_id).first()
    if entry is None:
        raise NotFound("No such Q&A pair.")
    return entry


class KnowledgeDetailView(APIView):
    permission_classes = [StaffCurates]

    @extend_schema(responses=KnowledgeEntrySerializer)
    def get(self, request, entry_id: int):
        return Response(KnowledgeEntrySerializer(_entry(entry_id)).data)

    @extend_schema(request=KnowledgeEntryPatch, responses=KnowledgeEntrySerializer)
    def patch(self, request, entry_id: int):
        """Change fields (curators); a changed question is embedded again in the background."""
        _entry(entry_id)
        form = KnowledgeEntryPatch(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        entry = services.knowledge_entry_update(entry_id=entry_id, user=request.user, **form.validated_data)
        return Response(KnowledgeEntrySerializer(_entry(entry.pk)).data)


class KnowledgeApproveView(APIView):
    permission_classes = [StaffCurates]

    @extend_schema(request=None, responses=KnowledgeEntrySerializer)
    def post(self, request, entry_id: int):
        """Approve (records you and now; makes it active) and queue its embedding unless it is ready."""
        _entry(entry_id)
        entry = services.knowledge_entry_approve_and_embed(entry_id=entry_id, user=request.user)
        return Response(KnowledgeEntrySerializer(_entry(entry.pk)).data)


class KnowledgeRetireView(APIView):
    permission_classes = [StaffCurates]

    @extend_schema(request=None, responses=KnowledgeEntrySerializer)
    def post(self, request, entry_id: int):
        """Retire it: it stops answering (kept, and can be approved again)."""
        entry = services.knowledge_entry_retire(entry=_entry(entry_id))
        return Response(KnowledgeEntrySerializer(entry).data)
