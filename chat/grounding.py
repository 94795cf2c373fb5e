"""Grounded numbers: every number, date and amount in an answer section must occur in a passage that
section cites (no Django; deterministic, no second model call).

Numbers are compared normalised (retrieval/knowledge/agreement.py's `numbers_in`): "5,80 Kč" and
"5.80 CZK" are both 5.8, "10 000" = "10,000", "24. 11. 2026" = "2026-11-24". Citation tags ([S1])
and ordered-list markers ("1. ") are not numbers of the answer. A section whose numbers are not all
found gets `ungrounded_numbers` (the numbers as written in normalised form); the page marks it
"not found in the cited sources" and /metrics counts it (chat.orchestrator).
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from chat.citations import segment_excerpt
from retrieval.contracts import Segment
from retrieval.knowledge.agreement import numbers_in

_TAG = re.compile(r"\[\s*S\d+\s*\]|【[^】]*】", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s+", re.MULTILINE)


def answer_numbers(text: str) -> set[str]:
    """The numbers an answer's text states (tags and list markers left out)."""
    return numbers_in(_LIST_MARKER.sub("", _TAG.sub(" ", text)))


def ungrounded_numbers(text: str, passages: list[str]) -> list[str]:
    """The numbers of `text` found in none of `passages` (normalised, sorted)."""
    stated = answer_numbers(text)
    if not stated:
        return []
    found: set[str] = set()
    for passage in passages:
        found |= numbers_in(passage)
    return sorted(stated - found)


def mark_ungrounded_sections(sections: list[dict], tag_map: Mapping[str, Segment]) -> int:
    """Add `ungrounded_numbers` to each section with a number its cited passages lack; how many sections."""
    flagged = 0
    for section in sections:
        cited = [segment_excerpt(tag_map[tag]) for tag in section.get("source_ids", []) if tag in tag_map]
        missing = ungrounded_numbers(str(section.get("text", "")), cited)
        if missing:
            section["ungrounded_numbers"] = missing
            flagged += 1
    return flagged
