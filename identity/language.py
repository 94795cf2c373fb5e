"""The language a person reads ragsite in: their saved choice, else the browser's, else the site's.

The choice is saved per user (`LanguageChoice`) and copied into the session at sign-in, so a
request reads it from the session it loads anyway (no query per request). Without one, Django's
LocaleMiddleware decides: the language cookie (set by the switcher when signed out), then
`Accept-Language`, then `LANGUAGE_CODE`.
"""
from __future__ import annotations

from django.conf import settings
from django.middleware.locale import LocaleMiddleware
from django.utils import translation
from django.views.decorators.http import require_POST
from django.views.i18n import set_language

SESSION_KEY = "ragsite_language"


def supported(code: str | None) -> bool:
    """Whether `code` is one of the site's languages (settings.LANGUAGES)."""
    return bool(code) and code in {c for c, _name in settings.LANGUAGES}


def language_choice_save(*, user, language: str) -> None:
    """Save `language` as the user's choice; refuses a language the site does not have."""
    from identity.models import LanguageChoice

    if not supported(language):
        raise ValueError(f"not a site language: {language!r}")
    LanguageChoice.objects.update_or_create(user=user, defaults={"language": language})


def language_choice_of(user) -> str | None:
    """The user's saved language, or None when they chose none (or it is no longer offered)."""
    from identity.models import LanguageChoice

    code = LanguageChoice.objects.filter(user=user).values_list("language", flat=True).first()
    return code if supported(code) else None


def copy_choice_on_sign_in(sender, request, user, **kwargs) -> None:
    """At sign-in, the saved choice goes into the session (read by every request after)."""
    if request is None or not hasattr(request, "session"):
        return
    code = language_choice_of(user)
    if code:
        request.session[SESSION_KEY] = code
    else:
        request.session.pop(SESSION_KEY, None)


class UserLanguageMiddleware(LocaleMiddleware):
    """LocaleMiddleware that puts the signed-in user's saved choice first."""

    def process_request(self, request):
        session = getattr(request, "session", None)
        code = session.get(SESSION_KEY) if session is not None else None
        if supported(code):
            translation.activate(code)
            request.LANGUAGE_CODE = translation.get_language()
            return
        super().process_request(request)


@require_POST
def set_language_view(request):
    """Django's set_language (the cookie, the redirect back), and the choice saved for a signed-in user."""
    response = set_language(request)
    code = request.POST.get("language")
    if supported(code) and request.user.is_authenticated:
        language_choice_save(user=request.user, language=code)
        request.session[SESSION_KEY] = code
    return response
