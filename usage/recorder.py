"""The one writer of usage: each event adds to its user's row of the day with one upsert
(INSERT … ON CONFLICT DO UPDATE), so counts stay exact under concurrency. Call it inside the
transaction that records the event itself (the question, the finished answer, the indexed document):
the count then commits or rolls back with it."""
from __future__ import annotations

from datetime import date

from django.db import connection, transaction
from django.utils import timezone

from usage import metrics
from usage.models import ANSWER_MODES, UsageDay

COUNTERS = ("questions", *(f"answers_{mode}" for mode in ANSWER_MODES), "tokens_in", "tokens_out",
            "cited_documents", "indexing_jobs", "indexing_seconds", "indexing_pages")


def usage_add(*, user_id: int, collection_id: int | None = None, chat_model: str = "", chat_server_id: int = 0,
              day: date | None = None, **counts: float) -> None:
    """Add `counts` (names of COUNTERS) to the user's row for `day` (today in TIME_ZONE)."""
    unknown = set(counts) - set(COUNTERS)
    if unknown:
        raise ValueError(f"unknown usage counters: {sorted(unknown)}")
    counts = {name: value for name, value in counts.items() if value}
    if not counts or user_id is None:
        return
    names = list(counts)
    table = UsageDay._meta.db_table
    columns = ", ".join(["day", "user_id", "collection_id", "chat_server_id", "chat_model", *names])
    placeholders = ", ".join(["%s"] * (5 + len(names)))
    updates = ", ".join(f"{name} = {table}.{name} + EXCLUDED.{name}" for name in names)
    # Columns not named take their database defaults (0): see the migration's db_default.
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) "
            f"ON CONFLICT (day, user_id, collection_id, chat_server_id, chat_model) DO UPDATE SET {updates}",
            [day or timezone.localdate(), user_id, collection_id or 0, chat_server_id or 0, chat_model[:200],
             *counts.values()])


def question_recorded(*, user_id: int, collection_id: int | None, origin: str) -> None:
    """One question accepted (the chat page, REST, /v1, MCP: chat.services.message_send)."""
    usage_add(user_id=user_id, collection_id=collection_id, questions=1)
    transaction.on_commit(lambda: metrics.QUESTIONS.labels(origin=origin or "api").inc())


def answer_recorded(*, user_id: int, collection_id: int | None, mode: str, chat_model: str = "", chat_server_id: int = 0,
                    tokens_in: int = 0, tokens_out: int = 0, cited_documents: int = 0) -> None:
    """One answer finished (or failed: mode `failed`), with the chat server's tokens (and its model's name)
    and the documents it cites."""
    mode = mode if mode in ANSWER_MODES else "documents"
    spent = bool(tokens_in or tokens_out)
    usage_add(user_id=user_id, collection_id=collection_id, chat_model=chat_model if spent else "",
              chat_server_id=chat_server_id if spent else 0,
              tokens_in=tokens_in, tokens_out=tokens_out, cited_documents=cited_documents, **{f"answers_{mode}": 1})
    transaction.on_commit(lambda: _count_answer(mode, chat_model, tokens_in, tokens_out))


def indexing_recorded(*, user_id: int, collection_id: int | None, seconds: float, pages: int | None) -> None:
    """One indexing job finished: its time and its pages (None, a file without pages: one)."""
    counted = pages if pages else 1
    usage_add(user_id=user_id, collection_id=collection_id, indexing_jobs=1, indexing_seconds=round(seconds, 3),
              indexing_pages=counted)
    transaction.on_commit(lambda: (metrics.INDEXING_SECONDS.inc(seconds), metrics.INDEXING_PAGES.inc(counted)))


def _count_answer(mode: str, chat_model: str, tokens_in: int, tokens_out: int) -> None:
    """The Prometheus side of an answer, once its row committed."""
    metrics.ANSWERS.labels(mode=mode).inc()
    if tokens_in or tokens_out:
        metrics.TOKENS.labels(model=chat_model, direction="in").inc(tokens_in)
        metrics.TOKENS.labels(model=chat_model, direction="out").inc(tokens_out)
