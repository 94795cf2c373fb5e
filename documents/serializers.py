from rest_framework import serializers

from documents.models import Document


class DocumentSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="original_filename", read_only=True)
    status_display = serializers.CharField(source="get_status_display", read_only=True)

    class Meta:
        model = Document
        fields = [
            "id", "title", "name", "mime_type", "size", "sha256", "status", "status_display",
            "category", "subcategory", "language", "chunk_count", "pages_total", "pages_done",
            "chunks_total", "chunks_embedded", "embedding_model", "embedding_dim", "chunking_strategy",
            "chunking_note", "indexed_at", "index_error", "index_warnings", "empty_pages", "progress_note", "ocr",
            "created_at", "updated_at",
        ]
        read_only_fields = fields


class DocumentUploadSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=True)
    title = serializers.CharField(required=False, allow_blank=True, max_length=255)
    category = serializers.CharField(required=False, allow_blank=True, max_length=100)
    subcategory = serializers.CharField(required=False, allow_blank=True, max_length=100)
    language = serializers.CharField(required=False, allow_blank=True, max_length=20,
                                     help_text="ISO 639-1 code; detected from the text when empty")
