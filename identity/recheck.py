"""Membership that follows the directory: a directory user is re-checked against the LDAP server
or the OpenID Connect provider at most every DIRECTORY_RECHECK_SECONDS, whether they come with a
session or with an API token (docs/identity.md).

The re-check is per user: `DirectoryIdentity.checked_at` says when the directory last vouched for
them, so a script's token and the person's browser share one question to the directory.
"""
from __future__ import annotations

import datetime
import logging
import time

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, logout
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from identity.config import LDAP_BACKEND, OIDC_BACKEND
from identity.models import DirectoryIdentity, DirectorySource
from identity.services import directory_user_deactivate, tokens_revoke_all

log = logging.getLogger(__name__)

CHECKED_AT = "identity_checked_at"


def directory_sources() -> list[str]:
    """The directories this deployment signs in with (an identity of a switched-off one is not asked)."""
    return [source for source, on in ((DirectorySource.LDAP, getattr(settings, "LDAP_ENABLED", False)),
                                      (DirectorySource.OIDC, getattr(settings, "OIDC_ENABLED", False))) if on]


def recheck_due(user_ref="user_id", now: datetime.datetime | None = None) -> Exists:
    """An expression for querysets: whether the user `user_ref` names has a directory identity
    whose last check is older than DIRECTORY_RECHECK_SECONDS (one query with the token lookup)."""
    now = now or timezone.now()
    stale = now - datetime.timedelta(seconds=settings.DIRECTORY_RECHECK_SECONDS)
    return Exists(DirectoryIdentity.objects.filter(user_id=OuterRef(user_ref), source__in=directory_sources()).filter(
        Q(checked_at__isnull=True) | Q(checked_at__lt=stale)))


def mark_checked_on_sign_in(sender, request, user, **kwargs) -> None:
    """A sign-in through a directory has just read the user's groups: the next check is due later."""
    if request is not None and hasattr(request, "session") and \
            request.session.get(BACKEND_SESSION_KEY) in (LDAP_BACKEND, OIDC_BACKEND):
        request.session[CHECKED_AT] = time.time()
        source = DirectorySource.LDAP if request.session[BACKEND_SESSION_KEY] == LDAP_BACKEND else DirectorySource.OIDC
        DirectoryIdentity.objects.filter(user=user, source=source).update(checked_at=timezone.now(),
                                                                           signed_out_at=None)


def directory_user_recheck(*, user_id: int, sources: list[str] | None = None) -> bool:
    """Ask the directory about the user when their last check is older than the interval; False
    when their sign-in must not hold (a session ends, an API token is refused).

    - LDAP: the service account searches the user and re-reads their groups. A user the search no
      longer finds is made inactive and loses every API token.
    - OpenID Connect: the stored grant is refreshed, the user info read, the groups claim applied.
      A refused refresh ends every API token (the provider no longer vouches for the user) unless
      the user signed out of ragsite since, which ended the grant: then the grant is dropped and
      sessions and tokens are refused until the next sign-in.
    - A directory that cannot be reached: False, nothing ended (fail closed).

    The identity rows are locked while the directory is asked, so concurrent requests of one user
    ask once (a rotated refresh token is used once).
    """
    sources = directory_sources() if sources is None else sources
    interval = datetime.timedelta(seconds=settings.DIRECTORY_RECHECK_SECONDS)
    with transaction.atomic():
        identities = list(DirectoryIdentity.objects.select_for_update().select_related("user").filter(
            user_id=user_id, source__in=sources).order_by("pk"))
        for identity in identities:
            if identity.checked_at is not None and timezone.now() - identity.checked_at < interval:
                continue
            if not identity.user.is_active:
                return False
            if not _recheck(identity):
                return False
            DirectoryIdentity.objects.filter(pk=identity.pk).update(checked_at=timezone.now())
    return True


def _recheck(identity: DirectoryIdentity) -> bool:
    user = identity.user
    if identity.source == DirectorySource.LDAP:
        from identity.ldap import DirectoryUnavailable, ldap_recheck

        try:
            present = ldap_recheck(user)
        except DirectoryUnavailable as exc:
            log.warning("LDAP re-check of %s failed, refused for now: %s", user.username, exc)
            return False
        if not present:
            log.info("LDAP no longer has %s: account deactivated, API tokens ended", user.username)
            directory_user_deactivate(user_id=user.pk)
            return False
        return True
    import httpx

    from identity.oidc import GrantEnded, ProviderRefused, oidc_recheck

    try:
        oidc_recheck(identity)
    except GrantEnded as exc:
        log.info("OpenID Connect grant of %s ended (%s): refused until the next sign-in", user.username, exc)
        DirectoryIdentity.objects.filter(pk=identity.pk).update(refresh_token="", access_token="")
        return False
    except ProviderRefused as exc:
        # The provider no longer vouches for this user (disabled, grant revoked): the scripts
        # they set up stop too, until they sign in again and make new tokens.
        log.info("OpenID Connect provider refused %s, API tokens ended: %s", user.username, exc)
        DirectoryIdentity.objects.filter(pk=identity.pk).update(refresh_token="", access_token="")
        tokens_revoke_all(user_id=user.pk)
        return False
    except (httpx.HTTPError, ValueError, KeyError) as exc:  # unreachable, or an answer that is not OIDC
        log.warning("OpenID Connect re-check of %s failed, refused for now: %s", user.username, exc)
        return False
    return True


def directory_session_recheck(request) -> bool:
    """Re-check the signed-in directory user when the session's check is due; False when the
    session must end (see `directory_user_recheck`)."""
    backend = request.session.get(BACKEND_SESSION_KEY)
    if backend not in (LDAP_BACKEND, OIDC_BACKEND):
        return True
    user = request.user
    if not user.is_authenticated:
        return True
    if time.time() - float(request.session.get(CHECKED_AT, 0)) < settings.DIRECTORY_RECHECK_SECONDS:
        return True
    source = DirectorySource.LDAP if backend == LDAP_BACKEND else DirectorySource.OIDC
    if not directory_user_recheck(user_id=user.pk, sources=[source]):
        return False
    request.session[CHECKED_AT] = time.time()
    return True


class DirectoryRecheckMiddleware:
    """After AuthenticationMiddleware: ends the session of a directory user the directory dropped."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if hasattr(request, "session") and not directory_session_recheck(request):
            logout(request)
        return self.get_response(request)
