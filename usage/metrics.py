"""Prometheus counters of usage (multiprocess mode, like retrieval/telemetry.py: /metrics adds up every
process's samples). No per-user labels: per-user figures live in the UsageDay table."""
from __future__ import annotations

from prometheus_client import Counter

QUESTIONS = Counter("ragsite_questions_total", "Questions accepted, by interface (web, api, openai, mcp)", ["origin"])
ANSWERS = Counter("ragsite_answers_total", "Answers finished, by mode (failed included)", ["mode"])
TOKENS = Counter("ragsite_chat_tokens_total", "Chat model tokens, by model and direction (in, out)",
                 ["model", "direction"])
INDEXING_SECONDS = Counter("ragsite_indexing_seconds_total", "Time spent on indexing jobs that finished")
INDEXING_PAGES = Counter("ragsite_indexing_pages_total", "Pages indexed (a file without pages counts as one)")
QUOTA_REFUSALS = Counter("ragsite_quota_refusals_total", "Requests refused by a group quota, by limit", ["limit"])
