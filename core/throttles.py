"""Rate limits with DRF's own throttles: sign-in (token and login page) and asking questions.

Rates come from settings at every check (`THROTTLE_RATES`, from `THROTTLE_SIGNIN` and
`THROTTLE_QUESTIONS`), not from DRF's import-time copy, so a deployment (and a test) can change
them; an empty rate or `off` switches a limit off. Counts live in the default cache (the
database), so every web process shares them.
"""
from __future__ import annotations

import math

from django.conf import settings
from django.contrib.auth import views as auth_views
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle


class _RateFromSettings:
    scope: str

    def get_rate(self):
        rate = (settings.THROTTLE_RATES.get(self.scope) or "").strip()
        return None if rate.lower() in ("", "off", "none") else rate


class SignInThrottle(_RateFromSettings, SimpleRateThrottle):
    """Sign-in attempts per client address (`/api/auth/token/` and the login page count together)."""

    scope = "signin"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class QuestionThrottle(_RateFromSettings, UserRateThrottle):
    """Questions asked per user (the chat API, `/v1/chat/completions`, the MCP `ask` tool)."""

    scope = "questions"


def retry_after(throttle: SimpleRateThrottle) -> int:
    wait = throttle.wait()
    return max(1, math.ceil(wait)) if wait is not None else 1


class ThrottledObtainAuthToken(ObtainAuthToken):
    """`POST /api/auth/token/`: DRF's token view, throttled per client address."""

    throttle_classes = [SignInThrottle]


class ThrottledLoginView(auth_views.LoginView):
    """The login page; a POST over the sign-in rate gets the page again with 429 and the wait."""

    def post(self, request, *args, **kwargs):
        throttle = SignInThrottle()
        if not throttle.allow_request(request, self):
            seconds = retry_after(throttle)
            context = self.get_context_data(form=self.get_form_class()(request))
            context["throttled"] = f"Too many sign-in attempts; try again in {seconds} seconds."
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(seconds)
            return response
        return super().post(request, *args, **kwargs)
