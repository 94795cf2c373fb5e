"""The two search arms, as SQL: HNSW cosine search per embedding model, and full text per language.

Both run inside `scope.reader_transaction`, always with the owner / collection filter in the WHERE clause.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import connection

from documents.language import WORD_RE, search_input, with_number_terms
from retrieval.search.scope import Scope, scope_condition

# Below this many vectors in scope an exact scan is both fast and exact; above it the HNSW
# index with pgvector 0.8's iterative scan keeps filtered searches from coming back short.
HNSW_EF_SEARCH = 100
HNSW_MAX_SCAN_TUPLES = 40_000


def vector_literal(vector) -> str:
    """pgvector's text form of `vector`; a string is taken as already one (format once, ~0.15 ms at 384-d)."""
    if isinstance(vector, str):
        return vector
    return "[" + ",".join(map("{:.7g}".format, np.asarray(vector, dtype=np.float32).tolist())) + "]"


# A scope selected by collection takes the HNSW path above RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS vectors
# only when it is at least this share of the model's vectors: there the filtered HNSW search is cheap and
# recall holds (bench/search.py at 100k chunks: 11% of the rows, recall@10 0.974 at 2.3x less CPU than the
# exact scan); at 1% of a million rows the same search fell to recall 0.941 and the exact scan stays.
HNSW_MIN_SCOPE_SHARE = 0.10
_MODEL_VECTORS_TTL_S = 60.0
_model_vectors_cache: dict[int, tuple[float, float]] = {}


def model_vectors_estimate(model_id: int, dim: int) -> float:
    """PostgreSQL's estimate of the model's vectors (its partial HNSW index's reltuples, kept by ANALYZE
    and autovacuum; -1 when not known yet), read at most once a minute per process: a catalog lookup,
    no scan."""
    now = time.monotonic()
    cached = _model_vectors_cache.get(model_id)
    if cached is not None and now - cached[0] < _MODEL_VECTORS_TTL_S:
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s AND relkind = 'i'",
                       [f"chunkembedding_hnsw_m{int(model_id)}_d{int(dim)}"])
        row = cursor.fetchone()
    estimate = float(row[0]) if row else -1.0
    _model_vectors_cache[model_id] = (now, estimate)
    return estimate


def use_exact_scan(*, scope: Scope | None, whole_scope: bool, scope_vectors: int, model_id: int, dim: int) -> bool:
    """Whether the scope's vectors are searched by an exact scan (else the HNSW index).

    Up to RETRIEVAL_EXACT_SCAN_MAX vectors: exact (RETRIEVAL_EXACT_SCAN_MAX = -1 sends everything to
    HNSW). A scope selected by collection (no document ids: it reads its rows through the
    (collection_id, model_id) index) goes to HNSW earlier, above RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS
    vectors, when it is also a large share of the model's vectors (HNSW_MIN_SCOPE_SHARE): then the
    exact scan is the dearer path (README, "Retrieval"; docs/benchmarks.md).
    """
    if scope_vectors > settings.RETRIEVAL_EXACT_SCAN_MAX:
        return False
    if not (whole_scope and scope is not None and scope.collection_ids):
        return True
    if scope_vectors <= settings.RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS:
        return True
    total = model_vectors_estimate(model_id, dim)
    return total <= 0 or scope_vectors < HNSW_MIN_SCOPE_SHARE * total


def vector_arm(*, model_id: int, dim: int, query_vector, owner_id: int, document_ids: list[int],
               scope_vectors: int, top_k: int, whole_scope: bool = False,
               scope: Scope | None = None) -> tuple[list[tuple[int, float]], str]:
    """(chunk_id, cosine distance) best first, and the method used ("exact" or "hnsw").

    `scope` says whose rows: the owner's private ones and/or the scope's collections (None: the
    owner's private ones, as before collections). `whole_scope`: every document of the scope pinned
    to this model is searched, so both paths filter by owner and collection alone (`document_ids`
    may then be empty) — testing each visited vector against the array of all the owner's document
    ids made the HNSW search 5x slower at a million chunks (bench/search.py: p95 25 vs 5 ms). The
    only rows that adds are vectors of this model of a document still pinned to another one (being
    re-embedded): the same chunks, already in scope.
    """
    model_id, dim = int(model_id), int(dim)
    q = vector_literal(query_vector)
    rows, rows_params = scope_condition("e", owner_id=owner_id, scope=scope or Scope("all", None, None))
    document_filter = "" if whole_scope else "AND e.document_id = ANY(%s)"
    filter_params = rows_params + ([] if whole_scope else [document_ids])
    with connection.cursor() as cursor:
        if use_exact_scan(scope=scope, whole_scope=whole_scope, scope_vectors=scope_vectors, model_id=model_id,
                          dim=dim):
            # The expression differs from the index's, so PostgreSQL reads the scope's rows through
            # the (document_id, model_id), owner or (collection_id, model_id) index and sorts: exact, never short.
            cursor.execute(
                f"""
                SELECT e.chunk_id, (e.embedding <=> %s::vector) AS distance
                FROM retrieval_chunkembedding e
                WHERE e.model_id = {model_id} AND {rows} {document_filter}
                ORDER BY distance, e.chunk_id LIMIT %s
                """,
                [q, *filter_params, top_k],
            )
            return [(r[0], float(r[1])) for r in cursor.fetchall()], "exact"
        # SET LOCAL, in one round trip
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                       "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true)",
                       [str(max(HNSW_EF_SEARCH, int(top_k))), str(HNSW_MAX_SCAN_TUPLES)])
        cursor.execute(
            f"""
            WITH candidates AS MATERIALIZED (
                SELECT e.chunk_id, e.embedding::vector({dim}) <=> %s::vector({dim}) AS distance
                FROM retrieval_chunkembedding e
                WHERE e.model_id = {model_id} AND {rows} {document_filter}
                ORDER BY e.embedding::vector({dim}) <=> %s::vector({dim})
                LIMIT %s
            )
            SELECT chunk_id, distance FROM candidates ORDER BY distance, chunk_id
            """,
            [q, *filter_params, q, top_k],
        )
        return [(r[0], float(r[1])) for r in cursor.fetchall()], "hnsw"


