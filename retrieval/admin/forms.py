"""Forms of the staff admin: AI servers per kind, Q&A pairs, settings, import, embed and retrieval test."""
from __future__ import annotations

from django.utils.text import format_lazy
from django.utils.translation import gettext, gettext_lazy
from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q

from retrieval.models import (
    BUILTIN_EMBEDDING_DIM,
    BUILTIN_EMBEDDING_MODEL,
    AiServer,
    AiServerKind,
    KnowledgeEntry,
    RetrievalSettings,
)

# Capability keys edited as form fields; other keys in AiServer.capabilities are kept as they are.
CAPABILITY_FIELDS = {
    "embeddings": "embeddings", "embedding_model": "embedding_model", "embedding_dim": "embedding_dim",
    "embedding_max_input_tokens": "embedding_max_input_tokens", "chat": "chat", "chat_model": "chat_model",
    "context_window": "context_window", "tools": "tools", "rerank": "rerank", "rerank_model": "rerank_model",
    "token_embeddings": "token_embeddings", "json_answers": "json_answers", "temperature": "temperature",
    "max_tokens": "max_tokens",
}


class AiServerForm(forms.ModelForm):
    base_url = forms.URLField(assume_scheme="http", required=False, max_length=500, label=gettext_lazy("Base URL"),
                              help_text=gettext_lazy("e.g. http://127.0.0.1:11434 (Ollama) or https://api.openai.com; "
                                        "not used by the built-in server"))
    # Write-only: the stored key is never sent back to the browser.
    api_key = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False), label=gettext_lazy("API key"),
        help_text=gettext_lazy("Leave empty to keep the stored key. Tick 'clear API key' to remove it."),
    )
    clear_api_key = forms.BooleanField(required=False, label=gettext_lazy("Clear API key"))

    embeddings = forms.BooleanField(
        required=False, label=gettext_lazy("Embeds text"),
        help_text=gettext_lazy("Turns text into embeddings: lists of numbers that capture meaning, so that documents are "
                               "found by what they mean, not only by their words."))
    embedding_model = forms.CharField(required=False, max_length=200,
                                      help_text=gettext_lazy("Model name sent to the server, e.g. bge-m3 or nomic-embed-text"))
    embedding_dim = forms.IntegerField(required=False, min_value=1, max_value=16000, label=gettext_lazy("Embedding dimension"),
                                       help_text=gettext_lazy("Vector size; “Test connection” reports what the server returns"))
    embedding_max_input_tokens = forms.IntegerField(
        required=False, min_value=1, label=gettext_lazy("Max input tokens"),
        help_text=gettext_lazy("The model's window; late chunking embeds long documents in windows of this size (default 512)"))
    chat = forms.BooleanField(required=False, label=gettext_lazy("Answers chats"))
    chat_model = forms.CharField(required=False, max_length=200, help_text=gettext_lazy("e.g. llama3.1:8b or gpt-4o-mini"))
    context_window = forms.IntegerField(
        required=False, min_value=256,
        help_text=gettext_lazy("How much text the chat model reads at once, in tokens (a token is a word or a piece of one)"))
    tools = forms.BooleanField(required=False, label=gettext_lazy("Tool calling"),
                               help_text=gettext_lazy("The chat model calls tools (OpenAI-style function calling); needed by "
                                         "the agentic chat mode"))
    json_answers = forms.BooleanField(
        required=False, label=gettext_lazy("JSON sections answers"),
        help_text=gettext_lazy("Ask the chat model for {\"sections\": [{\"text\", \"source_ids\"}]} (response_format json_object) "
                  "instead of text with [S1] tags; for models that follow JSON instructions well"))
    temperature = forms.FloatField(required=False, min_value=0, max_value=2,
                                   help_text=gettext_lazy("This server's sampling temperature; empty: the retrieval settings' (0.4)"))
    max_tokens = forms.IntegerField(required=False, min_value=1, label=gettext_lazy("Max answer tokens"),
                                    help_text=gettext_lazy("This server's longest answer; empty: the retrieval settings'"))
    rerank = forms.BooleanField(
        required=False, label=gettext_lazy("Reranks"),
        help_text=gettext_lazy("Reads the question with each found passage and puts the passages in a better order "
                               "(slower, often more precise)."))
    rerank_model = forms.CharField(required=False, max_length=200)
    token_embeddings = forms.BooleanField(
        required=False, label=gettext_lazy("Token embeddings (late chunking)"),
        help_text=gettext_lazy("Late chunking: the whole document is read before it is cut, so that each chunk keeps "
                               "its context. Needs a text-embeddings-inference server with /tokenize and /embed_all "
                               "and a mean-pooling model"))

    class Meta:
        model = AiServer
        exclude = ("capabilities",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        caps = self.instance.capabilities or {}
        for key in CAPABILITY_FIELDS:
            if key in caps:
                self.initial.setdefault(key, caps[key])

    def clean(self):
        data = super().clean()
        if data.get("clear_api_key"):
            data["api_key"] = ""
        elif not data.get("api_key") and self.instance.pk:
            data["api_key"] = self.instance.api_key
        kind = data.get("kind")
        if kind == AiServerKind.BUILTIN:
            # The built-in model is fixed: it embeds with one model and answers no chats.
            if data.get("base_url"):
                self.add_error("base_url", gettext("The built-in server runs inside ragsite; leave the address empty."))
            if data.get("chat"):
                self.add_error("chat", gettext("The built-in server only embeds text."))
            data.update(embeddings=True, embedding_model=BUILTIN_EMBEDDING_MODEL, embedding_dim=BUILTIN_EMBEDDING_DIM)
            data["is_external"] = False
        elif kind:
            if not data.get("base_url"):
                self.add_error("base_url", gettext("An OpenAI-compatible or Ollama server needs its address."))
            if data.get("embeddings"):
                if not data.get("embedding_model"):
                    self.add_error("embedding_model", gettext("Name the embedding model."))
                if not data.get("embedding_dim"):
                    self.add_error("embedding_dim", gettext("Give the vector size (Test connection shows it)."))
            if data.get("chat") and not data.get("chat_model"):
                self.add_error("chat_model", gettext("Name the chat model."))
            if data.get("tools") and not data.get("chat"):
                self.add_error("tools", gettext("Tool calling is a chat capability: tick “Answers chats” too."))
            if data.get("rerank") and not data.get("rerank_model") and kind == AiServerKind.OLLAMA:
                self.add_error("rerank_model", gettext("Name the rerank model."))
        return data

    def save(self, commit=True):
        server = super().save(commit=False)
        caps = dict(server.capabilities or {})
        for key in CAPABILITY_FIELDS:
            value = self.cleaned_data.get(key)
            if value is None or value == "" or value is False:  # a temperature of 0 is a value
                caps.pop(key, None)
            else:
                caps[key] = value
        server.capabilities = caps
        if commit:
            server.save()
        return server


class KnowledgeEntryForm(forms.ModelForm):
    approve = forms.BooleanField(required=False, initial=True, label=gettext_lazy("Approve when saving"),
                                 help_text=gettext_lazy("Records you and the time; only approved, active pairs answer questions."))
    # The knowledge gap this pair answers (the gap inbox's "write an approved answer"): approving closes it.
    from_gap = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    class Meta:
        model = KnowledgeEntry
        fields = ("question", "answer", "category", "subcategory", "is_active")
        widgets = {"question": forms.Textarea(attrs={"rows": 3}), "answer": forms.Textarea(attrs={"rows": 8})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "approve" in self.fields:
            self.fields["approve"].initial = False  # editing a waiting pair does not approve it by accident

    def clean(self):
        data = super().clean()
        if data.get("subcategory") and not data.get("category"):
            self.add_error("category", gettext("A subcategory needs a category."))
        return data


class KnowledgeImportForm(forms.Form):
    file = forms.FileField(help_text=gettext_lazy("CSV with a header row, or JSON: a list of objects. Columns / keys: "
                                     "question, answer, category, subcategory (question and answer required)."))
    approve = forms.BooleanField(required=False, initial=True, label=gettext_lazy("Approve the imported pairs"),
                                 help_text=gettext_lazy("Unticked, they are saved but do not answer until approved."))


class EmbedTextForm(forms.Form):
    texts = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 80}), max_length=20000,
                            help_text=gettext_lazy("One text per line (at most 16); the similarity of every pair is shown."))
    kind = forms.ChoiceField(choices=[("query", "as a query"), ("passage", "as a passage")], initial="query")

    def clean_texts(self):
        lines = [line.strip() for line in self.cleaned_data["texts"].splitlines() if line.strip()]
        if not lines:
            raise forms.ValidationError(gettext("Type at least one text."))
        if len(lines) > 16:
            raise forms.ValidationError(gettext("At most 16 texts at a time."))
        return lines


