"""Personal API tokens (DRF's one token per user): revoked and rotated by their user, ended by a
password change or a disabled account.

The rule for a browser session's logout: it ends the session only, never the API token. A token
belongs to the scripts and integrations the user set up (`/v1`, MCP, the REST API), which keep
working while the person signs in and out of the pages; the user ends a token with
`DELETE /api/auth/token/` or replaces it with `POST /api/auth/token/rotate/`, and changing the
password (or an administrator disabling the account) ends it everywhere.

The services are here; their two HTTP endpoints are in `core/api_tokens_views.py`.
"""
from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token


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
