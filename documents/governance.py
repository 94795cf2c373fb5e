"""Source governance: when a document is due for review or has expired.

A document's dates are its own (`review_by`, `valid_until`), else its collection's; its owner is
the uploader, a collection's the `owner` staff set. Expired means `valid_until` is before today:
answers citing it mark the source "may be outdated" (chat.orchestrator), and curators find it in the
gap inbox's list of sources past their date with the ones due for review.
"""
from __future__ import annotations

import datetime

from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from documents.models import Document


def with_dates(queryset: QuerySet[Document]) -> QuerySet[Document]:
    """Documents annotated with `due_review` and `expires` (their own date, else their collection's)."""
    return queryset.annotate(due_review=Coalesce(F("review_by"), F("collection__review_by")),
                             expires=Coalesce(F("valid_until"), F("collection__valid_until")))


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
