"""The incremental sync of one source (STYLE: at-least-once safe, one run at a time per source).

List the source → an entry with the item's marker costs nothing more; a changed marker → download and
hash: the same hash only updates the marker, another becomes a new version through documents.versions
(only its changed chunks are embedded); a new path → download, and either the document of a vanished
item with the same hash (a move or rename keeps its document) or a new document of the collection through
documents.services. Items no longer listed are quarantined: their documents leave retrieval at once
(`is_active` off), stay stored, and are deleted after the source's grace period unless a curator restores
them. A document uploaded by hand is never touched: only documents a `SourceItem` points at are.

A lease on the source row keeps two runs apart; each file's document and item change in one transaction,
keyed by (source, path) and the hash, so a run killed midway resumes without duplicates.
"""
from __future__ import annotations

import hashlib
import logging
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from core.errors import ApplicationError
from core.reasons import in_english, reason
from documents.models import Document
from documents.services import document_delete, document_upload
from documents.versions import document_version_upload
from identity.audit import audit_record
from identity.models import AuditChannel
from sources import filters, metrics
from sources.kinds import Entry, FileError, SourceError, connector_for
from sources.lane import handed_to, source_waiting
from sources.models import RunStatus, Source, SourceItem, SyncRun
from sources.secrets import decrypt

logger = logging.getLogger(__name__)

def lease_length() -> timedelta:
    """How long a run's lease lasts without progress (SOURCES_LEASE_SECONDS, default 10 minutes): a run
    killed midway holds its source that long."""
    from django.conf import settings

    return timedelta(seconds=getattr(settings, "SOURCES_LEASE_SECONDS", 600))

PROGRESS_EVERY = 2.0  # seconds between progress writes (and lease renewals)
ERRORS_KEPT = 200
RUNS_KEPT = 100  # runs kept per source (the oldest go)

SKIP_REASONS = {
    "not_included": gettext_noop("not matched by the include patterns"),
    "excluded": gettext_noop("matched by an exclude pattern"),
    "type": gettext_noop("not one of the source's file types"),
    "too_large": gettext_noop("larger than the source's maximum size"),
    "duplicate_hand": gettext_noop("the same file is a document of the collection already"),
    "duplicate_path": gettext_noop("the same file is at another path of this source"),
}


# The upload and version paths' refusals of one file, by their error codes, in words a reader's language has.
FILE_REFUSALS = {
    "file_too_large": gettext_noop("The file is larger than ragsite accepts."),
    "unsupported_type": gettext_noop("ragsite cannot read this type of file."),
    "corrupt_file": gettext_noop("The file is damaged or encrypted and cannot be read."),
    "empty_file": gettext_noop("The file is empty."),
    "invalid_state": gettext_noop("Its document is being indexed; the next run takes the new version."),
    "duplicate": gettext_noop("The new content is another document of the collection already."),
    "quota_exceeded": gettext_noop("The owner's group has reached its upload quota for today."),
}


def file_refusal(exc: ApplicationError) -> dict:
    text = FILE_REFUSALS.get(exc.code)
    if text:
        return reason(f"sync.file.{exc.code}", text)
    return reason(f"sync.file.{exc.code}", gettext_noop("The file was refused: %(detail)s"), detail=exc.message)


class SourceBusy(ApplicationError):
    code = "source_busy"


@dataclass
class Plan:
    """What a dry run would do (nothing downloaded: a changed marker may still prove unchanged)."""

    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    vanished: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _refusal(source: Source, entry: Entry) -> str:
    return filters.refusal(entry.path, entry.size, include=filters.patterns(source.include_patterns),
                           exclude=filters.patterns(source.exclude_patterns),
                           wanted_types=filters.types(source.file_types), max_bytes=_max_bytes(source))


def _max_bytes(source: Source) -> int:
    from django.conf import settings

    return min(source.max_size_mb * 1024 * 1024, settings.MAX_UPLOAD_SIZE)


def _list(source: Source) -> list[Entry]:
    connector = connector_for(source, secret=decrypt(source.credentials_encrypted))
    try:
        return sorted(connector.list(), key=lambda e: e.path)
    finally:
        connector.close()


