"""LDAP / Active Directory sign-in through django-auth-ldap; groups mirrored by identity's rule."""
from __future__ import annotations

import logging
import threading

import ldap
from django.utils.translation import gettext
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django_auth_ldap.backend import LDAPBackend, _LDAPUser, ldap_error

from identity.models import DirectoryIdentity, DirectorySource
from identity.services import directory_groups_sync

log = logging.getLogger(__name__)


class DirectoryUnavailable(Exception):
    """The LDAP server could not be asked (down, bind refused, TLS failure)."""


class DirectoryLDAPBackend(LDAPBackend):
    """Password sign-in against the directory (service bind, user search, bind as the user)."""

    def get_or_build_user(self, username, ldap_user):
        user, built = super().get_or_build_user(username, ldap_user)
        if not built and not DirectoryIdentity.objects.filter(user=user, source=DirectorySource.LDAP).exists():
            # A local account of that name is never taken over silently (docs/identity.md).
            log.warning("LDAP sign-in of %r refused: a local account holds that user name", username)
            raise PermissionDenied(gettext("a local account holds that user name"))
        return user, built

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is None:
            return None
        if not user.is_active:
            return None
        self._after_read(user)
        return user

    def populate_user(self, username):
        user = super().populate_user(username)
        if user is not None:
            self._after_read(user)
        return user

    def _after_read(self, user) -> None:
        DirectoryIdentity.objects.get_or_create(source=DirectorySource.LDAP, subject=user.username,
                                                defaults={"user": user})
        names = user.ldap_user.group_names if getattr(settings, "AUTH_LDAP_GROUP_SEARCH", None) else set()
        directory_groups_sync(user=user, source=DirectorySource.LDAP, directory_names=names,
                              rule=settings.LDAP_GROUP_RULE)

    def directory_user_exists(self, username: str) -> bool:
        """Whether the user search still finds `username` (with the service bind).

        django-auth-ldap reports a failed search as "no such user" (it logs the error and sends
        `ldap_error`): the errors it reports during the search are raised here as
        DirectoryUnavailable, so an unreachable server never reads as a deleted user.
        """
        errors: list[BaseException] = []
        thread = threading.get_ident()

        def caught(sender, exception=None, **kwargs):
            if threading.get_ident() == thread:
                errors.append(exception)

        ldap_error.connect(caught, weak=False)
        try:
            found = _LDAPUser(self, username=username).attrs is not None
        except ldap.LDAPError as exc:
            raise DirectoryUnavailable(str(exc)) from exc
        finally:
            ldap_error.disconnect(caught)
        if errors:
            raise DirectoryUnavailable(str(errors[0]))
        return found


def ldap_recheck(user) -> bool:
    """Re-read the user and their groups with the service bind; False when the directory no longer
    has them. Raises DirectoryUnavailable when the server cannot be asked."""
    backend = DirectoryLDAPBackend()
    identity = user.directory_identities.filter(source=DirectorySource.LDAP).first()
    username = identity.subject if identity else user.username
    if not backend.directory_user_exists(username):
        return False
    return backend.populate_user(username) is not None
