"""The hook for indexing quotas (pages per group per day, from the curation issue): asked once per job,
after extraction (the pages are known) and before anything is embedded or stored.

`INDEXING_QUOTA_CHECK` names a function `check(*, document, pages: int | None) -> str | None`:
None lets the job go on; a string is the reason, shown to people, and the document fails with it
(code `quota_exceeded`; nothing of it is stored; re-index it once the quota allows). Unset (the
default): no limit. `pages` is None for formats without pages (text, Markdown, HTML, e-mail).
"""
from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from core.errors import Throttled


class QuotaExceeded(Throttled):
    """Over a quota: a 429 like any limit (core/errors.py decides the status)."""

    code = "quota_exceeded"


def no_limit(*, document, pages: int | None) -> str | None:
    """The default: every job may go on."""
    return None


def quota_check(*, document, pages: int | None) -> None:
    """Raise QuotaExceeded with the hook's reason when the configured hook refuses the job."""
    path = getattr(settings, "INDEXING_QUOTA_CHECK", "")
    check = import_string(path) if path else no_limit
    reason = check(document=document, pages=pages)
    if reason:
        raise QuotaExceeded(str(reason))