def distances_for(*, model_id: int, dim: int, query_vector, chunk_ids: list[int]) -> dict[int, float]:
    """Cosine distances of given chunks (e.g. full-text hits) under one model."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT chunk_id, embedding <=> %s::vector FROM retrieval_chunkembedding "
            f"WHERE model_id = {int(model_id)} AND chunk_id = ANY(%s)",
            [vector_literal(query_vector), chunk_ids],
        )
        return {r[0]: float(r[1]) for r in cursor.fetchall()}


def fts_query_text(query: str, config: str, language: str = "") -> str:
    """The question's words, for `to_tsvector(config, ...)`, analysed exactly like a chunk of
    `language` under `config` (documents/language/search_text.py: segmentation, and for `simple` the
    language's stop words, or every passage would match "the")."""
    return " ".join(WORD_RE.findall(with_number_terms(search_input(query, language=language, config=config))))


# --- how often each word occurs: PostgreSQL's own statistics --------------------------------------

STATS_MAX_AGE = 300.0  # seconds a process keeps the statistics (ANALYZE refreshes them about as often)


@dataclass(frozen=True)
class LexemeStats:
    """Share of chunks holding each frequent lexeme, as ANALYZE sampled it (pg_stats.most_common_elems).

    A lexeme ANALYZE did not list is rarer than every listed one; like PostgreSQL's own estimator
    for `@@` we take half the least common listed share for it.
    """

    rows: float
    shares: dict[str, float]
    unlisted_share: float

    def estimate(self, lexeme: str) -> float:
        """Estimated number of chunks (of all users) that hold `lexeme`."""
        return self.shares.get(lexeme, self.unlisted_share) * self.rows


_stats_cache: tuple[float, LexemeStats | None] | None = None


def lexeme_stats(*, max_age: float = STATS_MAX_AGE) -> LexemeStats | None:
    """The chunk table's lexeme statistics (None before its first ANALYZE), cached per process.

    Call outside `reader_transaction`: pg_stats hides the statistics of a table with row-level
    security from roles the policy applies to. Only counts leave this function, never words to a user.
    """
    global _stats_cache
    now = time.monotonic()
    if _stats_cache is not None and now - _stats_cache[0] < max_age:
        return _stats_cache[1]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples
            FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename
                 AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = s.schemaname)
            WHERE s.schemaname = current_schema() AND s.tablename = 'documents_chunk'
                  AND s.attname = 'search_vector'
            """
        )
        row = cursor.fetchone()
    stats = None
    if row and row[0] and row[1] and row[2] and row[2] > 0:
        elems, freqs = row[0], row[1]
        # The shares are followed by their minimum and maximum (and the share of empty values).
        least = freqs[len(elems)] if len(freqs) > len(elems) else min(freqs[:len(elems)])
        stats = LexemeStats(rows=float(row[2]), shares=dict(zip(elems, freqs)), unlisted_share=least / 2)
    _stats_cache = (now, stats)
    return stats


def forget_lexeme_stats() -> None:
    """Drop the cached statistics (after a bulk load and ANALYZE; tests)."""
    global _stats_cache
    _stats_cache = None


@dataclass
class FtsPlan:
    """For one text-search configuration: the query's lexemes, and the ones a passage must hold."""

    config: str
    lexemes: list[str]
    matched: list[str]

    @property
    def pruned(self) -> list[str]:
        return [lex for lex in self.lexemes if lex not in self.matched]


