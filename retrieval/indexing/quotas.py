"""Indexing quotas, asked once per job after extraction (the pages are known) and before anything is
embedded or stored: first the owner's group quota of pages per day (usage/quotas.py), then the optional
hook `INDEXING_QUOTA_CHECK`.

The hook names a function `check(*, document, pages: int | None) -> str | None`: None lets the job go
on; a string is the reason, shown to people. Either refusal fails the document (code `quota_exceeded`;
nothing of it is stored; re-index it once the quota allows). `pages` is None for formats without pages
(text, Markdown, HTML, e-mail); the group quota counts such a file as one page.
"""
from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from core.errors import QuotaExceeded
from usage.quotas import indexing_check

__all__ = ["QuotaExceeded", "no_limit", "quota_check"]


def no_limit(*, document, pages: int | None) -> str | None:
    """The default hook: every job may go on."""
    return None


def quota_check(*, document, pages: int | None) -> None:
    """Raise QuotaExceeded when the owner's group quota or the configured hook refuses the job."""
    if document.owner_id is not None:
        indexing_check(user=document.owner, pages=pages)
    path = getattr(settings, "INDEXING_QUOTA_CHECK", "")
    check = import_string(path) if path else no_limit
    reason = check(document=document, pages=pages)
    if reason:
        raise QuotaExceeded(str(reason))
