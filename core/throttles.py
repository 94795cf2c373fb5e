"""Rate limits: asking questions (a DRF throttle per user) and the three password sign-ins
(the login page, the admin's login, `POST /api/auth/token/` in identity/tokens_api.py) through
`core.signin`.

Rates come from settings at every check (`THROTTLE_RATES`, from `THROTTLE_SIGNIN` and
`THROTTLE_QUESTIONS`), not from DRF's import-time copy, so a deployment (and a test) can change
them; an empty rate or `off` switches a limit off. Counts live in the default cache (the
database), so every web process shares them.
"""
from __future__ import annotations

import math

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from rest_framework import exceptions
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from core.signin import signin_record, signin_wait, wait_message


class _RateFromSettings:
    scope: str

    def get_rate(self):
        rate = (settings.THROTTLE_RATES.get(self.scope) or "").strip()
        return None if rate.lower() in ("", "off", "none") else rate


class QuestionThrottle(_RateFromSettings, UserRateThrottle):
    """Questions asked per user (the chat API, `/v1/chat/completions`, the MCP `ask` tool)."""

    scope = "questions"


def retry_after(throttle: SimpleRateThrottle) -> int:
    wait = throttle.wait()
    return max(1, math.ceil(wait)) if wait is not None else 1


class _SignInLimit:
    """A sign-in form checked against `core.signin`: refused with the wait while one runs."""

    request: object
    cleaned_data: dict
    wait = 0

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = self.request.META.get("REMOTE_ADDR", "") if self.request is not None else ""
        checked = bool(username and self.cleaned_data.get("password"))
        if checked:
            self.wait = signin_wait(username=username, address=address)
            if self.wait:
                raise ValidationError(wait_message(self.wait), code="throttled")
        try:
            cleaned = super().clean()  # type: ignore[misc]
        except ValidationError:
            if checked:
                signin_record(username=username, address=address, succeeded=False)
            raise
        if checked:
            signin_record(username=username, address=address, succeeded=True)
        return cleaned


class LimitedAuthenticationForm(_SignInLimit, AuthenticationForm):
    """The login page's form, with the sign-in limits."""


class LimitedAdminAuthenticationForm(_SignInLimit, AdminAuthenticationForm):
    """The admin's login form, with the sign-in limits (it had none)."""


class ThrottledLoginView(auth_views.LoginView):
    """The login page; a sign-in refused by the limits gets the page again with 429 and the wait."""

    authentication_form = LimitedAuthenticationForm

    def form_invalid(self, form):
        if not form.wait:
            return super().form_invalid(form)
        context = self.get_context_data(form=form)
        context["throttled"] = wait_message(form.wait)
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(form.wait)
        return response
