"""AI servers, vectors for several embedding models at once, approved Q&A pairs, settings."""
from __future__ import annotations

from django.utils.translation import gettext
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _
from pgvector.django import VectorField

from documents.models import ChunkingStrategy

BUILTIN_SERVER_NAME = "Built-in (multilingual-e5-small)"
BUILTIN_EMBEDDING_MODEL = "multilingual-e5-small-q4"
BUILTIN_EMBEDDING_DIM = 384


class AiServerKind(models.TextChoices):
    BUILTIN = "builtin", _("Built-in (runs inside ragsite)")
    OPENAI = "openai", _("OpenAI-compatible (OpenAI, vLLM, LM Studio, TEI, ...)")
    OLLAMA = "ollama", _("Ollama")


class AiServer(models.Model):
    """A server that embeds text, answers chats, reranks, or several of these.

    `capabilities` keys: chat, embeddings, embedding_model, embedding_dim,
    embedding_max_input_tokens, chat_model, context_window, tools (the chat model calls tools),
    token_embeddings, rerank.
    """

    name = models.CharField(max_length=100, unique=True, verbose_name=_("name"))
    kind = models.CharField(max_length=20, choices=AiServerKind.choices, default=AiServerKind.OPENAI, verbose_name=_("kind"))
    base_url = models.URLField(max_length=500, blank=True, verbose_name=_("base URL"))
    api_key = models.CharField(max_length=500, blank=True, help_text=_("Stored for calls; never shown back in full."), verbose_name=_("API key"))
    is_external = models.BooleanField(
        default=False, help_text=_("Outside the organisation: refused while external AI is disabled."), verbose_name=_("is external")
    )
    is_active = models.BooleanField(default=True, verbose_name=_("is active"))
    connect_timeout = models.FloatField(default=5.0, help_text=_("Seconds"), verbose_name=_("connect timeout"))
    read_timeout = models.FloatField(default=60.0, help_text=_("Seconds without data before giving up"), verbose_name=_("read timeout"))
    capabilities = models.JSONField(default=dict, blank=True, verbose_name=_("capabilities"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("AI server")
        verbose_name_plural = _("AI servers")
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(kind__in=AiServerKind.values), name="aiserver_kind_valid"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def api_key_hint(self) -> str:
        """The key as it may be shown: its last four characters only."""
        return f"…{self.api_key[-4:]}" if len(self.api_key) > 8 else ("set" if self.api_key else "")

    @property
    def embedding_model(self) -> str:
        return self.capabilities.get("embedding_model", "")

    @property
    def embedding_dim(self) -> int | None:
        dim = self.capabilities.get("embedding_dim")
        return int(dim) if dim else None

    @property
    def chat_model(self) -> str:
        return self.capabilities.get("chat_model", "")

    def can(self, capability: str) -> bool:
        return bool(self.capabilities.get(capability))


class EmbeddingModel(models.Model):
    """One vector space: a model name and its dimension. Each gets its own partial HNSW index."""

    name = models.CharField(max_length=200, verbose_name=_("name"))
    dim = models.PositiveIntegerField(verbose_name=_("dimensions"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    # Distances are a property of the vector space (retrieval/knowledge/calibration.py): measured once
    # per model from shipped unrelated questions, {"direct_distance", "qa_distance", "doc_distance",
    # "unrelated": {percentiles}, "questions", "calibrated_at"}; empty until measured. Staff overrides
    # are per model, so changing the embedding model never carries another space's numbers along.
    calibration = models.JSONField(default=dict, blank=True, editable=False, verbose_name=_("calibration"))
    direct_distance_override = models.FloatField(
        null=True, blank=True, help_text=_("Cosine distance within which an agreeing approved pair is the answer "
                                         "itself; empty: the calibrated value."), verbose_name=_("direct distance override"))
    qa_distance_override = models.FloatField(
        null=True, blank=True, help_text=_("Cosine distance within which approved pairs are sources; empty: the "
                                         "calibrated value."), verbose_name=_("Q&A distance override"))
    doc_distance_override = models.FloatField(
        null=True, blank=True, help_text=_("Cosine distance within which passages are sources (with a topic); empty: "
                                         "the calibrated value."), verbose_name=_("doc distance override"))

    class Meta:
        verbose_name = _("embedding model")
        verbose_name_plural = _("embedding models")
        ordering = ["name", "dim"]
        constraints = [
            models.UniqueConstraint(fields=["name", "dim"], name="embeddingmodel_unique"),
            models.CheckConstraint(condition=models.Q(dim__gte=1, dim__lte=16000), name="embeddingmodel_dim_range"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.dim}d)"

    @property
    def index_name(self) -> str:
        return f"chunkembedding_hnsw_m{self.pk}_d{self.dim}"


class ChunkEmbedding(models.Model):
    """A chunk's vector under one embedding model.

    Vectors of every dimension share this table (an untyped `vector` column); each model has
    a partial HNSW index over `embedding::vector(dim)` limited to its rows, so a search uses
    exactly one model's index and dimensions never mix. A chunk may hold vectors of two models
    while it is re-embedded; the document's pinned model says which one answers.
    """

    # Lookups by chunk and by document use the composite indexes below.
    # Deletes cascade in the database (migration 0003), never through Django's collector.
    chunk = models.ForeignKey("documents.Chunk", on_delete=models.DO_NOTHING, related_name="embeddings", db_index=False, verbose_name=_("chunk"))
    # Searches reach a model's rows through its partial HNSW index; no btree on model_id.
    model = models.ForeignKey(EmbeddingModel, on_delete=models.PROTECT, related_name="+", db_index=False, verbose_name=_("model"))
    document = models.ForeignKey("documents.Document", on_delete=models.DO_NOTHING, related_name="+", db_index=False, verbose_name=_("document"))
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING, related_name="+", verbose_name=_("owner"))
    # Copies of the document's collection and active flag (documents.services keeps them equal), so
    # the HNSW search and row-level security filter each visited vector without a join.
    collection = models.ForeignKey("documents.Collection", on_delete=models.DO_NOTHING, null=True, blank=True,
                                   related_name="+", db_index=False, verbose_name=_("collection"))
    is_active = models.BooleanField(default=True, db_default=True, verbose_name=_("is active"))
    embedding = VectorField(verbose_name=_("embedding"))
    # Its key in EmbeddingCache (retrieval.embedding_cache); NULL for late-chunked vectors, which
    # depend on the whole document and are never shared.
    content_hash = models.CharField(max_length=64, null=True, blank=True, verbose_name=_("content hash"))

    class Meta:
        verbose_name = _("chunk embedding")
        verbose_name_plural = _("chunk embeddings")
        constraints = [
            models.UniqueConstraint(fields=["chunk", "model"], name="chunkembedding_unique"),
        ]
        indexes = [
            models.Index(fields=["document", "model"], name="chunkembedding_doc_model"),
            models.Index(fields=["collection", "model"], name="chunkembedding_coll_model",
                         condition=models.Q(collection__isnull=False)),
            # The cleanup trigger asks "does any chunk vector still hold this key?".
            models.Index(fields=["content_hash"], name="chunkembedding_content_hash",
                         condition=models.Q(content_hash__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"chunk {self.chunk_id} / {self.model_id}"


class EmbeddingCache(models.Model):
    """One vector per content key (retrieval.embedding_cache): a chunk text, its embedder, its visibility scope.

    Rows whose key no chunk vector holds any more are deleted by a trigger (migration 0014). No
    row-level security and no grant to the reader role: nothing but indexing reads it.
    """

    content_hash = models.CharField(max_length=64, primary_key=True, verbose_name=_("content hash"))
    model = models.ForeignKey(EmbeddingModel, on_delete=models.PROTECT, related_name="+", db_index=False, verbose_name=_("model"))
    embedding = VectorField(verbose_name=_("embedding"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    def __str__(self) -> str:
        return self.content_hash[:12]

    class Meta:
        verbose_name = _("embedding cache entry")
        verbose_name_plural = _("embedding cache entries")


class KnowledgeEntryQuerySet(models.QuerySet):
    def live(self) -> "KnowledgeEntryQuerySet":
        return self.filter(is_active=True, approved_at__isnull=False)


class EmbeddingState(models.TextChoices):
    PENDING = "pending", _("Pending")
    READY = "ready", _("Ready")
    FAILED = "failed", _("Failed")


class KnowledgeEntry(models.Model):
    """A question and answer approved by staff; answers before documents, for every user."""

    category = models.CharField(max_length=100, blank=True, verbose_name=_("category"))
    subcategory = models.CharField(max_length=100, blank=True, verbose_name=_("subcategory"))
    question = models.TextField(verbose_name=_("question"))
    answer = models.TextField(verbose_name=_("answer"))
    is_active = models.BooleanField(default=True, verbose_name=_("is active"))
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("approved by")
    )
    approved_at = models.DateTimeField(null=True, blank=True, verbose_name=_("approved at"))
    embedding_state = models.CharField(max_length=20, choices=EmbeddingState.choices, default=EmbeddingState.PENDING, verbose_name=_("embedding state"))
    embedding_error = models.TextField(blank=True, verbose_name=_("embedding error"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = KnowledgeEntryQuerySet.as_manager()

    class Meta:
        ordering = ["category", "subcategory", "id"]
        verbose_name = _("approved Q&A pair")
        verbose_name_plural = _("approved Q&A pairs")
        indexes = [models.Index(fields=["category", "subcategory"], name="knowledge_category")]
        permissions = [("curate_knowledgeentry", "Can curate approved Q&A pairs")]

    def __str__(self) -> str:
        return self.question[:80]



class KnowledgeDraft(KnowledgeEntry):
    """A Q&A pair waiting for approval: the same rows, listed apart from the approved ones in the admin."""

    class Meta:
        proxy = True
        verbose_name = _("Q&A draft")
        verbose_name_plural = _("Q&A drafts (waiting for approval)")

class KnowledgeEmbedding(models.Model):
    """A Q&A pair's question vector under one embedding model (exact scan: Q&A sets are small)."""

    entry = models.ForeignKey(KnowledgeEntry, on_delete=models.CASCADE, related_name="embeddings", db_index=False, verbose_name=_("entry"))
    model = models.ForeignKey(EmbeddingModel, on_delete=models.PROTECT, related_name="+", verbose_name=_("model"))
    embedding = VectorField(verbose_name=_("embedding"))

    class Meta:
        verbose_name = _("knowledge embedding")
        verbose_name_plural = _("knowledge embeddings")
        constraints = [models.UniqueConstraint(fields=["entry", "model"], name="knowledgeembedding_unique")]


class SubcategoryMapping(models.Model):
    """A specific subcategory and the general one to fall back on ("raspberry, everbearing" -> "raspberry, general")."""

    subcategory = models.CharField(max_length=100, unique=True, verbose_name=_("subcategory"))
    general_subcategory = models.CharField(max_length=100, verbose_name=_("general subcategory"))

    class Meta:
        verbose_name = _("subcategory mapping")
        verbose_name_plural = _("subcategory mappings")
        ordering = ["subcategory"]

    def __str__(self) -> str:
        return f"{self.subcategory} → {self.general_subcategory}"

    def clean(self) -> None:
        if self.subcategory == self.general_subcategory:
            raise ValidationError(gettext("A subcategory cannot fall back on itself."))
        seen = {self.subcategory}
        current = self.general_subcategory
        mapping = dict(SubcategoryMapping.objects.exclude(pk=self.pk).values_list("subcategory", "general_subcategory"))
        while current in mapping:
            if current in seen:
                break
            seen.add(current)
            current = mapping[current]
        if current in seen:
            raise ValidationError(gettext("This mapping would make a cycle through '%(current)s'.") % {"current": current})


NO_PASSAGES_POLICIES = [
    ("general", _("Answer as an ordinary assistant, marked “not from your documents”, without citations")),
    ("refuse", _("Say that the documents do not say")),
]
FTS_RANKINGS = [("ts_rank", _("ts_rank (words held, over log length)")), ("ts_rank_cd", _("ts_rank_cd (cover density)"))]
FUSIONS = [("scores", _("Scores, each list on its own scale")), ("rrf", _("Places in the lists (RRF)"))]


class RetrievalSettings(models.Model):
    """The single row of retrieval settings staff edit in the admin; read through a cached selector."""

    singleton_id = 1

    rag_enabled = models.BooleanField(default=True, help_text=_("Off: plain chat without retrieval."), verbose_name=_("rag enabled"))
    external_ai_disabled = models.BooleanField(
        default=False, help_text=_("Refuse every server marked external (EXTERNAL_AI_DISABLED also forces this)."), verbose_name=_("external AI disabled")
    )
    default_embedding_server = models.ForeignKey(
        AiServer, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("default embedding server")
    )
    default_chat_server = models.ForeignKey(AiServer, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("default chat server"))
    chunking_strategy = models.CharField(max_length=20, default=ChunkingStrategy.TOKENS, choices=ChunkingStrategy.choices, verbose_name=_("chunking strategy"),
        help_text=_("How documents are cut into chunks: the short passages that are searched and cited. Late "
                    "chunking reads the whole document before it turns each chunk into numbers, so that a chunk keeps "
                    "its context (it needs an AI server that supports it)."))
    chunk_size = models.PositiveIntegerField(default=512, help_text=_("Tokens per chunk (tokens and late strategies); a token is a word or a piece of "
                                                                      "one, about four characters"), verbose_name=_("chunk size"))
    chunk_overlap = models.PositiveIntegerField(default=64, help_text=_("Tokens shared by neighbouring chunks"), verbose_name=_("chunk overlap"))
    # The fixed strategy counts characters, so it has sizes of its own: a token count (512) read as
    # characters made chunks half the size the strategy promises.
    fixed_chunk_size = models.PositiveIntegerField(default=1000, help_text=_("Characters per chunk (fixed strategy)"), verbose_name=_("fixed chunk size"))
    fixed_chunk_overlap = models.PositiveIntegerField(default=200, help_text=_("Characters shared by neighbouring "
                                                                             "chunks (fixed strategy)"), verbose_name=_("fixed chunk overlap"))
    tokenizer = models.CharField(max_length=20, default="o200k_base",
                                 choices=[("o200k_base", "o200k_base"), ("cl100k_base", "cl100k_base")], verbose_name=_("tokenizer"),
                                 help_text=_("The rule that splits text into tokens when chunk sizes are counted; "
                                             "the default suits every language."))
    max_chunks_per_document = models.PositiveIntegerField(default=50000, verbose_name=_("max chunks per document"),
        help_text=_("A document that would give more chunks than this is refused (it protects the server)."))
    embed_batch_size = models.PositiveIntegerField(default=64, verbose_name=_("embed batch size"),
        help_text=_("How many chunks are sent to the AI server at once to be turned into embeddings: lists of numbers "
                    "that capture meaning, so that passages are found by what they mean, not only by their words."))
    vector_top_k = models.PositiveIntegerField(default=40, verbose_name=_("vector top k"),
        help_text=_("How many passages the search by meaning (embeddings) brings for each question."))
    fts_top_k = models.PositiveIntegerField(default=40, verbose_name=_("full-text top k"),
        help_text=_("How many passages the search by words (full text) brings for each question."))
    vector_weight = models.FloatField(default=1.0, verbose_name=_("vector weight"),
        help_text=_("How much the search by meaning counts when the two result lists are merged (0 turns it off)."))
    # Measured on XQuAD en/de/es with the built-in model and ts_rank (README): 1.5 is the best weight
    # in every language and beats both arms alone (with ts_rank_cd, 0.5 was).
    fts_weight = models.FloatField(default=1.5, verbose_name=_("full-text weight"),
        help_text=_("How much the search by words counts when the two result lists are merged (0 turns it off)."))
    final_top_n = models.PositiveIntegerField(default=8, verbose_name=_("final top n"),
        help_text=_("How many passages, best first, the AI model reads to answer."))
    # Measured on LegalQuAD, FinanceBench, XQuAD (7 languages) and the project's Czech and long-document
    # sets (docs/evaluation.md): scores won or tied everywhere; RRF let passages both lists hold lower down
    # outvote one list's clear first place.
    fusion = models.CharField(
        max_length=10, default="scores", choices=FUSIONS, verbose_name=_("fusion"),
        help_text=_("How the two result lists are merged. Scores: each passage counts with its own score, the search "
                    "by meaning's scaled from its list's best to its last, the search by words' as a share of its "
                    "best, so a clear first place keeps its lead. RRF: by each passage's place in the lists (see RRF k)."))
    rrf_k = models.PositiveIntegerField(default=60, verbose_name=_("RRF k"),
        help_text=_("RRF (reciprocal rank fusion) merges the two result lists by each passage's place in them; a "
                    "larger k lets passages further down the lists count more. 60 is the usual value."))
    qa_distance_threshold = models.FloatField(default=0.6, verbose_name=_("Q&A distance threshold"),
        help_text=_("How close in meaning (0: the same, larger: further apart) an approved question must be to the "
                    "question asked to be used."))
    qa_limit = models.PositiveIntegerField(default=20, verbose_name=_("Q&A limit"),
        help_text=_("How many approved Q&A pairs are considered for each question."))
    doc_distance_threshold = models.FloatField(default=0.75, verbose_name=_("doc distance threshold"),
        help_text=_("How close in meaning (0: the same, larger: further apart) a passage must be to the question to "
                    "be kept; when none is, the general subcategory is tried."))
    doc_limit = models.PositiveIntegerField(default=30, verbose_name=_("doc limit"),
        help_text=_("How many document passages are kept at each level of topics when the question has a "
                    "category."))
    # How the full-text arm orders the passages it matched (see migration retrieval 0008).
    fts_ranking = models.CharField(
        max_length=20, default="ts_rank", choices=FTS_RANKINGS,
        help_text=_("ts_rank: how many of the question's words a passage holds, repetitions counting less and less. "
                  "ts_rank_cd: cover density, which for a question's words amounts to counting their occurrences."), verbose_name=_("full-text ranking"))
    # Full-text arm: match on the query's rarest words while their estimated number of matching
    # passages stays within this budget (frequencies from PostgreSQL's own statistics); every
    # query word still counts in the rank. 0 matches on all of them.
    fts_match_budget = models.PositiveIntegerField(
        default=1000, help_text=_("Largest estimated number of passages the full-text arm ranks per question "
                                "(its rarest words are matched first). 0: match every word."), verbose_name=_("full-text match budget"))
    # Reranking: an optional second stage over the fused candidates.
    rerank_server = models.ForeignKey(
        AiServer, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
        help_text=_("A server with the rerank capability; empty: no reranking."), verbose_name=_("rerank server"))
    rerank_candidates = models.PositiveIntegerField(default=30, help_text=_("Fused candidates sent to the reranker"), verbose_name=_("rerank candidates"))
    rerank_timeout = models.FloatField(default=5.0, help_text=_("Seconds; on timeout the fused order is kept"), verbose_name=_("rerank timeout"))
    # Chat: pre-fetched context, or the model searches with a tool.
    chat_mode = models.CharField(
        max_length=20, default="context",
        choices=[("context", _("Retrieved passages in the prompt")),
                 ("agentic", _("Agentic: the model searches with a tool (needs tool calling)"))], verbose_name=_("chat mode"))
    agent_max_searches = models.PositiveSmallIntegerField(
        default=3, help_text=_("Agentic mode: searches the model may make before it must answer"), verbose_name=_("agent max searches"))
    # When retrieval finds nothing: the model answers as an ordinary assistant (marked "not from your
    # documents", no citations), or the answer says the documents do not say (no model call).
    no_passages_policy = models.CharField(
        max_length=20, default="general", choices=NO_PASSAGES_POLICIES,
        help_text=_("What happens when nothing relevant is found in the documents."), verbose_name=_("no passages policy"))
    # The system prompt's persona; ragsite appends the fixed rules (passages are untrusted data, citations).
    persona = models.TextField(
        blank=True, default="",
        help_text=_("Who the assistant is, e.g. \"You are an agronomist advising fruit growers.\" Placeholders: "
                  "{category}, {subcategory}, {date}, {user}. Empty: a careful assistant answering from the "
                  "user's documents. The rules about passages and citations are always appended."), verbose_name=_("persona"))
    temperature = models.FloatField(default=0.4, help_text=_("Sampling temperature sent to the chat server (0–2)"), verbose_name=_("temperature"))
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Longest answer in tokens; empty: CHAT_MAX_ANSWER_TOKENS"), verbose_name=_("max tokens"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("retrieval settings")
        verbose_name_plural = _("retrieval settings")
        constraints = [models.CheckConstraint(condition=models.Q(id=1), name="retrievalsettings_singleton")]

    def __str__(self) -> str:
        return str(_("Retrieval settings"))

    def save(self, *args, **kwargs):
        self.pk = self.singleton_id
        super().save(*args, **kwargs)
