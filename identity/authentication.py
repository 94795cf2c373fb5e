"""DRF's authentication by named API token. Kept apart from identity/tokens.py: DRF imports its
DEFAULT_AUTHENTICATION_CLASSES while `rest_framework.views` loads, so this module imports nothing
that imports DRF's views (core.errors does)."""
from __future__ import annotations

from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions


class ApiTokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>` against the hashed named tokens; `request.auth` is the ApiToken."""

    def authenticate_credentials(self, key):
        from identity.tokens import token_authenticate

        token = token_authenticate(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid, expired or revoked token."))
        return token.user, token
