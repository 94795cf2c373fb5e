"""Documents (a user's own, or shared in a collection), their extracted text and their chunks."""
from __future__ import annotations

import uuid
from pathlib import PurePath

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.contrib.auth.models import Group
from django.db import models
from django.db.models.expressions import RawSQL
from django.utils.translation import gettext_lazy as _

from core.ownership import OwnedQuerySet
from core.reasons import render as render_reason, render_all
from documents import chunking


class DocumentStatus(models.TextChoices):
    UPLOADED = "uploaded", _("Uploaded")
    PROCESSING = "processing", _("Processing")
    INDEXED = "indexed", _("Indexed")
    FAILED = "failed", _("Failed")
    REINDEXING = "reindexing", _("Re-indexing")


class ChunkingStrategy(models.TextChoices):
    """The strategies of documents.chunking.cutter, as choices of Document and of the retrieval setting."""

    TOKENS = chunking.TOKENS, _("Tokens")
    FIXED = chunking.FIXED, _("Fixed characters")
    LATE = chunking.LATE, _("Late chunking")


class CollectionVisibility(models.TextChoices):
    EVERYONE = "everyone", _("Everyone signed in")
    GROUPS = "groups", _("Members of the listed groups")


def readable_collections_sql(user) -> RawSQL:
    """The ids of the collections `user` may read, computed by PostgreSQL from group membership.

    The rule lives once, in the SQL function `ragsite_readable_collections` (documents migration
    0008_collections): row-level security, the full-text function and these querysets all call it.
    """
    return RawSQL("SELECT unnest(ragsite_readable_collections(%s))", [int(user.pk)])


# `DocumentQuerySet.visible_to`'s rule as a condition on a documents row named `d`, with the reader's id as
# the named parameter `%(user)s`: for the plain statements run on every question (documents.governance's
# retired documents, chat.selectors.conversation_scope), where building the ORM's query cost ~1 ms of CPU
# each time. Each statement that uses it has a test comparing it with `visible_to`.
VISIBLE_DOCUMENT_SQL = ("((d.collection_id IS NULL AND d.owner_id = %(user)s) "
                        "OR (d.is_active AND d.collection_id IN (SELECT unnest(ragsite_readable_collections(%(user)s)))))")


class ExpiredPolicy(models.TextChoices):
    """What happens to a document past its `valid_until` (documents/governance.py)."""

    STAY_MARKED = "stay", _("stay in answers, marked \"may be outdated\"")
    LEAVE = "leave", _("leave retrieval (still readable in the library)")


class CollectionQuerySet(models.QuerySet):
    def readable_by(self, user) -> "CollectionQuerySet":
        """Active collections the user may read (everyone, their groups, curators, superusers)."""
        if not user or not user.is_authenticated:
            return self.none()
        return self.filter(pk__in=readable_collections_sql(user))

    def curated_by(self, user) -> "CollectionQuerySet":
        """Collections the user may curate: all for superusers, else staff in the collection's curator group."""
        if not user or not user.is_authenticated or not user.is_active:
            return self.none()
        if user.is_superuser:
            return self.all()
        if not user.is_staff:
            return self.none()
        return self.filter(curator_group__user=user)


