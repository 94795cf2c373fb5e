"""Membership that follows the directory: a directory user's session is re-checked against the
LDAP server or the OpenID Connect provider every DIRECTORY_RECHECK_SECONDS (docs/identity.md)."""
from __future__ import annotations

import logging
import time

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, logout

from identity.config import LDAP_BACKEND, OIDC_BACKEND
from identity.services import directory_user_deactivate
from identity.tokens import tokens_revoke_all

log = logging.getLogger(__name__)

CHECKED_AT = "identity_checked_at"


def mark_checked_on_sign_in(sender, request, user, **kwargs) -> None:
    """A sign-in through a directory has just read the user's groups: the next check is due later."""
    if request is not None and hasattr(request, "session") and \
            request.session.get(BACKEND_SESSION_KEY) in (LDAP_BACKEND, OIDC_BACKEND):
        request.session[CHECKED_AT] = time.time()


def directory_session_recheck(request) -> bool:
    """Re-check the signed-in directory user when due; False when the session must end.

    The directory answering "no such user" (LDAP) or refusing the refresh token (OIDC) ends the
    session and the user's API tokens; an LDAP user the directory no longer has is also made
    inactive, which ends their other sessions. A directory that cannot be reached ends the session too (fail closed).
    """
    backend = request.session.get(BACKEND_SESSION_KEY)
    if backend not in (LDAP_BACKEND, OIDC_BACKEND):
        return True
    user = request.user
    if not user.is_authenticated:
        return True
    if time.time() - float(request.session.get(CHECKED_AT, 0)) < settings.DIRECTORY_RECHECK_SECONDS:
        return True
    if backend == LDAP_BACKEND:
        from identity.ldap import DirectoryUnavailable, ldap_recheck

        try:
            present = ldap_recheck(user)
        except DirectoryUnavailable as exc:
            log.warning("LDAP re-check of %s failed, session ended: %s", user.username, exc)
            return False
        if not present:
            log.info("LDAP no longer has %s: account deactivated", user.username)
            directory_user_deactivate(user_id=user.pk)
            return False
    else:
        import httpx

        from identity.oidc import ProviderRefused, oidc_recheck

        try:
            oidc_recheck(request)
        except ProviderRefused as exc:
            # The provider no longer vouches for this user (disabled, grant revoked): the scripts
            # they set up stop too, until they sign in again and make new tokens.
            log.info("OpenID Connect provider refused %s, session and API tokens ended: %s", user.username, exc)
            tokens_revoke_all(user_id=user.pk)
            return False
        except (httpx.HTTPError, ValueError, KeyError) as exc:  # unreachable, or an answer that is not OIDC
            log.warning("OpenID Connect re-check of %s failed, session ended: %s", user.username, exc)
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