MAX_AGENT_SEARCHES = 10


class RetrievalSettingsForm(forms.ModelForm):
    class Meta:
        model = RetrievalSettings
        fields = "__all__"
        labels = {
            "rag_enabled": gettext_lazy("RAG enabled"), "external_ai_disabled": gettext_lazy("External AI disabled"),
            "vector_top_k": gettext_lazy("Vector top K"), "fts_top_k": gettext_lazy("Full-text top K"), "fts_weight": gettext_lazy("Full-text weight"),
            "fts_ranking": gettext_lazy("Full-text ranking"),
            "final_top_n": gettext_lazy("Final top N"), "rrf_k": gettext_lazy("RRF k"), "qa_distance_threshold": gettext_lazy("Q&A distance threshold"),
            "qa_limit": gettext_lazy("Q&A limit"), "doc_distance_threshold": gettext_lazy("Document distance threshold"),
            "doc_limit": gettext_lazy("Document limit"), "max_chunks_per_document": gettext_lazy("Max chunks per document"),
        }
        help_texts = {
            # The search fields' help is the models' (plain words, retrieval/models.py); these add details.
            "fts_ranking": gettext_lazy("How the full-text arm orders its passages. ts_rank (default): passages holding more of "
                           "the question's words first; ts_rank_cd (cover density) counts every occurrence of any "
                           "question word, so one repeated common word can outrank the rest (XQuAD hit@1 of the "
                           "arm: 0.930 against 0.769)"),
            "rerank_server": gettext_lazy("An active OpenAI-compatible server with the rerank capability (text-embeddings-inference "
                             "/rerank, or a Jina/Cohere-compatible /v1/rerank). Empty: no reranking."),
            "rerank_candidates": gettext_lazy("The best fused passages of a tier sent to the reranker; the tier is then cut to "
                                 "its limit (final top N, or the document limit with a category)"),
            "rerank_timeout": gettext_lazy("Seconds to wait for the reranker, one attempt; on timeout or error the fused order "
                              "is kept and the trace says so"),
            "chat_mode": gettext_lazy("Agentic: the model gets a search tool instead of passages fetched beforehand and searches "
                         "as often as the budget below allows (for very large documents and multi-step questions). "
                         "Needs a default chat server with “Tool calling”; otherwise answers use the passages."),
            "agent_max_searches": format_lazy(gettext_lazy("Agentic mode: searches the model may make per question "
                                                           "(1–{limit}); then it must answer"), limit=MAX_AGENT_SEARCHES),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Only servers able to do the job, plus the current choice (so an old choice never blocks a save).
        active = AiServer.objects.filter(is_active=True)
        if "default_embedding_server" in self.fields:
            self.fields["default_embedding_server"].queryset = AiServer.objects.filter(
                Q(pk=self.instance.default_embedding_server_id)
                | Q(is_active=True, kind=AiServerKind.BUILTIN) | Q(is_active=True, capabilities__embeddings=True))
            self.fields["default_chat_server"].queryset = active.filter(capabilities__chat=True) | \
                AiServer.objects.filter(pk=self.instance.default_chat_server_id)
        if "rerank_server" in self.fields:
            self.fields["rerank_server"].queryset = active.filter(capabilities__rerank=True, kind=AiServerKind.OPENAI) | \
                AiServer.objects.filter(pk=self.instance.rerank_server_id)

    def clean(self):
        data = super().clean()
        for size_name, overlap_name, unit, smallest in (("chunk_size", "chunk_overlap", "tokens", 16),
                                                        ("fixed_chunk_size", "fixed_chunk_overlap", "characters", 100)):
            size, overlap = data.get(size_name), data.get(overlap_name)
            if size is not None and size < smallest:
                self.add_error(size_name, f"Chunks of fewer than {smallest} {unit} find nothing useful.")
            if size is not None and overlap is not None and overlap >= size:
                self.add_error(overlap_name, gettext("The overlap must be smaller than the chunk size."))
        for name in ("vector_weight", "fts_weight"):
            if data.get(name) is not None and data[name] < 0:
                self.add_error(name, gettext("A weight cannot be negative (0 turns the arm off in the fusion)."))
        for name in ("qa_distance_threshold", "doc_distance_threshold"):
            if data.get(name) is not None and not 0 < data[name] <= 2:
                self.add_error(name, gettext("A cosine distance threshold lies between 0 and 2."))
        for name in ("final_top_n", "vector_top_k", "fts_top_k", "rrf_k", "embed_batch_size", "qa_limit", "doc_limit",
                     "rerank_candidates"):
            if data.get(name) == 0:
                self.add_error(name, gettext("Must be at least 1."))
        self._clean_rerank(data)
        searches = data.get("agent_max_searches")
        if searches is not None and not 1 <= searches <= MAX_AGENT_SEARCHES:
            self.add_error("agent_max_searches", f"Between 1 and {MAX_AGENT_SEARCHES} searches.")
        if data.get("chat_mode") == "agentic":
            server = data.get("default_chat_server")
            if server is None or not server.is_active or not server.can("chat"):
                self.add_error("chat_mode", gettext("Agentic search needs a default chat server (one that answers chats and "
                                            "calls tools)."))
            elif not server.can("tools"):
                self.add_error("chat_mode", f"The default chat server '{server.name}' is not marked as able to call "
                                            "tools: tick “Tool calling” on it (AI servers) if its model can, or "
                                            "choose another server.")
        return data

    def _clean_rerank(self, data: dict) -> None:
        # The current choice stays selectable so it is shown, but it is refused if it can no longer rerank:
        # saving it would make every question record a fallback instead of being reranked.
        server, timeout = data.get("rerank_server"), data.get("rerank_timeout")
        if timeout is not None and not 0 < timeout <= 60:
            self.add_error("rerank_timeout", gettext("Between 0 and 60 seconds: the question waits this long at most."))
        if server is None:
            return
        if not server.is_active:
            self.add_error("rerank_server", f"'{server.name}' is switched off; choose an active server or none.")
        elif not server.can("rerank"):
            self.add_error("rerank_server", f"'{server.name}' does not have the rerank capability; tick 'Reranks' on "
                                            "the server or choose another.")
        elif server.kind != AiServerKind.OPENAI:
            self.add_error("rerank_server", f"'{server.name}' cannot rerank: only OpenAI-compatible servers "
                                            "(text-embeddings-inference, Jina/Cohere-compatible) offer a rerank API.")


class RetrievalTestForm(forms.Form):
    q = forms.CharField(label=gettext_lazy("Query"), max_length=2000, widget=forms.TextInput(attrs={"size": 80}))
    user = forms.CharField(label=gettext_lazy("As user"), max_length=150, help_text=gettext_lazy("Username or id: whose documents are searched"))
    conversation = forms.IntegerField(required=False, min_value=1, help_text=gettext_lazy("Optional: search its attached documents"))
    category = forms.CharField(required=False, max_length=100)
    subcategory = forms.CharField(required=False, max_length=100)
    k = forms.IntegerField(required=False, min_value=1, max_value=100, label=gettext_lazy("Top N"),
                           help_text=gettext_lazy("Empty: the settings' final top-N"))

    def clean_user(self):
        value = self.cleaned_data["user"].strip()
        users = get_user_model().objects.filter(is_active=True)
        found = users.filter(username=value).first() or (users.filter(pk=int(value)).first()
                                                           if value.isascii() and value.isdigit() and len(value) <= 18 else None)
        if found is None:
            raise forms.ValidationError(gettext("No active user '%(value)s'.") % {"value": value})
        return found
