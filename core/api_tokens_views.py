"""The HTTP side of personal API tokens: `DELETE /api/auth/token/` (revoke) and
`POST /api/auth/token/rotate/` (rotate), over the services in `core/api_tokens.py`."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_tokens import token_revoke, token_rotate


TokenResponse = inline_serializer("TokenResponse", {"token": serializers.CharField()})


class TokenRotateView(APIView):
    """`POST /api/auth/token/rotate/`: replace your API token with a new one."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: TokenResponse}, summary="Replace your API token",
                   description="The old token stops working at once; the new one is returned.")
    def post(self, request):
        return Response({"token": token_rotate(user=request.user).key})


class TokenRevokeMixin:
    """`DELETE /api/auth/token/` on the token view: end your API token (signed in by it or a session)."""

    request: object

    def get_authenticators(self):
        if getattr(self, "request", None) is not None and self.request.method == "DELETE":
            return [TokenAuthentication(), SessionAuthentication()]
        return super().get_authenticators()  # type: ignore[misc]

    def get_permissions(self):
        if self.request.method == "DELETE":
            return [IsAuthenticated()]
        return super().get_permissions()  # type: ignore[misc]

    @extend_schema(request=None, responses={204: None}, summary="End your API token",
                   description="The token stops working at once (on open WebSockets within seconds).")
    def delete(self, request):
        token_revoke(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
