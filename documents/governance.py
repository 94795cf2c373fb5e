"""Source governance: when a document is due for review or has expired, and what then.

A document's dates and expiry policy are its own (`review_by`, `valid_until`, `expired_policy`),
else its collection's; its owner is the uploader, a collection's the `owner` staff set. Expired
means `valid_until` is before today. By the policy, an expired document either **stays** in
answers with the source marked "may be outdated" (chat.orchestrator; the default) or **leaves
retrieval**: `retired_document_ids` names those, and `retrieve()` leaves them out of every search
(chat, REST search, /v1, MCP, evaluation runs); the library still shows and opens them. Curators
find documents due for review in the admin and owners on their library page (`sources_due`).
"""
from __future__ import annotations

import datetime

from django.db import connection
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce, NullIf
from django.utils import timezone

from documents.models import VISIBLE_DOCUMENT_SQL, Document, ExpiredPolicy


def with_dates(queryset: QuerySet[Document]) -> QuerySet[Document]:
    """Documents annotated with `due_review`, `expires` and `policy` (their own, else their collection's)."""
    return queryset.annotate(due_review=Coalesce(F("review_by"), F("collection__review_by")),
                             expires=Coalesce(F("valid_until"), F("collection__valid_until")),
                             policy=Coalesce(NullIf(F("expired_policy"), Value("")), F("collection__expired_policy"),
                                             Value(ExpiredPolicy.STAY_MARKED)))


def current_versions(ids) -> dict[int, int]:
    """The version that answers now, per document id (one query): a citation of an older one quotes
    a superseded version."""
    ids = {int(i) for i in ids if i}
    return dict(Document.objects.filter(pk__in=ids).values_list("pk", "version")) if ids else {}


def mark_superseded(sources: list, versions: dict[int, int]) -> list:
    """Copies of `sources` where those quoting an older version than `versions` names say
    `superseded: True` (the page shows "newer version exists")."""
    marked = []
    for source in sources or []:
        quoted, current = source.get("document_version"), versions.get(source.get("document_id") or 0)
        if quoted and current and int(quoted) < current:
            source = {**source, "superseded": True}
        marked.append(source)
    return marked


# `with_dates(visible_to(user))` filtered, as one plain statement: retrieve() asks on every question, and
# building the ORM's version cost ~1.1 ms of CPU each time against ~0.1 ms here (planning ~0.13 ms
# either way; docs/benchmarks.md, "100k chunks").
# The effective date and policy are those of `with_dates`; who reads what is `visible_to`'s rule.
_RETIRED_SQL = f"""
SELECT d.id FROM documents_document d LEFT JOIN documents_collection c ON c.id = d.collection_id
WHERE (d.valid_until < %(today)s OR c.valid_until < %(today)s)
  AND COALESCE(d.valid_until, c.valid_until) < %(today)s
  AND COALESCE(NULLIF(d.expired_policy, ''), c.expired_policy, %(stay)s) = %(leave)s
  AND {VISIBLE_DOCUMENT_SQL}
ORDER BY d.id
"""


def retired_document_ids(*, user, today: datetime.date | None = None) -> list[int]:
    """The documents `user` reads that have expired under the policy "leave retrieval": searches
    leave them out. One query; only documents with a date before today (theirs or their collection's) are read."""
    if not user or not user.is_authenticated:
        return []
    today = today or timezone.localdate()
    with connection.cursor() as cursor:
        cursor.execute(_RETIRED_SQL, {"today": today, "user": int(user.pk), "stay": ExpiredPolicy.STAY_MARKED.value,
                                      "leave": ExpiredPolicy.LEAVE.value})
        return [row[0] for row in cursor.fetchall()]


def expired_document_ids(ids, *, today: datetime.date | None = None) -> set[int]:
    """Which of these documents have expired (valid until a day before today)."""
    ids = {int(i) for i in ids if i}
    if not ids:
        return set()
    today = today or timezone.localdate()
    return set(with_dates(Document.objects.filter(pk__in=ids)).filter(expires__lt=today)
               .values_list("pk", flat=True))


def sources_due(*, user, today: datetime.date | None = None) -> QuerySet[Document]:
    """Documents `user` reads that have expired or are due for review, the most overdue first."""
    today = today or timezone.localdate()
    return (with_dates(Document.objects.visible_to(user))
            .filter(Q(expires__lt=today) | Q(due_review__lte=today))
            .select_related("owner", "collection", "collection__owner")
            .order_by(Coalesce("expires", "due_review").asc(), "id"))


def sources_due_for_owner(*, user, today: datetime.date | None = None, limit: int = 50) -> list[Document]:
    """The documents `user` answers for (a collection's owner: its documents; else who uploaded them)
    that are due for review or expired, the most overdue first: their library page lists them."""
    if not user or not user.is_authenticated:
        return []
    mine = Q(collection__owner=user) | (Q(owner=user) & (Q(collection__isnull=True) | Q(collection__owner__isnull=True)))
    return list(sources_due(user=user, today=today).filter(mine)[:limit])
