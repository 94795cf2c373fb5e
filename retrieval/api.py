"""GET /api/search/, GET /api/topics/ and POST /api/embed/."""
from __future__ import annotations

import time

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView
from django.utils.translation import gettext

from retrieval.ai.clients import embedder_for
from retrieval.models import AiServer
from retrieval.search.scope import scope_for
from retrieval.search import retrieve
from retrieval.topics import topics_for
from core.errors import BadGateway, NotFound, PermissionDenied
from core.permissions import staff_with
from identity.audit import audit_passages
from identity.models import AuditAction, AuditChannel


class SearchQuery(serializers.Serializer):
    # Daphne (Twisted) drops a request line over 16 KB: 1,000 characters of any script fit even
    # percent-encoded (at most 9 bytes each).
    q = serializers.CharField(max_length=1000)
    conversation = serializers.IntegerField(required=False)
    category = serializers.CharField(required=False, allow_blank=True, max_length=100)
    subcategory = serializers.CharField(required=False, allow_blank=True, max_length=100)
    k = serializers.IntegerField(required=False, min_value=1, max_value=100)
    collection = serializers.CharField(required=False, max_length=100,
                                       help_text="Id or slug of a collection you read: search only it")


class SearchView(APIView):
    """The user's passages for a query: exactly what the chat would retrieve."""

    @extend_schema(parameters=[SearchQuery])
    def get(self, request):
        for name in ("conversation", "k"):  # DRF would read `k=` as "not given"; the schema says a number
            if request.query_params.get(name) == "":
                raise serializers.ValidationError({name: ["A whole number is required."]})
        params = SearchQuery(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        scope = scope_for(request.user, conversation=data.get("conversation"), collection=data.get("collection"))
        result = retrieve(request.user, data["q"], scope,
                          category=data.get("category"), subcategory=data.get("subcategory"), k=data.get("k"))
        audit_passages(action=AuditAction.SEARCH, user=request.user, segments=result.segments, via=AuditChannel.REST)
        return Response({"query": data["q"], "segments": result.segments, "trace": result.trace})


class EmbedRequest(serializers.Serializer):
    server_id = serializers.IntegerField()
    texts = serializers.ListField(child=serializers.CharField(allow_blank=True, max_length=20000),
                                  min_length=1, max_length=64)
    kind = serializers.ChoiceField(choices=["query", "passage"], default="query")


EMBED_PERMISSION = "retrieval.view_aiserver"  # staff who may see the AI servers in the admin
EXTERNAL_EMBED_PERMISSION = "retrieval.change_aiserver"


class EmbedView(APIView):
    """Staff who may view (or change) AI servers: embed texts with a server, to check it. An external server (text leaves
    the organisation) only for superusers and staff who may change AI servers, and never while external AI
    is disabled."""

    permission_classes = [staff_with(EMBED_PERMISSION, EXTERNAL_EMBED_PERMISSION)]

    @extend_schema(request=EmbedRequest)
    def post(self, request):
        form = EmbedRequest(data=request.data)
        form.is_valid(raise_exception=True)
        server = AiServer.objects.filter(pk=form.validated_data["server_id"]).first()
        if server is None:
            raise NotFound(gettext("No such AI server."))
        if server.is_external and not (request.user.is_superuser or request.user.has_perm(EXTERNAL_EMBED_PERMISSION)):
            raise PermissionDenied(gettext("Sending text to the external AI server '%(name)s' needs a superuser or "
                                           "the permission to change AI servers.") % {"name": server.name},
                                   code="permission_denied")
        client = embedder_for(server)
        started = time.perf_counter()
        texts = form.validated_data["texts"]
        try:
            vectors = client.embed_queries(texts) if form.validated_data["kind"] == "query" else client.embed_passages(texts)
        except Exception as exc:  # AiServerError and friends: show the reason to staff
            raise BadGateway(str(exc), code="ai_server_error") from exc
        return Response({"server_id": server.pk, "model": client.model, "dim": int(vectors.shape[1]),
                         "latency_ms": round((time.perf_counter() - started) * 1000, 1),
                         "vectors": [[round(float(x), 6) for x in v] for v in vectors]})


class TopicSerializer(serializers.Serializer):
    category = serializers.CharField(help_text="'' for subcategories used without a category")
    subcategories = serializers.ListField(child=serializers.CharField())


class TopicsResponse(serializers.Serializer):
    topics = TopicSerializer(many=True)


class TopicsView(APIView):
    """The topics questions can be asked under: those approved Q&A pairs, your documents and the
    collections you read actually use, with the subcategory mappings."""

    @extend_schema(responses=TopicsResponse)
    def get(self, request):
        return Response({"topics": topics_for(user=request.user)})
