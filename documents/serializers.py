from rest_framework import serializers

from core.pagination import StrictCharField

from documents.models import Collection, CollectionVisibility, Document, DocumentVersion


class DocumentSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="original_filename", read_only=True)
    status_display = serializers.CharField(source="get_status_display", read_only=True)
    # Empty until the document is indexed (not one of the choices, so not their enum in the schema).
    chunking_strategy = serializers.CharField(read_only=True, help_text="tokens, fixed or late; empty until indexed")
    embedding_server_id = serializers.IntegerField(read_only=True, allow_null=True,
                                                   help_text="The AI server whose model embedded this document")
    collection = serializers.IntegerField(source="collection_id", read_only=True, allow_null=True,
                                          help_text="The collection it is shared in; null for a private document")
    index_error = serializers.CharField(source="index_error_text", read_only=True,
                                        help_text="Why indexing failed or retries, in the request's language")
    index_error_code = serializers.SerializerMethodField(help_text="The machine code of index_error; empty when none")
    chunking_note = serializers.CharField(source="chunking_note_text", read_only=True,
                                          help_text="Why the chunking strategy differs from the setting, in the request's language")
    progress_note = serializers.CharField(source="progress_note_text", read_only=True,
                                          help_text="The current stage in words while indexing, in the request's language")
    index_warnings = serializers.ListField(child=serializers.CharField(), source="index_warnings_text", read_only=True,
                                           help_text="What indexing could not do fully, in the request's language")

    class Meta:
        model = Document
        fields = [
            "id", "title", "name", "collection", "is_active", "mime_type", "size", "sha256", "status", "status_display",
            "category", "subcategory", "language", "chunk_count", "pages_total", "pages_done",
            "chunks_total", "chunks_embedded", "embedding_server_id", "embedding_model", "embedding_dim",
            "chunking_strategy", "chunking_note", "indexed_at", "index_error", "index_error_code", "index_warnings", "empty_pages",
            "progress_note", "ocr", "index_stats", "version", "created_at", "updated_at",
        ]
        read_only_fields = fields

    def get_index_error_code(self, document: Document) -> str:
        return (document.index_error_reason or {}).get("code", "")


class VersionSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="original_filename", read_only=True)
    uploaded_by = serializers.CharField(source="uploaded_by.username", read_only=True, allow_null=True, default=None,
                                        help_text="Who uploaded it (null once that user is deleted)")
    index_error = serializers.CharField(source="index_error_text", read_only=True,
                                        help_text="Why this version failed, in the request's language")

    class Meta:
        model = DocumentVersion
        fields = ["number", "name", "size", "sha256", "uploaded_by", "created_at", "status", "index_error",
                  "chunk_count", "embedded_chunks", "reused_chunks"]
        read_only_fields = fields


class VersionUploadSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=True)


class DocumentUploadSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=True)
    title = serializers.CharField(required=False, allow_blank=True, max_length=255)
    category = serializers.CharField(required=False, allow_blank=True, max_length=100)
    subcategory = serializers.CharField(required=False, allow_blank=True, max_length=100)
    language = serializers.CharField(required=False, allow_blank=True, max_length=20,
                                     help_text="ISO 639-1 code; detected from the text when empty")
    collection = serializers.CharField(required=False, allow_blank=True, max_length=100,
                                       help_text="Id or slug of a collection you curate: share the document there")


class DocumentUpdateSerializer(serializers.Serializer):
    collection = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=100,
                                       help_text="Move it: id or slug of a collection you curate, or null / '' to make "
                                                 "it private to its uploader (who must be you)")


class UploadUrlRequestSerializer(serializers.Serializer):
    name = StrictCharField(max_length=255, help_text="The file's name")
    size = serializers.IntegerField(min_value=1, help_text="Bytes; the upload must have exactly this size")
    content_type = StrictCharField(max_length=100, help_text="The upload must be sent with exactly this type")
    collection = StrictCharField(required=False, allow_blank=True, max_length=100,
                                 help_text="Id or slug of a collection you curate: share the document there")


class UploadUrlSerializer(serializers.Serializer):
    upload_id = serializers.UUIDField()
    url = serializers.URLField(help_text="POST the file here as multipart/form-data, after `fields`")
    method = serializers.CharField(help_text="Always POST")
    fields = serializers.DictField(child=serializers.CharField(),
                                   help_text="Form fields to send before the file (the signed policy)")
    expires_at = serializers.DateTimeField()


class FinalizeRequestSerializer(serializers.Serializer):
    upload_id = serializers.UUIDField()
    sha256 = serializers.RegexField(r"^[0-9a-fA-F]{64}$", required=False, allow_blank=True,
                                    help_text="The file's SHA-256 in hex: checked against the stored bytes")


class SegmentSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    chunk_index = serializers.IntegerField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()
    page_number = serializers.IntegerField(allow_null=True)
    heading_path = serializers.ListField(child=serializers.CharField())


class PageSerializer(serializers.Serializer):
    page_number = serializers.IntegerField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()


class DocumentTextSerializer(serializers.Serializer):
    """The extracted text; every segment satisfies text[start_offset:end_offset] == its chunk's content."""

    document_id = serializers.IntegerField()
    text = serializers.CharField()
    pages = PageSerializer(many=True, help_text="Paged formats (PDF): where each page's text lies")
    segments = SegmentSerializer(many=True)


class ChunkSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField(source="id")
    chunk_index = serializers.IntegerField()
    content = serializers.CharField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()
    page_number = serializers.IntegerField(allow_null=True)
    page_label = serializers.CharField(source="metadata.page_label", default=None, allow_null=True,
                                       help_text="The label printed on that page (\"iii\", \"7\"); null: the page number")
    heading_path = serializers.ListField(child=serializers.CharField())
    token_count = serializers.IntegerField()


class CollectionSerializer(serializers.ModelSerializer):
    groups = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True,
                                          help_text="Reader groups (when visibility is 'groups')")
    curators = serializers.CharField(source="curator_group.name", read_only=True, allow_null=True, default=None,
                                     help_text="The curator group: its staff members curate the collection")
    document_count = serializers.IntegerField(read_only=True, default=0, help_text="Active documents")
    can_curate = serializers.SerializerMethodField()

    class Meta:
        model = Collection
        fields = ["id", "name", "slug", "description", "is_active", "visibility", "groups", "curators", "category",
                  "subcategory",
                  "document_count", "can_curate", "created_at", "updated_at"]
        read_only_fields = fields

    def get_can_curate(self, obj) -> bool:
        return obj.pk in self.context.get("curated_ids", ())


class CollectionWriteSerializer(serializers.Serializer):
    name = StrictCharField(max_length=200)
    slug = serializers.SlugField(max_length=100)
    description = StrictCharField(required=False, allow_blank=True, default="")
    is_active = serializers.BooleanField(required=False, default=True)
    visibility = serializers.ChoiceField(choices=CollectionVisibility.choices, required=False,
                                         default=CollectionVisibility.GROUPS)
    groups = serializers.ListField(child=StrictCharField(max_length=150), required=False, default=list,
                                   help_text="Names of the Django groups that read it")
    curators = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=150, default=None,
                                     help_text="Name of the group whose staff members curate it")
    category = StrictCharField(required=False, allow_blank=True, max_length=100, default="",
                               help_text="Default category of documents uploaded into it without a topic")
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100, default="",
                                  help_text="Default subcategory of documents uploaded into it without a topic")


class DocumentTopicSerializer(serializers.Serializer):
    category = StrictCharField(required=False, allow_blank=True, max_length=100)
    subcategory = StrictCharField(required=False, allow_blank=True, max_length=100)
