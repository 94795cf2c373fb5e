"""The two search arms, as SQL: HNSW cosine search per embedding model, and full text per language.

Both run inside `scope.reader_transaction`, always with the owner filter in the WHERE clause.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import connection

from documents.language import _WORDS as STOPWORDS_BY_LANGUAGE

# Below this many vectors in scope an exact scan is both fast and exact; above it the HNSW
# index with pgvector 0.8's iterative scan keeps filtered searches from coming back short.
HNSW_EF_SEARCH = 100
HNSW_MAX_SCAN_TUPLES = 40_000
_ALL_STOPWORDS = set().union(*STOPWORDS_BY_LANGUAGE.values())
_WORD_RE = re.compile(r"\w+", re.UNICODE)


def vector_literal(vector) -> str:
    """pgvector's text form of `vector`; a string is taken as already one (format once, ~0.15 ms at 384-d)."""
    if isinstance(vector, str):
        return vector
    return "[" + ",".join(map("{:.7g}".format, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def vector_arm(*, model_id: int, dim: int, query_vector, owner_id: int, document_ids: list[int],
               scope_vectors: int, top_k: int, all_of_owner: bool = False) -> tuple[list[tuple[int, float]], str]:
    """(chunk_id, cosine distance) best first, and the method used ("exact" or "hnsw").

    `all_of_owner`: the scope is every document of the owner pinned to this model, so both paths
    filter by owner alone (`document_ids` may then be empty) — testing each visited vector against
    the array of all the owner's document ids made the HNSW search 5x slower at a million chunks
    (bench/search.py: p95 25 vs 5 ms). The only rows that adds are vectors of this model of a
    document still pinned to another one (being re-embedded): the same chunks, already in scope.
    """
    model_id, dim = int(model_id), int(dim)
    q = vector_literal(query_vector)
    with connection.cursor() as cursor:
        if scope_vectors <= settings.RETRIEVAL_EXACT_SCAN_MAX:
            # The expression differs from the index's, so PostgreSQL reads the scope's rows through
            # the (document_id, model_id) or the owner index and sorts: exact, never short.
            document_filter = "" if all_of_owner else "AND e.document_id = ANY(%s)"
            cursor.execute(
                f"""
                SELECT e.chunk_id, (e.embedding <=> %s::vector) AS distance
                FROM retrieval_chunkembedding e
                WHERE e.model_id = {model_id} AND e.owner_id = %s {document_filter}
                ORDER BY distance, e.chunk_id LIMIT %s
                """,
                [q, owner_id] + ([] if all_of_owner else [document_ids]) + [top_k],
            )
            return [(r[0], float(r[1])) for r in cursor.fetchall()], "exact"
        # SET LOCAL, in one round trip
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                       "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true)",
                       [str(max(HNSW_EF_SEARCH, int(top_k))), str(HNSW_MAX_SCAN_TUPLES)])
        document_filter = "" if all_of_owner else "AND e.document_id = ANY(%s)"
        cursor.execute(
            f"""
            WITH candidates AS MATERIALIZED (
                SELECT e.chunk_id, e.embedding::vector({dim}) <=> %s::vector({dim}) AS distance
                FROM retrieval_chunkembedding e
                WHERE e.model_id = {model_id} AND e.owner_id = %s {document_filter}
                ORDER BY e.embedding::vector({dim}) <=> %s::vector({dim})
                LIMIT %s
            )
            SELECT chunk_id, distance FROM candidates ORDER BY distance, chunk_id
            """,
            [q, owner_id] + ([] if all_of_owner else [document_ids]) + [q, top_k],
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


def fts_query_text(query: str, config: str) -> str:
    """The question's words, for `to_tsvector(config, ...)`. Language configurations drop their own
    stop words; for `simple` we drop common words of the languages we know, or every passage
    would match "the"."""
    words = _WORD_RE.findall(query)
    if config == "simple":
        words = [w for w in words if w.lower() not in _ALL_STOPWORDS]
    return " ".join(words)


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


def fts_plans(*, query: str, configs: list[str], stats: LexemeStats | None, budget: int) -> list[FtsPlan]:
    """The query's lexemes under each configuration, and which of them are matched on."""
    texts = [(config, fts_query_text(query, config)) for config in configs]
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
            top_k: int, ranking: str = "ts_rank") -> list[tuple[int, float]]:
    """(chunk_id, rank) best first, each language's chunks matched with its own configuration.

    `ranking`: "ts_rank" (normalisation 1) or "ts_rank_cd" (normalisation 32); see migration
    retrieval 0008 for why ts_rank is the default. Runs through `ragsite_fts_search`, which
    applies the owner condition from the transaction's user itself and can use the GIN index
    (migration retrieval 0007); `owner_id` is checked against that user here as well, so a caller
    cannot ask for someone else's passages.
    """
    if not plans:
        return []
    parts, params = [], []
    for plan in plans:
        parts.append("(SELECT id, rank FROM ragsite_fts_search(%s::regconfig, %s::tsquery, %s::tsquery, "
                     "%s::bigint[], %s, %s) WHERE %s::bigint = NULLIF(current_setting('ragsite.user_id', true), '')::bigint)")
        params += [plan.config, _tsquery(plan.matched), _tsquery(plan.lexemes), document_ids, top_k, ranking, owner_id]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, rank FROM ({' UNION ALL '.join(parts)}) hits ORDER BY rank DESC, id LIMIT %s",
            params + [top_k],
        )
        return [(r[0], float(r[1])) for r in cursor.fetchall()]