def sync_plan(*, source_id: int) -> Plan:
    """A dry run: list the source and compare markers; changes nothing (SourceError when unreachable)."""
    source = Source.objects.get(pk=source_id)
    entries = _list(source)
    items = {i.path: i for i in SourceItem.objects.filter(source=source)}
    plan = Plan()
    listed = set()
    for entry in entries:
        why = _refusal(source, entry)
        if why:
            plan.skipped.append((entry.path, why))
            continue
        listed.add(entry.path)
        item = items.get(entry.path)
        if item is None:
            plan.new.append(entry.path)
        elif item.marker != entry.marker or item.quarantined_at:
            plan.changed.append(entry.path)
        else:
            plan.unchanged += 1
    plan.vanished = sorted(p for p, i in items.items()
                           if p not in listed and i.document_id and i.quarantined_at is None)
    return plan


def lease_take(source_id: int) -> bool:
    """Take the source's lease (False while another run holds it)."""
    now = timezone.now()
    return bool(Source.objects.filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now), pk=source_id)
                .update(lease_until=now + lease_length()))


def lease_release(source_id: int) -> None:
    Source.objects.filter(pk=source_id).update(lease_until=None)


def sync_source(*, source_id: int, trigger: str = "schedule",
                index_lane: Callable[[int], None] | None = None) -> SyncRun:
    """Run one sync of the source; returns its run (SourceBusy while another run holds the lease).

    `index_lane(source_id)`, when given, is called instead of queueing an indexing task for each document
    the run adds or changes (sources.tasks.source_indexing_wanted: the source's lane, sources/lane.py);
    without it each gets its own task, as an upload does."""
    if not lease_take(source_id):
        raise SourceBusy(in_english(reason("sync.busy", gettext_noop("A sync of this source is running already."))))
    try:
        source = Source.objects.select_related("collection", "owner").get(pk=source_id)
        # A run killed midway left its row running: it is over (its lease expired, or we would not be here).
        SyncRun.objects.filter(source=source, status=RunStatus.RUNNING).update(
            status=RunStatus.FAILED, finished_at=timezone.now(),
            error=reason("sync.interrupted", gettext_noop("The run was interrupted; the next run went on from where it stopped.")))
        run = SyncRun.objects.create(source=source, trigger=trigger, heartbeat_at=timezone.now())
        if index_lane is None:
            _Sync(source, run).go()
        else:
            with handed_to(source_id, index_lane):
                _Sync(source, run).go()
            if source_waiting(source_id).exists():  # left by a killed run, or its lane task was lost
                index_lane(source_id)
        return run
    finally:
        lease_release(source_id)