class Collection(models.Model):
    """Shared documents that curators maintain and groups of users (or everyone) read."""

    name = models.CharField(max_length=200, verbose_name=_("name"))
    slug = models.SlugField(max_length=100, unique=True, verbose_name=_("slug"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    is_active = models.BooleanField(default=True, db_default=True,
                                    help_text=_("An inactive collection stays stored but nobody reads or searches it."), verbose_name=_("is active"))
    visibility = models.CharField(max_length=20, choices=CollectionVisibility.choices,
                                  default=CollectionVisibility.GROUPS, verbose_name=_("visibility"))
    groups = models.ManyToManyField(Group, blank=True, related_name="readable_collections",
                                    help_text=_("Who reads it when the visibility is 'groups'."), verbose_name=_("groups"))
    # The curator rule: superusers, and staff members of this group (README, "Knowledge base").
    curator_group = models.ForeignKey(Group, on_delete=models.SET_NULL, null=True, blank=True,
                                      related_name="curated_collections",
                                      help_text=_("Staff members of this group upload, re-index, deactivate and delete "
                                                "its documents."), verbose_name=_("curator group"))
    # The topic its documents get when uploaded without one (curators need not re-type it per file).
    category = models.CharField(max_length=100, blank=True, default="",
                                help_text=_("Default category of documents uploaded into it without one"), verbose_name=_("category"))
    subcategory = models.CharField(max_length=100, blank=True, default="",
                                   help_text=_("Default subcategory of documents uploaded into it without a topic"), verbose_name=_("subcategory"))
    # Source governance (documents/governance.py): who answers for its documents, and the dates its
    # documents take when they have none of their own.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+", verbose_name=_("owner"),
                              help_text=_("Who answers for its documents being right and current."))
    review_by = models.DateField(null=True, blank=True, verbose_name=_("review by"),
                                 help_text=_("Its documents without a date of their own are due for review then."))
    valid_until = models.DateField(null=True, blank=True, verbose_name=_("valid until"),
                                   help_text=_("Its documents without a date of their own expire after this day."))
    expired_policy = models.CharField(max_length=10, choices=ExpiredPolicy.choices, default=ExpiredPolicy.STAY_MARKED,
                                      db_default=ExpiredPolicy.STAY_MARKED, verbose_name=_("expired documents"),
                                      help_text=_("What answers do with its expired documents (a document may set its own)."))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = CollectionQuerySet.as_manager()

    class Meta:
        verbose_name = _("collection")
        verbose_name_plural = _("collections")
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(visibility__in=CollectionVisibility.values),
                                   name="collection_visibility_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class DocumentQuerySet(OwnedQuerySet):
    # Documents widen core.ownership's rule (own rows) with the collections the user reads.
    def visible_to(self, user) -> "DocumentQuerySet":
        """Every read of documents goes through here: the user's own private documents, and the
        active documents of the active collections they may read (the same rule as row-level security)."""
        if not user or not user.is_authenticated:
            return self.none()
        return self.filter(models.Q(collection__isnull=True, owner_id=user.pk)
                           | models.Q(is_active=True, collection_id__in=readable_collections_sql(user)))

    def manageable_by(self, user) -> "DocumentQuerySet":
        """Documents the user may change (delete, re-index, deactivate): their own private ones and
        every document of the collections they curate."""
        if not user or not user.is_authenticated:
            return self.none()
        return self.filter(models.Q(collection__isnull=True, owner_id=user.pk)
                           | models.Q(collection__in=Collection.objects.curated_by(user)))


def document_upload_path(instance: "Document", filename: str) -> str:
    # A random folder per upload: file names never collide and are not guessable.
    suffix = PurePath(filename).suffix.lower()[:10]
    return f"documents/{instance.owner_id}/{uuid.uuid4().hex}{suffix}"


class Document(models.Model):
    # Lookups by owner use the (owner, created_at) and (owner, sha256) indexes. For a document of a
    # collection the owner is who uploaded it: who reads it comes from the collection alone.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="documents", db_index=False, verbose_name=_("owner")
    )
    # NULL: private to its owner. Deleting a collection goes through collection_delete, which removes
    # its documents first (PROTECT keeps anything else from leaving them half-deleted).
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, null=True, blank=True,
                                   related_name="documents", verbose_name=_("collection"))
    # Inactive: stored and indexed, but retrieval skips it (and only its owner / curators see it).
    is_active = models.BooleanField(default=True, db_default=True, verbose_name=_("is active"))
    title = models.CharField(max_length=255, verbose_name=_("title"))
    original_filename = models.CharField(max_length=255, verbose_name=_("original filename"))
    file = models.FileField(upload_to=document_upload_path, max_length=255, verbose_name=_("file"))
    mime_type = models.CharField(max_length=100, verbose_name=_("MIME type"))
    size = models.BigIntegerField(help_text=_("Bytes"), verbose_name=_("size"))
    sha256 = models.CharField(max_length=64, verbose_name=_("SHA-256"))
    status = models.CharField(max_length=20, choices=DocumentStatus.choices, default=DocumentStatus.UPLOADED, verbose_name=_("status"))
    # The model a document was indexed with is pinned: the server may change or vanish later,
    # the copies below say what its vectors are.
    # The AI server that embedded it. A plain id: documents sits below retrieval and names none of
    # its models; retrieval's migration 0010 owns the database's foreign key (ON DELETE SET NULL).
    embedding_server_id = models.BigIntegerField(null=True, blank=True, verbose_name=_("embedding server ID"))
    embedding_model = models.CharField(max_length=200, blank=True, verbose_name=_("embedding model"))
    embedding_dim = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("embedding dimensions"))
    chunking_strategy = models.CharField(max_length=20, choices=ChunkingStrategy.choices, blank=True, verbose_name=_("chunking strategy"))
    # Why the strategy in the settings was not the one used (late chunking fell back to tokens).
    chunking_note = models.TextField(blank=True, verbose_name=_("chunking note"))
    chunking_note_reason = models.JSONField(default=dict, blank=True, verbose_name=_("chunking note (code and parameters)"))
    chunk_count = models.PositiveIntegerField(default=0, verbose_name=_("chunk count"))
    pages_total = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("pages total"))
    pages_done = models.PositiveIntegerField(default=0, verbose_name=_("pages done"))
    chunks_total = models.PositiveIntegerField(default=0, verbose_name=_("chunks total"))
    chunks_embedded = models.PositiveIntegerField(default=0, verbose_name=_("chunks embedded"))
    # The current stage in words while indexing ("OCR 12 of 40 pages"); empty when idle.
    progress_note = models.CharField(max_length=200, blank=True, verbose_name=_("progress note"))
    # The same as a reason (core.reasons), shown in the reader's language while progress_note is set.
    progress_note_reason = models.JSONField(default=dict, blank=True, verbose_name=_("progress note (code and parameters)"))
    # Pages read by OCR: {"pages": [...], "confidence": mean 0-100, "language": "deu", ...}.
    ocr = models.JSONField(default=dict, blank=True, verbose_name=_("OCR"))
    indexed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("indexed at"))
    # index_error in English (logs, machine output, rows older than reasons); index_error_reason is what
    # readers see, in their language (core.reasons): {"code", "text", "params"}, empty when there is none.
    index_error = models.TextField(blank=True, verbose_name=_("index error"))
    index_error_reason = models.JSONField(default=dict, blank=True, verbose_name=_("index error (code and parameters)"))
    index_warnings = models.JSONField(default=list, blank=True, verbose_name=_("index warnings"))
    empty_pages = models.JSONField(default=list, blank=True, verbose_name=_("empty pages"))
    index_attempts = models.PositiveSmallIntegerField(default=0, verbose_name=_("index attempts"))
    # The number of the DocumentVersion whose chunks answer (documents/versions.py).
    version = models.PositiveIntegerField(default=1, db_default=1, verbose_name=_("version"))
    # Source governance (documents/governance.py); empty: the collection's dates.
    review_by = models.DateField(null=True, blank=True, verbose_name=_("review by"),
                                 help_text=_("Due for review on this day (empty: the collection's date)."))
    valid_until = models.DateField(null=True, blank=True, verbose_name=_("valid until"),
                                   help_text=_("Expired after this day: answers citing it say it may be outdated "
                                               "(empty: the collection's date)."))
    expired_policy = models.CharField(max_length=10, choices=ExpiredPolicy.choices, blank=True, default="",
                                      db_default="", verbose_name=_("when expired"),
                                      help_text=_("Empty: the collection's policy (a document of no collection stays, marked)."))
    # The last index's work: {"embedded_chunks", "reused_chunks" (vectors from the embeddings cache),
    # "seconds": {"extract", "chunk", "embed", "commit", "total"}}.
    index_stats = models.JSONField(default=dict, blank=True, verbose_name=_("index stats"))
    # Renewed while a worker processes the document; a stale one means the worker died.
    heartbeat_at = models.DateTimeField(null=True, blank=True, verbose_name=_("heartbeat at"))
    category = models.CharField(max_length=100, blank=True, verbose_name=_("category"))
    subcategory = models.CharField(max_length=100, blank=True, verbose_name=_("subcategory"))
    language = models.CharField(max_length=20, blank=True, help_text=_("ISO 639-1 code, detected or given"), verbose_name=_("language"))
    text_config = models.CharField(
        max_length=40, default="simple", help_text=_("PostgreSQL text search configuration of the chunks"), verbose_name=_("text config")
    )
    # documents.language.search_text.ANALYSIS_VERSION its chunks' search vectors were built with
    # (0: before versions were kept); an older one is rebuilt by `rebuild_search_vectors --outdated`.
    search_analysis = models.PositiveSmallIntegerField(default=0, verbose_name=_("search analysis"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = DocumentQuerySet.as_manager()

    class Meta:
        verbose_name = _("document")
        verbose_name_plural = _("documents")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "sha256"], condition=models.Q(collection__isnull=True),
                                    name="document_sha256_unique_per_owner"),
            models.UniqueConstraint(fields=["collection", "sha256"], condition=models.Q(collection__isnull=False),
                                    name="document_sha256_unique_per_collection"),
            models.CheckConstraint(
                condition=models.Q(status__in=DocumentStatus.values), name="document_status_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="document_owner_created"),
            models.Index(fields=["status"], name="document_status"),
            models.Index(fields=["category", "subcategory"], name="document_category"),
            models.Index(fields=["collection", "-created_at"], name="document_collection_created",
                         condition=models.Q(collection__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.title or self.original_filename

    @property
    def index_error_text(self) -> str:
        """Why indexing failed or retries, in the active language (a row older than reasons: its English text)."""
        return render_reason(self.index_error_reason, fallback=self.index_error)

    @property
    def chunking_note_text(self) -> str:
        """Why the chunking strategy asked for was not used, in the active language."""
        return render_reason(self.chunking_note_reason, fallback=self.chunking_note)

    @property
    def progress_note_text(self) -> str:
        """The current stage in the active language; empty when idle (progress_note is cleared then)."""
        return render_reason(self.progress_note_reason, fallback=self.progress_note) if self.progress_note else ""

    @property
    def index_warnings_text(self) -> list[str]:
        """The indexing warnings in the active language (stored reasons; older rows' English texts)."""
        return render_all(self.index_warnings)


class VersionStatus(models.TextChoices):
    UPLOADED = "uploaded", _("Uploaded")
    PROCESSING = "processing", _("Processing")
    CURRENT = "current", _("Current")
    SUPERSEDED = "superseded", _("Superseded")
    FAILED = "failed", _("Failed")


def version_upload_path(instance: "DocumentVersion", filename: str) -> str:
    suffix = PurePath(filename).suffix.lower()[:10]
    return f"documents/{instance.document.owner_id}/{uuid.uuid4().hex}{suffix}"


class DocumentVersion(models.Model):
    """One uploaded file of a document. The current one's file, text and chunks are the document's own;
    a superseded one keeps its file, text and chunk layout for the citations that quoted it."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="versions", verbose_name=_("document"))
    number = models.PositiveIntegerField(verbose_name=_("number"))
    file = models.FileField(upload_to=version_upload_path, max_length=255, verbose_name=_("file"))
    original_filename = models.CharField(max_length=255, verbose_name=_("original filename"))
    mime_type = models.CharField(max_length=100, verbose_name=_("MIME type"))
    size = models.BigIntegerField(help_text=_("Bytes"), verbose_name=_("size"))
    sha256 = models.CharField(max_length=64, verbose_name=_("SHA-256"))
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+", verbose_name=_("uploaded by"))
    status = models.CharField(max_length=20, choices=VersionStatus.choices, default=VersionStatus.UPLOADED, verbose_name=_("status"))
    index_error = models.TextField(blank=True, verbose_name=_("index error"))
    index_error_reason = models.JSONField(default=dict, blank=True, verbose_name=_("index error (code and parameters)"))
    chunk_count = models.PositiveIntegerField(default=0, verbose_name=_("chunk count"))
    embedded_chunks = models.PositiveIntegerField(default=0, verbose_name=_("embedded chunks"))
    reused_chunks = models.PositiveIntegerField(default=0, verbose_name=_("reused chunks"))
    index_stats = models.JSONField(default=dict, blank=True, verbose_name=_("index stats"))
    indexed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("indexed at"))
    # Filled when it is superseded (the document's text and chunks move on): what its citations point into.
    text = models.TextField(blank=True, verbose_name=_("text"))
    pages = models.JSONField(default=list, blank=True, verbose_name=_("pages"))
    # [[chunk_index, start_offset, end_offset, page_number, heading_path], ...]
    segments = models.JSONField(default=list, blank=True, verbose_name=_("segments"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("document version")
        verbose_name_plural = _("document versions")
        ordering = ["document_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["document", "number"], name="documentversion_unique_number"),
            models.CheckConstraint(condition=models.Q(status__in=VersionStatus.values),
                                   name="documentversion_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id} v{self.number}"

    @property
    def index_error_text(self) -> str:
        """Why this version failed, in the active language (a row older than reasons: its English text)."""
        return render_reason(self.index_error_reason, fallback=self.index_error)


class DocumentText(models.Model):
    """The extracted text of a document; chunk offsets point into it.

    Kept apart from Document so lists never load megabytes of text.
    """

    document = models.OneToOneField(Document, on_delete=models.CASCADE, primary_key=True, related_name="text", verbose_name=_("document"))
    text = models.TextField(verbose_name=_("text"))
    # [[page_number, start_offset, end_offset], ...] for paged formats (PDF).
    pages = models.JSONField(default=list, blank=True, verbose_name=_("pages"))

    def __str__(self) -> str:
        return f"text of document {self.document_id}"

    class Meta:
        verbose_name = _("document text")
        verbose_name_plural = _("document texts")


class ChunkQuerySet(OwnedQuerySet):
    def visible_to(self, user) -> "ChunkQuerySet":
        """Chunks of the documents `Document.objects.visible_to(user)` returns."""
        if not user or not user.is_authenticated:
            return self.none()
        return self.filter(document__in=Document.objects.visible_to(user))


class Chunk(models.Model):
    # ON DELETE CASCADE is set in the database (retrieval migration 0003): deleting a document
    # with 50,000 chunks is then one statement, not 50,000 rows loaded by Django's collector.
    document = models.ForeignKey(Document, on_delete=models.DO_NOTHING, related_name="chunks", db_index=False, verbose_name=_("document"))
    # Denormalised from the document: filters and row-level security need no join.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING, related_name="+", verbose_name=_("owner"))
    collection = models.ForeignKey(Collection, on_delete=models.DO_NOTHING, null=True, blank=True,
                                   related_name="+", db_index=False, verbose_name=_("collection"))
    is_active = models.BooleanField(default=True, db_default=True, verbose_name=_("is active"))
    chunk_index = models.PositiveIntegerField(verbose_name=_("chunk index"))
    content = models.TextField(verbose_name=_("content"))
    start_offset = models.PositiveIntegerField(verbose_name=_("start offset"))
    end_offset = models.PositiveIntegerField(verbose_name=_("end offset"))
    page_number = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("page number"))
    heading_path = ArrayField(models.CharField(max_length=500), default=list, blank=True, verbose_name=_("heading path"))
    token_count = models.PositiveIntegerField(default=0, verbose_name=_("token count"))
    metadata = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    text_config = models.CharField(max_length=40, default="simple", verbose_name=_("text config"))
    search_vector = SearchVectorField(null=True, blank=True, verbose_name=_("search vector"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    objects = ChunkQuerySet.as_manager()

    class Meta:
        verbose_name = _("chunk")
        verbose_name_plural = _("chunks")
        ordering = ["document_id", "chunk_index"]
        constraints = [
            models.UniqueConstraint(fields=["document", "chunk_index"], name="chunk_unique_index"),
            models.CheckConstraint(condition=models.Q(end_offset__gte=models.F("start_offset")), name="chunk_offsets_ordered"),
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.chunk_index}"


class PendingUpload(models.Model):
    """A direct upload to the bucket that was offered but not finalised yet (documents/direct_upload.py).

    The object may or may not have arrived; an upload never finalised is removed with its object
    once `expires_at` and the finalize grace have passed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False, verbose_name=_("ID"))
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("owner"))
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, null=True, blank=True, related_name="+", verbose_name=_("collection"))
    name = models.CharField(max_length=255, verbose_name=_("name"))
    size = models.BigIntegerField(help_text=_("Bytes, as declared and signed"), verbose_name=_("size"))
    content_type = models.CharField(max_length=100, verbose_name=_("content type"))
    storage_name = models.CharField(max_length=255, unique=True, verbose_name=_("storage name"))
    expires_at = models.DateTimeField(help_text=_("When the upload URL stops working"), db_index=True, verbose_name=_("expires at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    def __str__(self) -> str:
        return f"{self.name} ({self.pk})"

    class Meta:
        verbose_name = _("pending upload")
        verbose_name_plural = _("pending uploads")
