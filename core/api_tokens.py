"""Personal API tokens (DRF's one token per user): revoked and rotated by their user, ended by a
password change or a disabled account.

The rule for a browser session's logout: it ends the session only, never the API token. A token
belongs to the scripts and integrations the user set up (`/v1`, MCP, the REST API), which keep
working while the person signs in and out of the pages; the user ends a token with
`DELETE /api/auth/token/` or replaces it with `POST /api/auth/token/rotate/`, and changing the
password (or an administrator disabling the account) ends it everywhere.
"""
from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView


def token_revoke(*, user) -> bool:
    """End the user's API token; True if there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


def token_rotate(*, user) -> Token:
    """A new API token for the user; the old one stops working at once."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def end_tokens_on_credential_change(sender, instance, raw=False, **kwargs) -> None:
    """`pre_save` of the user model: a new password or a disabled account ends the API token."""
    if raw or instance.pk is None:
        return
    update_fields = kwargs.get("update_fields")
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return  # e.g. `last_login` at every sign-in: no extra query
    before = type(instance).objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    if before["password"] != instance.password or (before["is_active"] and not instance.is_active):
        Token.objects.filter(user_id=instance.pk).delete()


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
