"""`GET /api/usage/` (staff who may read the usage report, `usage.view_usageday`, and curators for their
collections' rows): the daily usage figures for a group, a user, a collection and a date range."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from usage.selectors import usage_curated_collections, usage_filter_parse, usage_report, usage_sees_all

_parameters = [
    OpenApiParameter("group", str, description="A group's id or name: its members' usage"),
    OpenApiParameter("user", str, description="A user's id or user name"),
    OpenApiParameter("collection", str, description="A collection's id or slug"),
    OpenApiParameter("from", OpenApiTypes.DATE, description="First day (YYYY-MM-DD; default: 29 days before `to`)"),
    OpenApiParameter("to", OpenApiTypes.DATE, description="Last day (YYYY-MM-DD; default: today)"),
]


class UsageReaders(BasePermission):
    """Active staff who read the whole report (usage.view_usageday, superusers) or curate a collection."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_active and user.is_staff):
            return False
        return usage_sees_all(user) or bool(usage_curated_collections(user))


class UsageView(APIView):
    """Per day: questions, answers by mode, unanswered rate, tokens in/out per chat model, cited documents,
    indexing jobs, minutes and pages; and the totals of the range (docs/usage.md)."""

    # The admin report's rule: staff with its permission read every row, a curator his collections'
    # rows; anyone else (staff without either included) gets 403.
    permission_classes = [UsageReaders]

    @extend_schema(parameters=_parameters, responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        # The admin report's rule: a curator without the model permission reads his collections' rows only.
        return Response(usage_report(usage_filter_parse(request.query_params, viewer=request.user)))
