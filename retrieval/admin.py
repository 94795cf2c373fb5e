from django import forms
from django.contrib import admin

from retrieval.models import AiServer, EmbeddingModel, KnowledgeEntry, RetrievalSettings, SubcategoryMapping


class AiServerForm(forms.ModelForm):
    base_url = forms.URLField(assume_scheme="http", required=False, max_length=500,
                              help_text="e.g. http://127.0.0.1:11434 (Ollama) or https://api.openai.com")
    # Write-only: the stored key is never sent back to the browser.
    api_key = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False),
        help_text="Leave empty to keep the stored key. Tick 'clear API key' to remove it.",
    )
    clear_api_key = forms.BooleanField(required=False, label="Clear API key")

    class Meta:
        model = AiServer
        fields = "__all__"

    def clean(self):
        data = super().clean()
        if data.get("clear_api_key"):
            data["api_key"] = ""
        elif not data.get("api_key") and self.instance.pk:
            data["api_key"] = self.instance.api_key
        return data


@admin.register(AiServer)
class AiServerAdmin(admin.ModelAdmin):
    form = AiServerForm
    list_display = ("name", "kind", "base_url", "is_external", "is_active", "api_key_hint", "capability_list")
    list_filter = ("kind", "is_external", "is_active")
    search_fields = ("name", "base_url")

    @admin.display(description="capabilities")
    def capability_list(self, obj):
        caps = obj.capabilities or {}
        return ", ".join(key for key in ("chat", "embeddings", "rerank", "token_embeddings") if caps.get(key)) or "—"


@admin.register(EmbeddingModel)
class EmbeddingModelAdmin(admin.ModelAdmin):
    list_display = ("name", "dim", "index_name", "created_at")
    readonly_fields = ("name", "dim", "created_at")

    def has_add_permission(self, request):
        return False  # created with their HNSW index when a server is first used


@admin.register(KnowledgeEntry)
class KnowledgeEntryAdmin(admin.ModelAdmin):
    list_display = ("question", "category", "subcategory", "is_active", "approved_at", "approved_by", "embedding_state")
    list_filter = ("category", "subcategory", "is_active", ("approved_at", admin.EmptyFieldListFilter), "embedding_state")
    search_fields = ("question", "answer")
    readonly_fields = ("approved_by", "approved_at", "embedding_state", "embedding_error", "created_at", "updated_at")


@admin.register(SubcategoryMapping)
class SubcategoryMappingAdmin(admin.ModelAdmin):
    list_display = ("subcategory", "general_subcategory")
    search_fields = ("subcategory", "general_subcategory")


@admin.register(RetrievalSettings)
class RetrievalSettingsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "rag_enabled", "external_ai_disabled", "default_embedding_server", "default_chat_server",
                    "chunking_strategy", "final_top_n", "updated_at")

    def has_add_permission(self, request):
        return not RetrievalSettings.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False
