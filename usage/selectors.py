"""Usage figures per day for a filter (group, user, collection, date range): the admin report, its CSV
and `/api/usage/` read them here."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date, timedelta

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Q, Sum
from django.utils import timezone
from django.utils.dateparse import parse_date
from django.utils.translation import gettext

from core.errors import ApplicationError
from usage.models import ANSWER_MODES, UNANSWERED_MODES, UsageDay

DEFAULT_DAYS = 30
MAX_DAYS = 366
SUMMED = ("questions", *(f"answers_{mode}" for mode in ANSWER_MODES), "tokens_in", "tokens_out",
          "cited_documents", "indexing_jobs", "indexing_seconds", "indexing_pages")


@dataclass(frozen=True)
class UsageFilter:
    start: date
    end: date
    group: Group | None = None
    user: object | None = None
    collection_id: int | None = None
    # A curator's report: only these collections' rows (None: every row, for those who see all usage).
    collection_ids: tuple[int, ...] | None = None

    def as_params(self) -> dict:
        return {"from": self.start.isoformat(), "to": self.end.isoformat(),
                "group": self.group.pk if self.group else None, "user": self.user.pk if self.user else None,  # type: ignore[attr-defined]
                "collection": self.collection_id}


def _invalid(message: str, field: str) -> ApplicationError:
    return ApplicationError(message, code="invalid", extra={"fields": {field: [message]}})


def _date(value: str | None, field: str, default: date) -> date:
    if value is None or not str(value).strip():
        return default
    try:
        parsed = parse_date(str(value).strip())
    except ValueError:
        parsed = None
    if parsed is None:
        raise _invalid(gettext("'%(value)s' is not a date (YYYY-MM-DD).") % {"value": value}, field)
    return parsed


def _is_id(ref: str) -> bool:
    """A row id, not a name: ASCII digits only ("²" is a digit to str.isdigit but no int)."""
    return ref.isascii() and ref.isdigit()


def usage_sees_all(user) -> bool:
    """Whether the user reads every row of the usage report (superusers, staff with the model permission);
    other staff read their curated collections' rows only (`usage_curated_collections`)."""
    return bool(user.is_active and user.is_staff and (user.is_superuser or user.has_perm("usage.view_usageday")))


def usage_curated_collections(user) -> tuple[int, ...]:
    """The ids of the collections the user curates (documents' rule, looked up through the app registry)."""
    collections = apps.get_model("documents", "Collection").objects
    return tuple(collections.curated_by(user).order_by("name", "id").values_list("pk", flat=True))


def usage_filter_parse(params, *, viewer=None) -> UsageFilter:
    """A UsageFilter from query parameters `from`, `to` (YYYY-MM-DD; default the last 30 days), `group`
    (id or name), `user` (id or user name), `collection` (id or slug); ApplicationError on bad input.
    With a `viewer` who does not see all usage, the filter keeps to the collections they curate."""
    today = timezone.localdate()
    end = _date(params.get("to"), "to", today)
    start = _date(params.get("from"), "from", end - timedelta(days=DEFAULT_DAYS - 1))
    if start > end:
        raise _invalid(gettext("'from' is after 'to'."), "from")
    if (end - start).days >= MAX_DAYS:
        raise _invalid(gettext("At most %(days)s days at once.") % {"days": MAX_DAYS}, "from")
    group = user = collection_id = None
    if ref := str(params.get("group") or "").strip():
        group = Group.objects.filter(pk=int(ref)).first() if _is_id(ref) else Group.objects.filter(name=ref).first()
        if group is None:
            raise _invalid(gettext("No group '%(ref)s'.") % {"ref": ref}, "group")
    if ref := str(params.get("user") or "").strip():
        users = get_user_model().objects
        user = users.filter(pk=int(ref)).first() if _is_id(ref) else users.filter(username=ref).first()
        if user is None:
            raise _invalid(gettext("No user '%(ref)s'.") % {"ref": ref}, "user")
    if ref := str(params.get("collection") or "").strip():
        # By the app registry: documents sits above this app (.importlinter), its model is looked up by name.
        collections = apps.get_model("documents", "Collection").objects
        found = collections.filter(pk=int(ref)).first() if _is_id(ref) else collections.filter(slug=ref).first()
        if found is None:
            raise _invalid(gettext("No collection '%(ref)s'.") % {"ref": ref}, "collection")
        collection_id = found.pk
    allowed = None
    if viewer is not None and not usage_sees_all(viewer):
        allowed = usage_curated_collections(viewer)
        if collection_id is not None and collection_id not in allowed:
            raise _invalid(gettext("No collection '%(ref)s'.") % {"ref": params.get("collection")}, "collection")
    return UsageFilter(start=start, end=end, group=group, user=user, collection_id=collection_id,
                       collection_ids=allowed)