def plan_terms(lexemes: list[str], stats: LexemeStats | None, budget: int) -> list[str]:
    """The rarest lexemes whose estimated matches add up to at most `budget` chunks (at least one).

    Ranking a passage costs far more than finding it, and a question's common words ("year",
    "city") would make the arm rank a good share of the table: they still count in the rank of
    the passages the rarer words find. No statistics or no budget: every lexeme is matched.
    """
    if stats is None or budget <= 0 or len(lexemes) < 2:
        return list(lexemes)
    by_rarity = sorted(lexemes, key=lambda lex: (stats.estimate(lex), lex))
    matched, total = [], 0.0
    for lex in by_rarity:
        estimate = stats.estimate(lex)
        if matched and total + estimate > budget:
            break
        matched.append(lex)
        total += estimate
    return [lex for lex in lexemes if lex in matched]


def _tsquery(lexemes: list[str]) -> str:
    """Normalised lexemes as tsquery input, OR-ed (quotes and backslashes escaped)."""
    return " | ".join("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)


def fts_plans(*, query: str, configs: list[str], stats: LexemeStats | None, budget: int,
              language: str = "") -> list[FtsPlan]:
    """The query's lexemes under each configuration, and which of them are matched on."""
    texts = [(config, fts_query_text(query, config, language)) for config in configs]
    texts = [(config, text) for config, text in texts if text]
    if not texts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.config, tsvector_to_array(to_tsvector(t.config::regconfig, t.text)) "
            "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(config, text, n) ORDER BY t.n",
            [[c for c, _ in texts], [t for _, t in texts]],
        )
        rows = cursor.fetchall()
    return [FtsPlan(config, list(lexemes), plan_terms(list(lexemes), stats, budget))
            for config, lexemes in rows if lexemes]


def fts_arm(*, plans: list[FtsPlan], owner_id: int, document_ids: list[int] | None,
            top_k: int, ranking: str = "ts_rank", scope: Scope | None = None) -> list[tuple[int, float]]:
    """(chunk_id, rank) best first, each language's chunks matched with its own configuration.

    `ranking`: "ts_rank" (normalisation 1) or "ts_rank_cd" (normalisation 32); see migration
    retrieval 0008 for why ts_rank is the default. Runs through `ragsite_fts_search`, which
    applies the read rule for the transaction's user itself (own documents, readable collections;
    migration retrieval 0012) and can use the GIN index (migration retrieval 0007); `owner_id` is
    checked against that user here as well, so a caller cannot ask for someone else's passages.
    `scope` narrows: without it, the owner's private documents only; the function intersects its
    collections with those the user reads.
    """
    if not plans:
        return []
    include_own = True if scope is None else scope.include_own
    collection_ids = [] if scope is None else list(scope.collection_ids)
    parts, params = [], []
    for plan in plans:
        parts.append("(SELECT id, rank FROM ragsite_fts_search(%s::regconfig, %s::tsquery, %s::tsquery, "
                     "%s::bigint[], %s, %s, %s::bigint[], %s) "
                     "WHERE %s::bigint = NULLIF(current_setting('ragsite.user_id', true), '')::bigint)")
        params += [plan.config, _tsquery(plan.matched), _tsquery(plan.lexemes), document_ids, top_k, ranking,
                   collection_ids, include_own, owner_id]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, rank FROM ({' UNION ALL '.join(parts)}) hits ORDER BY rank DESC, id LIMIT %s",
            params + [top_k],
        )
        return [(r[0], float(r[1])) for r in cursor.fetchall()]


COVERAGE_BY_RARITY = True  # weigh each lexeme by its rarity (held_share); False: every lexeme the same


def held_share(lexemes, held, stats: LexemeStats | None) -> float:
    """Share of the question's lexemes a passage holds, each weighed by its rarity: the log of the chunks
    over its estimated chunks (inverse document frequency, PostgreSQL's own statistics). A passage that
    holds a question's common words ("net", "income", "statement") but not the name it asks about
    ("amazon") holds little of it. Without statistics every lexeme counts the same."""
    wanted = set(lexemes)
    if not wanted:
        return 0.0
    if stats is not None and COVERAGE_BY_RARITY:
        weight = {lex: math.log(max(stats.rows, 2.0) / max(stats.estimate(lex), 1.0)) for lex in wanted}
        total = sum(weight.values())
        if total > 0:
            return sum(w for lex, w in weight.items() if lex in held) / total
    return sum(1 for lex in wanted if lex in held) / len(wanted)


def fts_best_coverage(*, plans: list[FtsPlan], hits: list[tuple[int, float]],
                      stats: LexemeStats | None = None) -> float | None:
    """Share of the question's lexemes (under the best hit's configuration) that the best full-text
    hit holds, weighed by rarity with `stats` (held_share); None without hits. The fusion rule's measure
    of a weak match (retrieval/search/fusion_rule.py)."""
    if not hits or not plans:
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT text_config, tsvector_to_array(search_vector) FROM documents_chunk WHERE id = %s",
                       [hits[0][0]])
        row = cursor.fetchone()
    if row is None:
        return None
    plan = next((p for p in plans if p.config == row[0]), None)
    if plan is None or not plan.lexemes:
        return None
    return held_share(plan.lexemes, set(row[1] or ()), stats)
