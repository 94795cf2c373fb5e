"""The audit log's one writer: who read which document (downloads, viewer opens, text through the
API, passages returned by a search, passages sent for an answer), who signed in, whose groups and
permissions changed (docs/security.md#audit-log).

Every app records through these functions (identity sits just above core: documents, retrieval,
chat and integrations may all call it). A line holds ids and the titles the reader was allowed to
see, never passage text. Writes are plain INSERTs, one bulk INSERT for the passages of a search
or an answer; a database trigger refuses UPDATE and DELETE (migration 0005) except the retention
purge (`audit_purge`, daily, `AUDIT_RETENTION_DAYS`).
"""
from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable
from contextvars import ContextVar

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from identity.models import AuditAction, AuditEvent

log = logging.getLogger(__name__)

# The request being served (set by AuditActorMiddleware): its signed-in user is named as `actor`
# (an administrator editing someone's groups). Read only when a line is written: no query otherwise.
_request: ContextVar[object | None] = ContextVar("ragsite_audit_request", default=None)
PURGE_SETTING = "ragsite.audit_purge"


def _actor() -> str:
    request = _request.get()
    user = getattr(request, "user", None) if request is not None else None
    return user.get_username()[:150] if user is not None and user.is_authenticated else ""


def _who(user) -> tuple[int | None, str]:
    if user is None or not getattr(user, "is_authenticated", False):
        return None, ""
    return user.pk, user.get_username()


def audit_record(*, action: str, user=None, via: str = "", document=None, document_id: int | None = None,
                 document_title: str = "", chunk_id: int | None = None, version: int | None = None,
                 message_id: int | None = None, username: str = "", detail: dict | None = None) -> None:
    """Append one line. `document`: a Document (its id, title and version), or give the ids."""
    user_id, name = _who(user)
    if document is not None:
        document_id = document.pk
        document_title = document_title or document.title or getattr(document, "original_filename", "")
        version = version if version is not None else getattr(document, "version", None)
    AuditEvent.objects.create(
        action=action, user_id=user_id, username=(name or username)[:150], actor=_actor(), via=via,
        document_id=document_id, document_title=(document_title or "")[:300], chunk_id=chunk_id, version=version,
        message_id=message_id, detail=detail or {})


def audit_passages(*, action: str, user, segments: Iterable[dict], via: str, message_id: int | None = None,
                   detail: dict | None = None) -> int:
    """One bulk INSERT: a line per document passage in `segments` (retrieval's dicts; approved
    answers, which are no document, are left out). Returns how many lines."""
    user_id, name = _who(user)
    actor = _actor()
    rows = [AuditEvent(action=action, user_id=user_id, username=name, actor=actor, via=via,
                       document_id=seg.get("document_id"),
                       document_title=str(seg.get("document_title") or seg.get("document_name") or "")[:300],
                       chunk_id=seg.get("chunk_id"), version=seg.get("document_version"),
                       message_id=message_id, detail=detail or {})
            for seg in segments if seg.get("document_id") is not None and seg.get("chunk_id") is not None]
    if rows:
        AuditEvent.objects.bulk_create(rows)
    return len(rows)


def audit_answers(*, user, answers: Iterable[tuple[int, Iterable[int]]], via: str, detail: dict | None = None) -> int:
    """One bulk INSERT: a line (READ_ANSWER) per question and answer shown to `user` — `answers` holds
    (message id, the ids of the documents the answer drew on), kept in the line's detail. Returns how many."""
    user_id, name = _who(user)
    actor = _actor()
    rows = [AuditEvent(action=AuditAction.READ_ANSWER, user_id=user_id, username=name, actor=actor, via=via,
                       message_id=message_id, detail={**(detail or {}), "document_ids": sorted(set(document_ids))})
            for message_id, document_ids in answers]
    if rows:
        AuditEvent.objects.bulk_create(rows)
    return len(rows)


def audit_purge() -> int:
    """Delete lines older than AUDIT_RETENTION_DAYS (0: keep for ever); the one DELETE the
    database allows. The daily django-q2 schedule runs it; running it twice changes nothing more."""
    days = int(getattr(settings, "AUDIT_RETENTION_DAYS", 0) or 0)
    if days <= 0:
        return 0
    cutoff = timezone.now() - datetime.timedelta(days=days)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, 'on', true)", [PURGE_SETTING])  # this transaction only
        try:
            deleted, _ = AuditEvent.objects.filter(at__lt=cutoff).delete()
        finally:  # called inside a longer transaction, the permission must not outlive the purge
            cursor.execute("SELECT set_config(%s, 'off', true)", [PURGE_SETTING])
    if deleted:
        log.info("audit log: %d lines older than %d days purged", deleted, days)
    return deleted


# --- Signals: sign-ins, group and permission changes ---

def _backend_name(request, user) -> str:
    backend = getattr(user, "backend", "") or ""
    if "ldap" in backend.lower():
        return "ldap"
    if "oidc" in backend.lower():
        return "oidc"
    return "local"


def on_user_logged_in(sender, request, user, **kwargs) -> None:
    audit_record(action=AuditAction.SIGN_IN, user=user, via=_backend_name(request, user),
                 detail={"address": getattr(request, "META", {}).get("REMOTE_ADDR", "")} if request else {})


def on_user_login_failed(sender, credentials, request=None, **kwargs) -> None:
    username = str((credentials or {}).get("username") or "")[:150]
    audit_record(action=AuditAction.SIGN_IN_FAILED, username=username,
                 detail={"address": getattr(request, "META", {}).get("REMOTE_ADDR", "")} if request else {})


def on_m2m_changed(sender, instance, action, reverse, model, pk_set, **kwargs) -> None:
    """User.groups, User.user_permissions and Group.permissions: who gained or lost what."""
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    from django.contrib.auth.models import Group, Permission

    field = sender._meta.db_table
    kind = AuditAction.PERMISSIONS if model is Permission or "permission" in field else AuditAction.GROUPS
    if reverse:  # group.user_set.add(user): `instance` is the group, the users are in pk_set
        target = {"group": str(instance)} if isinstance(instance, Group) else {"object": str(instance)}
        audit_record(action=kind, detail={**target, "change": action[5:], "user_ids": sorted(pk_set or [])})
        return
    names = sorted(str(o) for o in model.objects.filter(pk__in=pk_set or [])) if pk_set else []
    if isinstance(instance, Group):  # group.permissions.add(...)
        audit_record(action=kind, detail={"group": instance.name, "change": action[5:], "names": names})
    else:
        audit_record(action=kind, user=instance, detail={"change": action[5:], "names": names})


class AuditActorMiddleware:
    """After AuthenticationMiddleware: names the signed-in user as the actor of changes this request makes."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)
