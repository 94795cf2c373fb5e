"""Sign-out that also ends the provider's session for OpenID Connect sign-ins."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.views import LogoutView
from django.http import HttpResponseRedirect

from identity.config import OIDC_BACKEND


class DirectoryLogoutView(LogoutView):
    """Django's LogoutView; after an OpenID Connect sign-in it continues to the provider's
    end_session_endpoint (RP-initiated logout), which sends the browser back to LOGOUT_REDIRECT_URL."""

    def post(self, request, *args, **kwargs):
        provider_url = None
        if getattr(settings, "OIDC_ENABLED", False) and request.session.get(BACKEND_SESSION_KEY) == OIDC_BACKEND:
            from identity.oidc import provider_logout_url

            provider_url = provider_logout_url(request)  # before logout: it needs the session's id token
        response = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(provider_url) if provider_url else response
