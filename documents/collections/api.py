"""The collections API: the collections a user reads or curates; curators change them."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status, viewsets
from rest_framework.response import Response

from documents.collections.services import (
    collection_create,
    collection_delete,
    collection_get,
    collection_list,
    collection_update,
)
from documents.models import Collection
from documents.serializers import CollectionSerializer, CollectionWriteSerializer


class CollectionViewSet(viewsets.ViewSet):
    """GET lists what you read (and curate); POST creates (superusers, staff with the permission);
    PATCH and DELETE are for the collection's curators."""

    def _data(self, collections, *, many: bool):
        curated = set(Collection.objects.curated_by(self.request.user).values_list("pk", flat=True))
        return CollectionSerializer(collections, many=many, context={"curated_ids": curated}).data

    @extend_schema(responses=CollectionSerializer(many=True))
    def list(self, request):
        return Response(self._data(collection_list(user=request.user), many=True))

    @extend_schema(responses=CollectionSerializer)
    def retrieve(self, request, pk=None):
        return Response(self._data(collection_get(user=request.user, ref=pk), many=False))

    @extend_schema(request=CollectionWriteSerializer, responses={201: CollectionSerializer})
    def create(self, request):
        form = CollectionWriteSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        collection = collection_create(user=request.user, **form.validated_data)
        return Response(self._data(collection_get(user=request.user, ref=collection.pk), many=False),
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=CollectionWriteSerializer(partial=True), responses=CollectionSerializer)
    def partial_update(self, request, pk=None):
        form = CollectionWriteSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        changes = {key: value for key, value in form.validated_data.items() if key in request.data}
        collection = collection_update(user=request.user, ref=pk, changes=changes)
        return Response(self._data(collection_get(user=request.user, ref=collection.pk), many=False))

    @extend_schema(parameters=[OpenApiParameter("confirm", bool, description="Required when it holds documents")],
                   responses={204: None, 202: None})
    def destroy(self, request, pk=None):
        """Delete the collection with its documents (confirm=true when it holds any); big ones in the background."""
        confirm = request.query_params.get("confirm", "").lower() in ("1", "true", "yes")
        result = collection_delete(user=request.user, ref=pk, confirm=confirm)
        if result["background"]:
            return Response({"documents": result["documents"], "background": True}, status=status.HTTP_202_ACCEPTED)
        return Response(status=status.HTTP_204_NO_CONTENT)
