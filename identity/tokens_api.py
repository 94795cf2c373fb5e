"""The HTTP side of personal API tokens (services in `identity/tokens.py`).

* `GET/POST /api/auth/tokens/` — your tokens (never their keys) / a new named token, its key shown once;
* `DELETE /api/auth/tokens/{id}/` — end one; `POST /api/auth/tokens/{id}/rotate/` — a new key for it;
* the one-token endpoints from before, kept: `POST /api/auth/token/` (user name and password → a new
  token), `DELETE /api/auth/token/` (end the token you call with; from a session, all your tokens),
  `POST /api/auth/token/rotate/` (a new key for the token you call with; from a session, for your
  "default" token).
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.signin import signin_record, signin_wait, wait_message
from identity.audit import audit_record
from identity.models import ApiToken, AuditAction
from identity.services import tokens_revoke_all
from identity.tokens import DEFAULT_NAME, token_create, token_default_rotate, token_list, token_revoke, token_rotate

TokenResponse = inline_serializer("TokenResponse", {"token": serializers.CharField()})


class ApiTokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "rotated_at", "expires_at", "last_used_at"]
        read_only_fields = fields


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    token = serializers.CharField(source="key", help_text="The key: shown this once, never again.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, label=_("Name"))
    expires_at = serializers.DateTimeField(required=False, allow_null=True, label=_("Expires at"))


def _calling_token(request) -> ApiToken | None:
    """The token the request came with (None: a signed-in session): its expiry bounds the tokens it makes."""
    return request.auth if isinstance(request.auth, ApiToken) else None


class ApiTokenListView(APIView):
    """`GET /api/auth/tokens/` (yours, newest first) and `POST` (a new token; its key shown once)."""

    pagination_class = None

    @extend_schema(responses={200: ApiTokenSerializer(many=True)}, summary="Your API tokens")
    def get(self, request):
        return Response(ApiTokenSerializer(token_list(user=request.user), many=True).data)

    @extend_schema(request=ApiTokenCreateSerializer, responses={201: ApiTokenCreatedSerializer},
                   summary="Create a named API token",
                   description="`token` is the key, returned this once: only its hash is stored. Called with "
                               "a token that expires, the new token must expire no later (403 "
                               "`token_outlives_caller` otherwise).")
    def post(self, request):
        data = ApiTokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token = token_create(user=request.user, name=data.validated_data["name"],
                             expires_at=data.validated_data.get("expires_at"), made_with=_calling_token(request))
        return Response(ApiTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)


class ApiTokenDetailView(APIView):
    """`DELETE /api/auth/tokens/{id}/`: end one of your tokens."""

    @extend_schema(request=None, responses={204: None}, summary="End one of your API tokens")
    def delete(self, request, token_id: int):
        token_revoke(user=request.user, token_id=token_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ApiTokenRotateView(APIView):
    """`POST /api/auth/tokens/{id}/rotate/`: a new key for one of your tokens."""

    @extend_schema(request=None, responses={200: ApiTokenCreatedSerializer}, summary="Rotate one of your API tokens",
                   description="The old key stops working at once; the new one is returned this once. Called "
                               "with a token that expires, only a token expiring no later may be rotated (403 "
                               "`token_outlives_caller`).")
    def post(self, request, token_id: int):
        return Response(ApiTokenCreatedSerializer(
            token_rotate(user=request.user, token_id=token_id, made_with=_calling_token(request))).data)


class TokenRotateView(APIView):
    """`POST /api/auth/token/rotate/`: replace your API token with a new one."""

    @extend_schema(request=None, responses={200: TokenResponse}, summary="Replace your API token",
                   description="Called with a token: that token gets a new key. From a signed-in session: "
                               "your token named \"default\" (created when you have none). The old key "
                               "stops working at once; the new one is returned.")
    def post(self, request):
        if isinstance(request.auth, ApiToken):
            token = token_rotate(user=request.user, token_id=request.auth.pk)
        else:
            token = token_default_rotate(user=request.user)
        return Response({"token": token.key})  # type: ignore[attr-defined]


class ObtainTokenView(APIView):
    """`POST /api/auth/token/` with a user name and password: a new API token (the sign-in limits
    apply: 429 and Retry-After); `DELETE` ends the token you call with (from a session: all yours)."""

    throttle_classes: list = []

    def get_authenticators(self):
        if getattr(self, "request", None) is not None and self.request.method == "POST":
            return []  # the password is the credential: no session (so no CSRF), no token
        return super().get_authenticators()

    def get_permissions(self):
        if self.request.method == "POST":
            return [AllowAny()]
        return [IsAuthenticated()]

    @extend_schema(request=AuthTokenSerializer, responses={200: TokenResponse}, summary="Sign in for an API token",
                   description="Every call creates a new token (named by an optional `name`, else "
                               "\"default\"): keys are stored hashed, so an earlier one cannot be returned.")
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        username = str(data.get("username") or "")
        address = request.META.get("REMOTE_ADDR", "")
        checked = bool(username and data.get("password"))
        if checked:
            wait = signin_wait(username=username, address=address)
            if wait:
                raise exceptions.Throttled(wait=wait, detail=wait_message(wait))
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        try:
            serializer.is_valid(raise_exception=True)
        except exceptions.ValidationError:
            if checked:
                signin_record(username=username, address=address, succeeded=False)
            raise
        if checked:
            signin_record(username=username, address=address, succeeded=True)
        user = serializer.validated_data["user"]
        token = token_create(user=user, name=str(data.get("name") or DEFAULT_NAME))
        audit_record(action=AuditAction.SIGN_IN, user=user, via="api_token", detail={"address": address})
        return Response({"token": token.key})  # type: ignore[attr-defined]

    @extend_schema(request=None, responses={204: None}, summary="End your API token",
                   description="Called with a token: that token ends. From a signed-in session (with its "
                               "CSRF token): all your tokens end. Open WebSockets and streams close within seconds.")
    def delete(self, request):
        if isinstance(request.auth, ApiToken):
            token_revoke(user=request.user, token_id=request.auth.pk)
        else:
            tokens_revoke_all(user_id=request.user.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)
