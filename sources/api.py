"""`/api/sources/` (staff): the sources of the collections the caller curates, their runs, "sync now", and
the quarantine (restore, delete). Credentials are write-only (`secret`): answers say only whether one is
stored (`has_secret`)."""
from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from core.reasons import render as render_reason
from documents.models import Collection
from sources.kinds import CONNECTORS
from sources.models import Source, SourceItem, SyncRun
from sources.secrets import encrypt
from sources.services import (curated_sources, quarantine_delete, quarantine_restore, source_next_run,
                              source_schedule, source_sync_now)


class SourceSerializer(serializers.ModelSerializer):
    secret = serializers.CharField(write_only=True, required=False, allow_blank=True, trim_whitespace=False,
                                   help_text="The password or secret key; stored encrypted, never answered back.")
    has_secret = serializers.SerializerMethodField()
    next_run = serializers.SerializerMethodField()
    owner = serializers.PrimaryKeyRelatedField(read_only=True)

    class Meta:
        model = Source
        fields = ("id", "name", "collection", "owner", "kind", "location", "endpoint_url", "username", "secret",
                  "has_secret", "include_patterns", "exclude_patterns", "file_types", "max_size_mb",
                  "schedule_minutes", "grace_days", "is_active", "next_run", "created_at", "updated_at")
        read_only_fields = ("created_at", "updated_at")

    def get_has_secret(self, obj) -> bool:
        return bool(obj.credentials_encrypted)

    def get_next_run(self, obj) -> str | None:
        when = source_next_run(source=obj)
        return when.isoformat() if when else None

    def validate_collection(self, collection):
        if not Collection.objects.curated_by(self.context["request"].user).filter(pk=collection.pk).exists():
            raise serializers.ValidationError(gettext("You do not curate this collection."))
        return collection

    def validate_kind(self, kind):
        if kind not in CONNECTORS:
            raise serializers.ValidationError(gettext("This kind of source is not available."))
        return kind

    def _save(self, instance, validated):
        secret = validated.pop("secret", None)
        for name, value in validated.items():
            setattr(instance, name, value)
        if secret is not None:
            instance.credentials_encrypted = encrypt(secret)
        with transaction.atomic():
            instance.save()
            source_schedule(source=instance)
        return instance

    def create(self, validated):
        return self._save(Source(owner=self.context["request"].user), validated)

    def update(self, instance, validated):
        return self._save(instance, validated)


class SyncRunSerializer(serializers.ModelSerializer):
    error_text = serializers.SerializerMethodField()
    file_errors = serializers.SerializerMethodField()
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = SyncRun
        fields = ("id", "status", "trigger", "started_at", "finished_at", "duration_seconds", "listed", "done", "new",
                  "changed", "unchanged", "moved", "quarantined", "restored", "deleted", "failed", "skipped",
                  "bytes_downloaded", "error_text", "file_errors")

    def get_error_text(self, obj) -> str:
        return obj.error_text()

    def get_file_errors(self, obj) -> list[dict]:
        return [{"path": e.get("path", ""), "code": (e.get("reason") or {}).get("code", ""),
                 "message": render_reason(e.get("reason"))} for e in obj.errors or []]


class QuarantinedSerializer(serializers.ModelSerializer):
    document_title = serializers.CharField(source="document.title", read_only=True)

    class Meta:
        model = SourceItem
        fields = ("id", "source", "path", "document", "document_title", "quarantined_at")


class SourceViewSet(viewsets.ModelViewSet):
    permission_classes = [permissions.IsAdminUser]
    serializer_class = SourceSerializer

    def get_queryset(self):
        return curated_sources(self.request.user).order_by("name")

    @extend_schema(request=None, responses={202: None})
    @action(detail=True, methods=["post"])
    def sync(self, request, pk=None):
        """Queue a sync of the source now."""
        source = self.get_object()
        source_sync_now(source_id=source.pk)
        return Response(status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses=SyncRunSerializer(many=True))
    @action(detail=True, methods=["get"])
    def runs(self, request, pk=None):
        """The source's last 20 runs, newest first."""
        source = self.get_object()
        return Response(SyncRunSerializer(source.runs.all()[:20], many=True).data)


class QuarantineViewSet(mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Documents whose files vanished at their source; DELETE deletes the document now."""

    permission_classes = [permissions.IsAdminUser]
    serializer_class = QuarantinedSerializer

    def get_queryset(self):
        return (SourceItem.objects.filter(quarantined_at__isnull=False, document__isnull=False,
                                          source__in=curated_sources(self.request.user))
                .select_related("document").order_by("-quarantined_at", "id"))

    def perform_destroy(self, instance):
        quarantine_delete(item_id=instance.pk, user=self.request.user)

    @extend_schema(request=None, responses={200: None})
    @action(detail=True, methods=["post"])
    def restore(self, request, pk=None):
        """Keep the document: back in retrieval, no longer tied to the source."""
        item = self.get_object()
        quarantine_restore(item_id=item.pk, user=request.user)
        return Response(status=status.HTTP_200_OK)
