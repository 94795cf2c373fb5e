"""Which accounts and groups belong to a directory (OpenID Connect provider or LDAP)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils.translation import gettext_lazy as _


class DirectorySource(models.TextChoices):
    OIDC = "oidc", _("OpenID Connect")
    LDAP = "ldap", _("LDAP")


class DirectoryIdentity(models.Model):
    """A user account created by (and only ever matched to) one directory subject.

    OpenID Connect: `subject` is the provider's `sub`; LDAP: the directory user name. A local
    account is never matched by e-mail or name: sign-in refuses a name a local account holds.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_identities", verbose_name=_("user"))
    source = models.CharField(max_length=10, choices=DirectorySource.choices, verbose_name=_("source"))
    subject = models.CharField(max_length=255, verbose_name=_("subject"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    # When the directory last vouched for the user (sign-in or re-check, from a session or an API
    # token): identity/recheck.py asks again once DIRECTORY_RECHECK_SECONDS have passed.
    checked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("checked at"))
    # OpenID Connect: the grant of the latest sign-in, one per user, shared by the re-checks of
    # sessions and API tokens (a provider that rotates refresh tokens refuses an old one). Never shown.
    refresh_token = models.TextField(blank=True, verbose_name=_("refresh token"))
    access_token = models.TextField(blank=True, verbose_name=_("access token"))
    # Set by ragsite's sign-out: the provider ends the grant then, which is not the user being disabled.
    signed_out_at = models.DateTimeField(null=True, blank=True, verbose_name=_("signed out at"))

    class Meta:
        verbose_name = _("directory identity")
        verbose_name_plural = _("directory identities")
        constraints = [
            models.UniqueConstraint(fields=["source", "subject"], name="directory_identity_unique_subject"),
            models.CheckConstraint(condition=models.Q(source__in=DirectorySource.values),
                                   name="directory_identity_source_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.subject}"


class DirectoryGroup(models.Model):
    """A Django group whose membership a directory manages: sign-in and re-checks add and remove
    members. Groups never named by the directory are left alone."""

    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="directory", verbose_name=_("group"))
    source = models.CharField(max_length=10, choices=DirectorySource.choices, verbose_name=_("source"))

    class Meta:
        verbose_name = _("directory group")
        verbose_name_plural = _("directory groups")
        constraints = [
            models.CheckConstraint(condition=models.Q(source__in=DirectorySource.values),
                                   name="directory_group_source_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.group_id}"


class ApiToken(models.Model):
    """A named personal API token. Only its SHA-256 digest is stored: the key is shown once, when it
    is created or rotated, and can never be read back (identity/tokens.py)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens", verbose_name=_("user"))
    name = models.CharField(max_length=100, verbose_name=_("name"))
    # The key's first characters, to tell tokens apart in lists (not enough to guess the rest).
    prefix = models.CharField(max_length=12, verbose_name=_("prefix"))
    digest = models.CharField(max_length=64, unique=True, verbose_name=_("digest"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    rotated_at = models.DateTimeField(null=True, blank=True, verbose_name=_("rotated at"))
    expires_at = models.DateTimeField(null=True, blank=True, verbose_name=_("expires at"))
    last_used_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last used at"))

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="api_token_user_created")]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class AuditAction(models.TextChoices):
    DOWNLOAD = "download", _("download")
    VIEW = "view", _("viewer open")
    TEXT = "text", _("document text read")
    READ_ANSWER = "read_answer", _("question and answer read")
    SEARCH = "search", _("passage returned by a search")
    ANSWER = "answer", _("passage sent for an answer")
    SIGN_IN = "sign_in", _("sign-in")
    SIGN_IN_FAILED = "sign_in_failed", _("failed sign-in")
    GROUPS = "groups", _("group membership change")
    PERMISSIONS = "permissions", _("permission change")
    SYNC_ADDED = "sync_added", _("added by a source sync")
    SYNC_CHANGED = "sync_changed", _("new version from a source sync")
    SYNC_QUARANTINED = "sync_quarantined", _("quarantined by a source sync (its file vanished)")
    SYNC_RESTORED = "sync_restored", _("restored from the quarantine")
    SYNC_DELETED = "sync_deleted", _("deleted after the quarantine's grace period")


class AuditChannel:
    """How an audited read or sign-in came in (AuditEvent.via): the one vocabulary every writer uses.

    The codes are stored (the log is append-only, so they never change); `AUDIT_CHANNELS` names
    them in the reader's language. Reads of documents and answers come in by WEB (the site's pages),
    ADMIN (the admin), REST (`/api/`), V1 (the OpenAI-compatible `/v1/`), MCP (`/mcp`) or CHAT
    (passages sent for an answer on the chat page); sign-ins by API_TOKEN, LDAP, OIDC or LOCAL; what a
    watched source's sync did to a document by SYNC."""

    WEB = "page"
    ADMIN = "admin"
    REST = "api"
    V1 = "v1"
    MCP = "mcp"
    CHAT = "chat"
    API_TOKEN = "api_token"
    LDAP = "ldap"
    OIDC = "oidc"
    LOCAL = "local"
    SYNC = "sync"


AUDIT_CHANNELS = {
    AuditChannel.WEB: _("web page"), AuditChannel.REST: _("REST API"), AuditChannel.V1: _("OpenAI-compatible API"),
    AuditChannel.MCP: _("MCP"), AuditChannel.CHAT: _("chat answer"), AuditChannel.ADMIN: _("admin"),
    AuditChannel.API_TOKEN: _("API token"), AuditChannel.LDAP: _("LDAP"), AuditChannel.OIDC: _("OpenID Connect"),
    AuditChannel.LOCAL: _("password"), AuditChannel.SYNC: _("source sync"),
}


class AuditEvent(models.Model):
    """One line of the append-only audit log (identity/audit.py): who read which document, who
    signed in, whose groups and permissions changed. Ids and titles only, never passage text.

    No foreign keys: a line outlives the user, document and message it names. A database trigger
    refuses UPDATE and DELETE except the retention purge (migration 0005)."""

    at = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("at"))
    action = models.CharField(max_length=20, choices=AuditAction.choices, verbose_name=_("action"))
    user_id = models.BigIntegerField(null=True, blank=True, db_index=True, verbose_name=_("user id"))
    username = models.CharField(max_length=150, blank=True, verbose_name=_("user name"))
    # Who made the change when it is not `user` (an administrator changing someone's groups).
    actor = models.CharField(max_length=150, blank=True, verbose_name=_("changed by"))
    # An AuditChannel code (AUDIT_CHANNELS names them)
    via = models.CharField(max_length=20, blank=True, verbose_name=_("channel"))
    document_id = models.BigIntegerField(null=True, blank=True, db_index=True, verbose_name=_("document id"))
    document_title = models.CharField(max_length=300, blank=True, verbose_name=_("document title"))
    chunk_id = models.BigIntegerField(null=True, blank=True, verbose_name=_("chunk id"))
    version = models.IntegerField(null=True, blank=True, verbose_name=_("version"))
    message_id = models.BigIntegerField(null=True, blank=True, verbose_name=_("message id"))
    detail = models.JSONField(default=dict, blank=True, verbose_name=_("detail"))

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["action", "-at"], name="audit_action_at")]
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username or '-'} {self.action}"


class LanguageChoice(models.Model):
    """The language a user chose for the pages (the switcher); without a row, the browser's."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="language_choice",
                                verbose_name=_("user"))
    # No choices: adding a language to settings.LANGUAGES needs no migration (checked by the service).
    language = models.CharField(_("language"), max_length=10)
    changed_at = models.DateTimeField(_("changed at"), auto_now=True)

    class Meta:
        verbose_name = _("language choice")
        verbose_name_plural = _("language choices")

    def __str__(self) -> str:
        return f"{self.user_id}:{self.language}"
