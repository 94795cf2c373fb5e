from django.contrib import admin

from documents.models import Chunk, Document


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ("chunk_index", "page_number", "heading_path", "token_count", "content")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True

    def get_queryset(self, request):
        # The first chunks are enough to see what the extraction produced.
        qs = super().get_queryset(request)
        return qs.filter(chunk_index__lt=20)


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "owner", "status", "chunk_count", "pages_total", "embedding_model", "category",
                    "subcategory", "created_at")
    list_filter = ("status", "embedding_model", "category", "mime_type")
    search_fields = ("title", "original_filename", "sha256", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("sha256", "size", "mime_type", "status", "chunk_count", "pages_total", "pages_done",
                       "chunks_total", "chunks_embedded", "indexed_at", "index_error", "index_warnings",
                       "empty_pages", "index_attempts", "heartbeat_at", "embedding_server",
                       "embedding_model", "embedding_dim", "chunking_strategy", "language", "text_config",
                       "created_at", "updated_at")
    inlines = [ChunkInline]


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ("id", "document", "chunk_index", "page_number", "token_count")
    search_fields = ("content",)
    list_select_related = ("document",)
    raw_id_fields = ("document", "owner")
    readonly_fields = ("search_vector",)
