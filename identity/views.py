"""Sign-out that also ends the provider's session for OpenID Connect sign-ins; the API tokens page."""
from __future__ import annotations

import datetime

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LogoutView
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods

from core.errors import ApplicationError
from identity.config import OIDC_BACKEND
from identity.tokens import token_create, token_list, token_revoke, token_rotate


class DirectoryLogoutView(LogoutView):
    """Django's LogoutView; after an OpenID Connect sign-in it continues to the provider's
    end_session_endpoint (RP-initiated logout), which sends the browser back to LOGOUT_REDIRECT_URL."""

    def post(self, request, *args, **kwargs):
        provider_url = None
        if getattr(settings, "OIDC_ENABLED", False) and request.session.get(BACKEND_SESSION_KEY) == OIDC_BACKEND:
            from identity.oidc import provider_logout_url

            from identity.oidc import oidc_signed_out

            provider_url = provider_logout_url(request)  # before logout: it needs the session's id token
            oidc_signed_out(request.user)
        response = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(provider_url) if provider_url else response


EXPIRY_CHOICES = [("", gettext_lazy("Never")), ("7", gettext_lazy("In 7 days")), ("30", gettext_lazy("In 30 days")),
                  ("90", gettext_lazy("In 90 days")), ("365", gettext_lazy("In a year"))]


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens_page(request):
    """The user menu's "API tokens": create (the key shown this once), rotate and end named tokens."""
    shown_key = shown_name = error = None
    status = 200
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "create":
                days = request.POST.get("expires", "")
                if days not in dict(EXPIRY_CHOICES):
                    raise ApplicationError(gettext("Choose an expiry from the list."), code="token_expiry_invalid")
                expires_at = timezone.now() + datetime.timedelta(days=int(days)) if days else None
                token = token_create(user=request.user, name=request.POST.get("name", ""), expires_at=expires_at)
            elif action in ("rotate", "revoke") and request.POST.get("token_id", "").isascii() and request.POST.get("token_id", "").isdigit():
                token_id = int(request.POST["token_id"])
                if action == "revoke":
                    token_revoke(user=request.user, token_id=token_id)
                    messages.success(request, gettext("The token has been ended."))
                    return redirect("api-tokens-page")
                token = token_rotate(user=request.user, token_id=token_id)
            else:
                raise ApplicationError(gettext("Unknown action."), code="bad_action")
            shown_key, shown_name = token.key, token.name  # type: ignore[attr-defined]
        except ApplicationError as exc:
            error, status = exc.message, exc.status_code
    response = render(request, "account/api_tokens.html", {
        "tokens": token_list(user=request.user), "shown_key": shown_key, "shown_name": shown_name,
        "error": error, "expiry_choices": EXPIRY_CHOICES, "now": timezone.now(),
        "name_value": request.POST.get("name", "") if error else "",
    }, status=status)
    response["Cache-Control"] = "no-store"  # a page showing a key is never cached
    return response
