"""Changes to sources outside a run: credentials, the schedule, sync on demand, the quarantine."""
from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from core.errors import Conflict, NotFound
from core.tasks import dotted_path, queue
from documents.models import Collection, Document
from documents.services import document_delete
from identity.audit import audit_record
from sources.models import Source, SourceItem
from sources.secrets import encrypt


def schedule_name(source_id: int) -> str:
    return f"sync source {source_id}"


def source_credentials_set(*, source: Source, secret: str) -> None:
    """Store the password or secret key encrypted ("" removes it)."""
    source.credentials_encrypted = encrypt(secret)
    source.save(update_fields=["credentials_encrypted", "updated_at"])


def source_schedule(*, source: Source) -> None:
    """Keep the source's django-q2 schedule in step with its interval and activity (call after a save)."""
    from django_q.models import Schedule

    from sources.tasks import sync_source_task

    name = schedule_name(source.pk)
    if not source.is_active or not source.schedule_minutes:
        Schedule.objects.filter(name=name).delete()
        return
    existing = Schedule.objects.filter(name=name).first()
    if existing is not None and existing.minutes == source.schedule_minutes:
        return
    Schedule.objects.update_or_create(name=name, defaults={
        "func": dotted_path(sync_source_task), "args": repr((source.pk,)), "schedule_type": Schedule.MINUTES,
        "minutes": source.schedule_minutes, "repeats": -1,
        "next_run": timezone.now() + timedelta(minutes=source.schedule_minutes)})


def source_next_run(*, source: Source):
    from django_q.models import Schedule

    return Schedule.objects.filter(name=schedule_name(source.pk)).values_list("next_run", flat=True).first()


def source_sync_now(*, source_id: int) -> None:
    """Queue a run of the source now (a running one makes it return quietly)."""
    from sources.tasks import sync_source_task

    if not Source.objects.filter(pk=source_id).exists():
        raise NotFound(gettext("No such source."))
    queue(sync_source_task, source_id, "manual", task_name=f"sync source {source_id} now")


def curated_sources(user):
    return Source.objects.filter(collection__in=Collection.objects.curated_by(user))


def quarantine_restore(*, item_id: int, user) -> Document:
    """Keep a quarantined document: back in retrieval, no longer tied to the source (its file is gone there,
    so a later sync leaves it alone)."""
    with transaction.atomic():
        item = (SourceItem.objects.select_for_update().select_related("source")
                .filter(pk=item_id, source__in=curated_sources(user)).first())
        if item is None or item.document_id is None:
            raise NotFound(gettext("No such quarantined document."))
        if item.quarantined_at is None:
            raise Conflict(gettext("This document is not in quarantine."), code="invalid_state")
        document = Document.objects.get(pk=item.document_id)
        Document.objects.filter(pk=document.pk).update(is_active=True, updated_at=timezone.now())
        audit_record(action="sync_restored", user=user, via="admin", document=document,
                     detail={"source": item.source.name, "path": item.path})
        item.delete()
    return document


def quarantine_delete(*, item_id: int, user) -> None:
    """Delete a quarantined document now, before its grace period ends."""
    with transaction.atomic():
        item = (SourceItem.objects.select_for_update().select_related("source")
                .filter(pk=item_id, source__in=curated_sources(user)).first())
        if item is None or item.quarantined_at is None:
            raise NotFound(gettext("No such quarantined document."))
        document_id = item.document_id
        item.delete()
        if document_id:
            document_delete(document_id=document_id, user=user)