def _rows(flt: UsageFilter):
    rows = UsageDay.objects.filter(day__gte=flt.start, day__lte=flt.end)
    if flt.group is not None:
        rows = rows.filter(user__groups=flt.group)
    if flt.user is not None:
        rows = rows.filter(user=flt.user)
    if flt.collection_id is not None:
        rows = rows.filter(collection_id=flt.collection_id)
    if flt.collection_ids is not None:
        rows = rows.filter(collection_id__in=flt.collection_ids)
    return rows


def _figures(sums: dict) -> dict:
    answers = {mode: int(sums.get(f"answers_{mode}") or 0) for mode in ANSWER_MODES}
    answered = sum(answers.values())
    unanswered = sum(answers[mode] for mode in UNANSWERED_MODES)
    return {
        "questions": int(sums.get("questions") or 0),
        "answers": answers,
        "answers_total": answered,
        "unanswered_rate": round(unanswered / answered, 4) if answered else None,
        "tokens_in": int(sums.get("tokens_in") or 0),
        "tokens_out": int(sums.get("tokens_out") or 0),
        "cited_documents": int(sums.get("cited_documents") or 0),
        "indexing_jobs": int(sums.get("indexing_jobs") or 0),
        "indexing_minutes": round(float(sums.get("indexing_seconds") or 0) / 60, 2),
        "indexing_pages": int(sums.get("indexing_pages") or 0),
    }


def usage_report(flt: UsageFilter) -> dict:
    """Every day of the range (days without use are zeros), each with its tokens per chat server (with the
    names its model answered under); and totals."""
    rows = _rows(flt)
    sums = {row["day"]: row for row in rows.values("day").annotate(**{name: Sum(name) for name in SUMMED})}
    tokens: dict = {}
    for row in (rows.filter(Q(chat_server_id__gt=0) | ~Q(chat_model="")).values("day", "chat_server_id", "chat_model")
                .annotate(tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"))
                .order_by("day", "chat_server_id", "chat_model")):
        _add_tokens(tokens.setdefault(row["day"], {}), row["chat_server_id"], [row["chat_model"]],
                    int(row["tokens_in"]), int(row["tokens_out"]))
    servers = dict(apps.get_model("retrieval", "AiServer").objects.filter(
        pk__in={server for by_server in tokens.values() for server in by_server if isinstance(server, int)})
        .values_list("pk", "name"))
    tokens = {day: _server_entries(by_server, servers) for day, by_server in tokens.items()}
    days = []
    day = flt.start
    while day <= flt.end:
        days.append({"date": day.isoformat(), **_figures(sums.get(day, {})), "tokens_by_server": tokens.get(day, [])})
        day += timedelta(days=1)
    total = {name: sum(row.get(name) or 0 for row in sums.values()) for name in SUMMED}
    by_server: dict = {}
    for entries in tokens.values():
        for entry in entries:
            _add_tokens(by_server, entry["chat_server_id"], entry["chat_models"], entry["tokens_in"], entry["tokens_out"])
    return {"filter": flt.as_params(), "days": days,
            "totals": {**_figures(total), "tokens_by_server": _server_entries(by_server, servers)}}


def _add_tokens(by_server: dict, server_id: int | None, models: list[str], tokens_in: int, tokens_out: int) -> None:
    """Add tokens to the chat server's slot (rows counted before servers were: one slot per model name)."""
    key = server_id or f"model:{models[0] if models else ''}"
    slot = by_server.setdefault(key, {"chat_server_id": server_id or None, "chat_models": [], "tokens_in": 0,
                                      "tokens_out": 0})
    slot["chat_models"] += [m for m in models if m and m not in slot["chat_models"]]
    slot["tokens_in"] += tokens_in
    slot["tokens_out"] += tokens_out


def _server_entries(by_server: dict, servers: dict[int, str]) -> list[dict]:
    """[{"chat_server_id", "chat_server" (its name; None: deleted, or not recorded), "chat_model" (the
    names its model answered under), "chat_models", "tokens_in", "tokens_out"}], by server id."""
    entries = [{**slot, "chat_server": servers.get(slot["chat_server_id"]), "chat_model": ", ".join(slot["chat_models"])}
               for slot in by_server.values()]
    return sorted(entries, key=lambda e: (e["chat_server_id"] is None, e["chat_server_id"] or 0, e["chat_model"]))

CSV_COLUMNS = ("date", "questions", *(f"answers_{mode}" for mode in ANSWER_MODES), "unanswered_rate", "tokens_in",
               "tokens_out", "cited_documents", "indexing_jobs", "indexing_minutes", "indexing_pages")


def usage_csv(report: dict) -> str:
    """The report's days as CSV, one row a day (tokens of all chat models added up)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for day in report["days"]:
        answers = {f"answers_{mode}": n for mode, n in day["answers"].items()}
        row = {**day, **answers, "unanswered_rate": "" if day["unanswered_rate"] is None else day["unanswered_rate"]}
        writer.writerow([row[column] for column in CSV_COLUMNS])
    return out.getvalue()
