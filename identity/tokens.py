"""Personal API tokens: several named tokens per user, each with an optional expiry and a
last-used time; revoked and rotated by their user; ended by a password change or a disabled
account (including a directory user the directory dropped).

Only a token's SHA-256 digest is stored. The key (``rst_`` and 40 random characters) is returned
once, when the token is created or rotated, and can never be read back. A key of 256 random bits
needs no slow hash: nobody can guess it from its digest.

The rule for a browser session's logout: it ends the session only, never an API token. A token
belongs to the scripts and integrations the user set up (`/v1`, MCP, the REST API, WebSockets,
server-sent events), which keep working while the person signs in and out of the pages.

Every path that signs in by token calls `token_authenticate`; an open stream asks
`token_still_valid` again on a short interval. Both re-check a directory user against the
directory once DIRECTORY_RECHECK_SECONDS have passed (identity/recheck.py), as sessions are. The HTTP endpoints are in `identity/tokens_api.py`,
the page in `identity/views.py`.
"""
from __future__ import annotations

import datetime
import hashlib
import secrets

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils import translation
from django.utils.translation import gettext as _

from core.errors import ApplicationError, Gone, NotFound, PermissionDenied
from identity.language import language_choice_of
from identity.models import ApiToken
from identity.services import tokens_revoke_all

KEY_PREFIX = "rst_"
DEFAULT_NAME = "default"
# last_used_at is written at most once a minute per token: a busy script costs no write per call.
LAST_USED_RESOLUTION = datetime.timedelta(minutes=1)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def _new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(30)  # 40 characters, all allowed in HTTP headers


def _clean(*, name: str, expires_at: datetime.datetime | None) -> str:
    name = (name or "").strip()
    if not name:
        raise ApplicationError(_("Give the token a name."), code="token_name_missing")
    if len(name) > 100:
        raise ApplicationError(_("A token's name has at most 100 characters."), code="token_name_too_long")
    if expires_at is not None and expires_at <= timezone.now():
        raise ApplicationError(_("The expiry must be in the future."), code="token_expiry_past")
    return name


def _within_caller(made_with: ApiToken | None, expires_at: datetime.datetime | None) -> None:
    """A token that expires may make or renew only keys that expire no later than itself, so a stolen
    short-lived key cannot outlive its expiry; a token without expiry, or a signed-in session (None), any."""
    if made_with is None or made_with.expires_at is None:
        return
    if expires_at is None or expires_at > made_with.expires_at:
        limit = made_with.expires_at.isoformat()
        # In the user's saved language (else the request's): a token client sends no session.
        with translation.override(language_choice_of(made_with.user) or translation.get_language()):
            message = _("The token you call with expires at %(expires_at)s: it may create or rotate only tokens that expire "
                        "no later. Give an earlier expiry, or sign in to the site to make a longer-lived token.") % {
                            "expires_at": limit}
        raise PermissionDenied(message, code="token_outlives_caller", extra={"expires_at": limit})


def token_create(*, user, name: str = DEFAULT_NAME, expires_at: datetime.datetime | None = None,
                 made_with: ApiToken | None = None) -> ApiToken:
    """A new API token; its key is on the returned object as `.key`, this once only. `made_with`: the
    token the request came with (None: a signed-in session or a password), whose expiry bounds the new one."""
    name = _clean(name=name, expires_at=expires_at)
    _within_caller(made_with, expires_at)
    key = _new_key()
    token = ApiToken.objects.create(user=user, name=name, prefix=key[:8], digest=_digest(key), expires_at=expires_at)
    token.key = key  # type: ignore[attr-defined]
    return token


def token_list(*, user):
    """The user's tokens, newest first (never their keys: those are not stored)."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def token_revoke(*, user, token_id: int) -> None:
    """End one of the user's tokens at once; NotFound for another user's or a missing token."""
    deleted, _count = ApiToken.objects.filter(user=user, pk=token_id).delete()
    if not deleted:
        raise NotFound(_("No such token."), code="token_not_found")


def token_rotate(*, user, token_id: int, made_with: ApiToken | None = None) -> ApiToken:
    """A new key for one of the user's tokens (same name and expiry); the old key stops at once.
    `made_with`: the token the request came with, whose expiry bounds the token rotated (token_create)."""
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().filter(user=user, pk=token_id).first()
        if token is None:
            raise NotFound(_("No such token."), code="token_not_found")
        if token.expires_at is not None and token.expires_at <= timezone.now():
            raise Gone(_("This token has expired: create a new one."), code="token_expired")
        _within_caller(made_with, token.expires_at)
        key = _new_key()
        token.prefix, token.digest, token.rotated_at = key[:8], _digest(key), timezone.now()
        token.save(update_fields=["prefix", "digest", "rotated_at"])
    token.key = key  # type: ignore[attr-defined]
    return token


def token_default_rotate(*, user) -> ApiToken:
    """`POST /api/auth/token/rotate/` from a session: a new key for the newest token named "default",
    or a new "default" token when there is none."""
    token = ApiToken.objects.filter(user=user, name=DEFAULT_NAME).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())).order_by("-created_at", "-id").first()
    if token is None:
        return token_create(user=user, name=DEFAULT_NAME)
    return token_rotate(user=user, token_id=token.pk)


def token_authenticate(key: str | None) -> ApiToken | None:
    """The live token of this key (with `.user`), or None: unknown, expired, its user inactive, or a
    directory user the directory no longer vouches for or could not be asked about (fail closed).
    Records the use (at most once a minute)."""
    if not key:
        return None
    from identity.recheck import directory_user_recheck, recheck_due

    now = timezone.now()
    token = ApiToken.objects.select_related("user").annotate(directory_due=recheck_due(now=now)).filter(
        digest=_digest(key.strip())).first()
    if token is None or not token.user.is_active or (token.expires_at is not None and token.expires_at <= now):
        return None
    if token.directory_due and not (directory_user_recheck(user_id=token.user_id)  # type: ignore[attr-defined]
                                    and _live(token_id=token.pk, digest=token.digest, user_id=token.user_id).exists()):
        return None  # the directory dropped the user, or could not be asked (fail closed)
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)).update(last_used_at=now)
        token.last_used_at = now
    return token


def _live(*, token_id: int, digest: str, user_id: int):
    return ApiToken.objects.filter(pk=token_id, digest=digest, user_id=user_id, user__is_active=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))


def token_still_valid(*, token_id: int, digest: str, user_id: int) -> bool:
    """Whether a token an open stream signed in with still holds: not revoked, rotated (`digest` is
    the key's it signed in with) or expired, its user active and, for a directory user, still
    vouched for by the directory (re-asked once DIRECTORY_RECHECK_SECONDS have passed)."""
    from identity.recheck import directory_user_recheck, recheck_due

    due = _live(token_id=token_id, digest=digest, user_id=user_id).annotate(
        directory_due=recheck_due()).values_list("directory_due", flat=True).first()
    if due is None:
        return False
    if due:
        return directory_user_recheck(user_id=user_id) and _live(token_id=token_id, digest=digest,
                                                                 user_id=user_id).exists()
    return True


def end_tokens_on_credential_change(sender, instance, raw=False, **kwargs) -> None:
    """`pre_save` of the user model: a new password or a disabled account ends the user's tokens."""
    if raw or instance.pk is None:
        return
    update_fields = kwargs.get("update_fields")
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return  # e.g. `last_login` at every sign-in: no extra query
    before = type(instance).objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    if before["password"] != instance.password or (before["is_active"] and not instance.is_active):
        tokens_revoke_all(user_id=instance.pk)
