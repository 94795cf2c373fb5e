"""What the sign-in page offers: the password form, the single sign-on button, or both; and the
language switcher's choices, each language named in itself ("English", "Čeština": settings.LANGUAGES)."""
from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext


def sign_in(request) -> dict:
    oidc = getattr(settings, "OIDC_ENABLED", False)
    return {
        "password_sign_in": settings.LOCAL_LOGIN or getattr(settings, "LDAP_ENABLED", False),
        "sso_error": gettext("Single sign-on did not complete. Try again, or ask your administrator.")
        if oidc and request.GET.get("sso") == "failed" else "",
        # Untranslated on purpose: a reader looks for their own language under its own name.
        "site_languages": settings.LANGUAGES,
        "oidc_sign_in_label": gettext("Sign in with %(name)s") % {"name": settings.OIDC_PROVIDER_NAME} if oidc else "",
    }
