"""Watched sources: where a collection's documents already live (a file share, a bucket prefix, a WebDAV
folder, a website, a mailbox folder), what a sync found there (`SourceItem`) and each run (`SyncRun`)."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from core.reasons import render as render_reason


class SourceKind(models.TextChoices):
    S3 = "s3", _("S3-compatible bucket prefix")
    WEBDAV = "webdav", _("WebDAV folder")
    WEBSITE = "website", _("Website under a URL prefix")
    SMB = "smb", _("SMB/CIFS file share")
    IMAP = "imap", _("IMAP mailbox folder")


class Source(models.Model):
    """A place a collection's documents come from, synced on a schedule and on demand (sources/sync.py)."""

    name = models.SlugField(max_length=100, unique=True, verbose_name=_("name"),
                            help_text=_("A short name without spaces, used by `manage.py sync_source NAME`."))
    collection = models.ForeignKey("documents.Collection", on_delete=models.PROTECT, related_name="sources",
                                   verbose_name=_("collection"))
    # Who the synced documents belong to and who the version path checks: a curator of the collection.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+",
                              verbose_name=_("owner"),
                              help_text=_("The synced documents are uploaded in this person's name; they must "
                                          "curate the collection."))
    kind = models.CharField(max_length=20, choices=SourceKind.choices, verbose_name=_("kind"))
    location = models.CharField(max_length=1000, verbose_name=_("location"), help_text=_(
        "s3://bucket/prefix/, https://dav.example.org/folder/, https://www.example.org/guides/, "
        "smb://server/share/folder, imap://mail.example.org/INBOX (imaps:// for TLS)."))
    endpoint_url = models.CharField(max_length=500, blank=True, verbose_name=_("endpoint URL"),
                                    help_text=_("S3 only: the server's address (empty: Amazon S3)."))
    username = models.CharField(max_length=300, blank=True, verbose_name=_("user name or access key"))
    # Fernet token (sources/secrets.py) of the password or secret key: never shown back, never logged.
    credentials_encrypted = models.TextField(blank=True, editable=False, verbose_name=_("credentials (encrypted)"))
    include_patterns = models.TextField(blank=True, verbose_name=_("include"), help_text=_(
        "One pattern per line (folder/*, *.pdf); empty: everything."))
    exclude_patterns = models.TextField(blank=True, verbose_name=_("exclude"), help_text=_(
        "One pattern per line; a path matching one is skipped."))
    file_types = models.CharField(max_length=300, blank=True, verbose_name=_("file types"), help_text=_(
        "File name endings separated by commas (pdf, docx, html); empty: every type ragsite reads."))
    max_size_mb = models.PositiveIntegerField(default=50, verbose_name=_("maximum size (MB)"))
    schedule_minutes = models.PositiveIntegerField(default=60, verbose_name=_("sync every (minutes)"),
                                                   help_text=_("0: only when someone asks."))
    is_active = models.BooleanField(default=True, verbose_name=_("is active"))
    grace_days = models.PositiveIntegerField(default=30, verbose_name=_("quarantine grace period (days)"),
                                             help_text=_("A document whose file vanished is deleted this many "
                                                         "days later unless a curator restores it."))
    # The lease: while it is in the future a run holds the source and no other run starts.
    lease_until = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("leased until"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("source")
        verbose_name_plural = _("sources")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def has_credentials(self) -> bool:
        return bool(self.credentials_encrypted)


class SourceItem(models.Model):
    """A file (or page, or message) a sync found at the source, and the document it became."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="items", verbose_name=_("source"))
    path = models.CharField(max_length=1000, verbose_name=_("path"))
    # The source's own change marker (ETag, modification time and size): the same marker costs no download.
    marker = models.CharField(max_length=500, blank=True, verbose_name=_("change marker"))
    size = models.BigIntegerField(default=0, verbose_name=_("size"))
    sha256 = models.CharField(max_length=64, blank=True, verbose_name=_("SHA-256"))
    document = models.ForeignKey("documents.Document", on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="source_items", verbose_name=_("document"))
    # Why the file has no document of the source's (the same bytes are a hand-uploaded document…).
    skip_reason = models.JSONField(default=dict, blank=True, verbose_name=_("skipped because"))
    quarantined_at = models.DateTimeField(null=True, blank=True, db_index=True, verbose_name=_("quarantined at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("source file")
        verbose_name_plural = _("source files")
        ordering = ["source", "path"]
        constraints = [models.UniqueConstraint(fields=["source", "path"], name="sourceitem_one_per_path")]
        indexes = [models.Index(fields=["source", "sha256"], name="sourceitem_source_sha256")]

    def __str__(self) -> str:
        return self.path


class QuarantinedItem(SourceItem):
    """The admin's list of documents whose files vanished (a proxy: the quarantine screen)."""

    class Meta:
        proxy = True
        verbose_name = _("quarantined document")
        verbose_name_plural = _("quarantine")


class RunStatus(models.TextChoices):
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")


class SyncRun(models.Model):
    """One sync of a source: its counts, the error of each failed file, duration and bytes."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="runs", verbose_name=_("source"))
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.RUNNING,
                              verbose_name=_("status"))
    trigger = models.CharField(max_length=20, default="schedule", verbose_name=_("started by"))
    started_at = models.DateTimeField(auto_now_add=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    heartbeat_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last progress"))
    listed = models.PositiveIntegerField(default=0, verbose_name=_("listed"))
    done = models.PositiveIntegerField(default=0, verbose_name=_("done"))
    new = models.PositiveIntegerField(default=0, verbose_name=_("new"))
    changed = models.PositiveIntegerField(default=0, verbose_name=_("changed"))
    unchanged = models.PositiveIntegerField(default=0, verbose_name=_("unchanged"))
    moved = models.PositiveIntegerField(default=0, verbose_name=_("moved or renamed"))
    quarantined = models.PositiveIntegerField(default=0, verbose_name=_("quarantined"))
    restored = models.PositiveIntegerField(default=0, verbose_name=_("back at the source"))
    deleted = models.PositiveIntegerField(default=0, verbose_name=_("deleted after the grace period"))
    failed = models.PositiveIntegerField(default=0, verbose_name=_("failed"))
    skipped = models.PositiveIntegerField(default=0, verbose_name=_("skipped"))
    bytes_downloaded = models.BigIntegerField(default=0, verbose_name=_("bytes downloaded"))
    # {reason code: {"reason": reason, "count": n}}: why files were skipped.
    skipped_why = models.JSONField(default=dict, blank=True, verbose_name=_("skipped because"))
    # [{"path": ..., "reason": core.reasons reason}] of the failed files (the first 200).
    errors = models.JSONField(default=list, blank=True, verbose_name=_("file errors"))
    # Why the whole run failed (unreachable, wrong credentials…), a core.reasons reason.
    error = models.JSONField(default=dict, blank=True, verbose_name=_("error"))

    class Meta:
        verbose_name = _("sync run")
        verbose_name_plural = _("sync runs")
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["source", "-started_at"], name="syncrun_source_started")]

    def __str__(self) -> str:
        return f"{self.source} {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    def error_text(self) -> str:
        return render_reason(self.error)

    def error_lines(self) -> list[str]:
        return [f"{e.get('path', '')}: {render_reason(e.get('reason'))}" for e in self.errors or []]