class _Sync:
    def __init__(self, source: Source, run: SyncRun):
        self.source, self.run = source, run
        self.last_progress = time.monotonic()

    # --- bookkeeping ---

    def count(self, outcome: str, n: int = 1) -> None:
        setattr(self.run, outcome, getattr(self.run, outcome) + n)
        metrics.SYNC_FILES.labels(outcome).inc(n)

    def skip(self, path: str, why: str) -> None:
        self.count("skipped")
        slot = self.run.skipped_why.setdefault(why, {"reason": reason(f"sync.skip.{why}", SKIP_REASONS[why]),
                                                     "count": 0, "examples": []})
        slot["count"] += 1
        if len(slot["examples"]) < 5:
            slot["examples"].append(path)

    def fail(self, path: str, why: dict) -> None:
        self.count("failed")
        if len(self.run.errors) < ERRORS_KEPT:
            self.run.errors.append({"path": path, "reason": why})
        logger.info("source file failed", extra={"source_id": self.source.pk, "path": path, "code": why.get("code")})

    def progress(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self.last_progress < PROGRESS_EVERY:
            return
        self.last_progress = time.monotonic()
        self.run.heartbeat_at = timezone.now()
        self.run.save()
        Source.objects.filter(pk=self.source.pk).update(lease_until=timezone.now() + lease_length())

    def audit(self, action: str, document, path: str) -> None:
        audit_record(action=action, user=self.source.owner, via=AuditChannel.SYNC, document=document,
                     detail={"source": self.source.name, "path": path})

    # --- the run ---

    def go(self) -> None:
        run, source = self.run, self.source
        try:
            entries = _list(source)
        except ApplicationError as exc:  # unreachable, refused, no key: nothing changed
            why = exc.reason if isinstance(exc, SourceError) else reason(
                f"sync.{exc.code}", gettext_noop("The source cannot be used: %(detail)s"), detail=exc.message)
            self.finish(RunStatus.FAILED, error=why)
            return
        except Exception as exc:  # a client library's own error: still the run's, in words
            logger.exception("source listing failed", extra={"source_id": source.pk})
            self.finish(RunStatus.FAILED, error=reason("sync.unreachable", gettext_noop(
                "The source %(location)s cannot be reached: %(detail)s"), location=source.location,
                detail=str(exc)[:300]))
            return
        run.listed = len(entries)
        self.items = {i.path: i for i in SourceItem.objects.filter(source=source)}
        wanted: list[Entry] = []
        for entry in entries:
            why = _refusal(source, entry)
            if why:
                self.skip(entry.path, why)
            else:
                wanted.append(entry)
        listed = {e.path for e in wanted}
        # Items whose path is gone, by hash: a new path with the same bytes is their file moved or renamed.
        self.gone = {i.sha256: i for p, i in self.items.items() if p not in listed and i.document_id and i.sha256}
        self.progress(force=True)
        try:
            self.each(wanted)
        finally:
            connector = getattr(self, "connector", None)
            if connector is not None:
                connector.close()
        for item in self.gone.values():
            if item.quarantined_at is None:
                self.quarantine(item)
        SourceItem.objects.filter(source=source, document__isnull=True, skip_reason={}).exclude(
            path__in=listed).delete()
        self.purge()
        self.finish(RunStatus.SUCCEEDED)

    def each(self, wanted: list[Entry]) -> None:
        run, source = self.run, self.source
        for entry in wanted:
            try:
                self.one(entry)
            except (FileError, SourceError) as exc:
                self.fail(entry.path, exc.reason)
            except ApplicationError as exc:  # refused by the upload or version path: this file only
                self.fail(entry.path, file_refusal(exc))
            except Exception as exc:
                logger.exception("source file failed", extra={"source_id": source.pk, "path": entry.path})
                self.fail(entry.path, reason("sync.file.error", gettext_noop("Unexpected error: %(detail)s"),
                                             detail=str(exc)[:300]))
            run.done += 1
            self.progress()

    def finish(self, status: str, *, error: dict | None = None) -> None:
        self.run.status = status
        self.run.error = error or {}
        self.run.finished_at = self.run.heartbeat_at = timezone.now()
        self.run.save()
        old = SyncRun.objects.filter(source=self.source).order_by("-started_at", "-id").values_list("pk", flat=True)[RUNS_KEPT:]
        SyncRun.objects.filter(pk__in=list(old)).delete()
        metrics.SYNC_RUNS.labels(self.source.kind, status).inc()
        metrics.SYNC_BYTES.inc(self.run.bytes_downloaded)
        log = logger.warning if status == RunStatus.FAILED else logger.info
        log("source sync %s", status, extra={"source_id": self.source.pk, "run_id": self.run.pk,
                                            "error": in_english(error) if error else ""})

    def one(self, entry: Entry) -> None:
        item = self.items.get(entry.path)
        if item is not None and item.marker == entry.marker:
            if item.document_id and item.quarantined_at is None:
                self.count("unchanged")
                return
            # Skipped as the copy of another document: still so while that document exists (deleted, the
            # file is taken now).
            if item.skip_reason and Document.objects.filter(pk=item.skip_reason.get("document_id")).exists():
                self.skip(entry.path, item.skip_reason.get("why", "duplicate_hand"))
                return
        with tempfile.SpooledTemporaryFile(max_size=4 * 1024 * 1024) as spool:
            size = self._download(entry, spool)
            sha256 = self._hash(spool)
            if item is not None and item.document_id and item.sha256 == sha256:
                self.keep(item, entry, sha256, size)
                return
            if item is not None and item.document_id:
                self.new_version(item, entry, sha256, size, spool)
                return
            moved = self.gone.pop(sha256, None)
            if moved is not None:
                self.move(moved, entry, sha256, size, stale=item)
                return
            self.add(entry, sha256, size, spool, stale=item)

    def _download(self, entry: Entry, spool) -> int:
        connector = getattr(self, "connector", None)
        if connector is None:
            connector = self.connector = connector_for(self.source, secret=decrypt(self.source.credentials_encrypted))
        size = connector.fetch(entry, spool, _max_bytes(self.source))
        self.run.bytes_downloaded += size
        spool.seek(0)
        return size

    @staticmethod
    def _hash(spool) -> str:
        digest = hashlib.sha256()
        while block := spool.read(1024 * 1024):
            digest.update(block)
        spool.seek(0)
        return digest.hexdigest()

    def keep(self, item: SourceItem, entry: Entry, sha256: str, size: int) -> None:
        """The marker moved but the bytes did not (a touched file): only the marker is updated."""
        with transaction.atomic():
            if item.quarantined_at is not None:
                self._unquarantine(item)
            else:
                self.count("unchanged")
            item.marker, item.size, item.sha256 = entry.marker, size, sha256
            item.save()

    def new_version(self, item: SourceItem, entry: Entry, sha256: str, size: int, spool) -> None:
        with transaction.atomic():
            version = document_version_upload(document_id=item.document_id, user=self.source.owner, source=spool,
                                              filename=entry.filename)
            if item.quarantined_at is not None:
                item.quarantined_at = None
                Document.objects.filter(pk=item.document_id).update(is_active=True)
            item.marker, item.size, item.sha256 = entry.marker, size, sha256
            item.save()
            self.count("changed")
            self.audit("sync_changed", version.document, entry.path)

    def move(self, moved: SourceItem, entry: Entry, sha256: str, size: int, *, stale: SourceItem | None) -> None:
        with transaction.atomic():
            if stale is not None:
                stale.delete()
            old_path = moved.path
            moved.path, moved.marker, moved.size, moved.sha256 = entry.path, entry.marker, size, sha256
            if moved.quarantined_at is not None:
                moved.quarantined_at = None
                Document.objects.filter(pk=moved.document_id).update(is_active=True)
            moved.save()
            self.items.pop(old_path, None)
            self.items[entry.path] = moved
            self.count("moved")

    def add(self, entry: Entry, sha256: str, size: int, spool, *, stale: SourceItem | None) -> None:
        with transaction.atomic():
            result = document_upload(owner=self.source.owner, source=spool, filename=entry.filename,
                                     collection=self.source.collection)
            item = stale or SourceItem(source=self.source, path=entry.path)
            item.marker, item.size, item.sha256 = entry.marker, size, sha256
            if result.duplicate:
                # Another path of this source has the same bytes, or the collection holds them as a document
                # the sync does not own (uploaded by hand, or by another source): never touched.
                other = SourceItem.objects.filter(document=result.document).exclude(pk=item.pk).first()
                why = "duplicate_path" if other is not None and other.source_id == self.source.pk else "duplicate_hand"
                item.document, item.skip_reason = None, {"why": why, "document_id": result.document.pk}
                item.save()
                self.skip(entry.path, why)
                return
            item.document, item.skip_reason, item.quarantined_at = result.document, {}, None
            item.save()
            self.items[entry.path] = item
            self.count("new")
            self.audit("sync_added", result.document, entry.path)

    def quarantine(self, item: SourceItem) -> None:
        with transaction.atomic():
            item.quarantined_at = timezone.now()
            item.save(update_fields=["quarantined_at", "updated_at"])
            Document.objects.filter(pk=item.document_id).update(is_active=False, updated_at=timezone.now())
            self.count("quarantined")
            self.audit("sync_quarantined", Document.objects.filter(pk=item.document_id).first(), item.path)

    def _unquarantine(self, item: SourceItem) -> None:
        item.quarantined_at = None
        Document.objects.filter(pk=item.document_id).update(is_active=True, updated_at=timezone.now())
        self.count("restored")

    def purge(self) -> None:
        """Delete the documents quarantined longer than the grace period."""
        cutoff = timezone.now() - timedelta(days=self.source.grace_days)
        for item in SourceItem.objects.filter(source=self.source, quarantined_at__lt=cutoff):
            document_id = item.document_id
            with transaction.atomic():
                item.delete()
                if document_id and Document.objects.filter(pk=document_id).exists():
                    self.audit("sync_deleted", Document.objects.get(pk=document_id), item.path)
                    document_delete(document_id=document_id, user=self.source.owner)
            self.count("deleted")
