"""Per-group quotas, checked once where work is accepted: every call of the chat model (`model_call_check`:
a question from the chat page, REST, /v1 or MCP and its edited versions in chat.services.message_send, a
regenerated or retried answer, each further search of an agentic answer in chat.agent), an upload
(documents.services.document_upload) and an indexing job (retrieval/indexing/quotas.py, once its pages
are known).

A user's limits are those of the groups they belong to that have a quota, limit by limit the most
generous: an empty limit in any of them is no limit. A user in no group with a quota has no limits;
staff are exempt while QUOTAS_EXEMPT_STAFF is true (the default). Days and months end at midnight in
TIME_ZONE. Over a limit: QuotaExceeded (core/errors.py: HTTP 429), naming the limit and when it resets.
"""
from __future__ import annotations

from datetime import datetime, time, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import F, Sum
from django.utils import formats, timezone, translation
from django.utils.translation import gettext_lazy

from identity.language import language_choice_of

from core.errors import QuotaExceeded
from usage import metrics
from usage.models import GroupQuota, UsageDay

LIMITS = ("questions_per_day", "tokens_per_month", "pages_per_day")


class ModelCall:
    """The ways a chat model call is asked for; `CALL_LIMITS` says which limits hold each one back."""

    QUESTION = "question"  # a new question: the chat page, REST, /v1, MCP (chat.services.message_send)
    EDIT = "edit"  # a question edited into a new version (message_send with edit_of)
    REGENERATE = "regenerate"  # a new version of the last answer: counted as a question of the day
    RETRY = "retry"  # a failed or waiting answer written again: its question is counted already
    AGENT_SEARCH = "agent_search"  # one more search (and model round) of an agentic answer already accepted


_BOTH = ("questions_per_day", "tokens_per_month")
CALL_LIMITS: dict[str, tuple[str, ...]] = {
    ModelCall.QUESTION: _BOTH, ModelCall.EDIT: _BOTH, ModelCall.REGENERATE: _BOTH,
    ModelCall.RETRY: ("tokens_per_month",), ModelCall.AGENT_SEARCH: ("tokens_per_month",),
}
_LOCK_CLASS = 0x5553  # pg_advisory_xact_lock(class, user id): one question check at a time per limited user


def limits_for(user) -> dict[str, int | None]:
    """The user's limits (None: unlimited), the most generous of their groups' quotas."""
    if user is None or (user.is_staff and settings.QUOTAS_EXEMPT_STAFF):
        return dict.fromkeys(LIMITS)
    quotas = list(GroupQuota.objects.filter(group__user=user))
    if not quotas:
        return dict.fromkeys(LIMITS)
    limits: dict[str, int | None] = {}
    for name in LIMITS:
        values = [getattr(q, name) for q in quotas]
        limits[name] = None if any(v is None for v in values) else max(values)
    return limits


def _next_midnight() -> datetime:
    tomorrow = timezone.localdate() + timedelta(days=1)
    return timezone.make_aware(datetime.combine(tomorrow, time.min))


def _next_month() -> datetime:
    today = timezone.localdate()
    first = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
    return timezone.make_aware(datetime.combine(first, time.min))


MESSAGES = {
    "questions_per_day": gettext_lazy("Your group's limit of %(allowed)s questions per day is reached (%(used)s asked "
                                      "today). It resets at %(resets)s."),
    "tokens_per_month": gettext_lazy("Your group's limit of %(allowed)s chat model tokens per month is reached "
                                     "(%(used)s used). It resets at %(resets)s."),
    "pages_per_day": gettext_lazy("Your group's limit of %(allowed)s indexed pages per day is reached (%(used)s "
                                  "today). It resets at %(resets)s."),
}


def _refuse(user, limit: str, allowed: int, used: int, resets_at: datetime) -> QuotaExceeded:
    """The 429, in the user's saved language (else the request's): MCP and token clients have no session."""
    metrics.QUOTA_REFUSALS.labels(limit=limit).inc()
    retry_after = max(1, int((resets_at - timezone.now()).total_seconds()))
    with translation.override(language_choice_of(user) or translation.get_language()):
        when = formats.date_format(timezone.localtime(resets_at), "DATETIME_FORMAT")
        message = str(MESSAGES[limit]) % {"allowed": allowed, "used": used, "resets": when}
    return QuotaExceeded(message, extra={"limit": limit, "allowed": allowed, "used": used,
                                         "resets_at": resets_at.isoformat(), "retry_after": retry_after})


def _used_today(user, field: str) -> int:
    return int(UsageDay.objects.filter(user=user, day=timezone.localdate()).aggregate(n=Sum(field))["n"] or 0)


def _tokens_this_month(user) -> int:
    today = timezone.localdate()
    return int(UsageDay.objects.filter(user=user, day__gte=today.replace(day=1), day__lte=today)
               .aggregate(n=Sum(F("tokens_in") + F("tokens_out")))["n"] or 0)


def model_call_check(*, user, call: str, spent_tokens: int = 0) -> None:
    """Raise QuotaExceeded when the user may not make the chat model call `call` (a ModelCall) now: the one
    check every way of calling the model goes through. `spent_tokens`: tokens an answer being written has
    used already (not yet in the day's counters). Call a question's or a regeneration's check inside the
    transaction that saves it: concurrent ones of one limited user are then checked one after another."""
    held = CALL_LIMITS[call]
    limits = limits_for(user)
    if all(limits[name] is None for name in held):
        return
    if "questions_per_day" in held and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_CLASS, user.pk])
    if "questions_per_day" in held and (allowed := limits["questions_per_day"]) is not None:
        used = _used_today(user, "questions")
        if used >= allowed:
            raise _refuse(user, "questions_per_day", allowed, used, _next_midnight())
    if (allowed := limits["tokens_per_month"]) is not None:
        used = _tokens_this_month(user) + max(0, int(spent_tokens))
        if used >= allowed:
            raise _refuse(user, "tokens_per_month", allowed, used, _next_month())


def upload_check(*, user) -> None:
    """Raise QuotaExceeded when the user's pages for today are used up (before a file is stored)."""
    allowed = limits_for(user)["pages_per_day"]
    if allowed is None:
        return
    used = _used_today(user, "indexing_pages")
    if used >= allowed:
        raise _refuse(user, "pages_per_day", allowed, used, _next_midnight())


def indexing_check(*, user, pages: int | None) -> None:
    """Raise QuotaExceeded when indexing `pages` more (None: one) would pass the owner's pages for today."""
    allowed = limits_for(user)["pages_per_day"]
    if allowed is None:
        return
    used = _used_today(user, "indexing_pages")
    if used + (pages or 1) > allowed:
        raise _refuse(user, "pages_per_day", allowed, used, _next_midnight())
