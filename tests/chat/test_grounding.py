"""Grounded numbers (issue #30): a section stating a number its cited passages lack is flagged in the
metadata, the API and /metrics; normalised variants count as the same number."""
from __future__ import annotations

import pytest

from chat.grounding import mark_ungrounded_sections, ungrounded_numbers
from chat.models import Message
from chat.orchestrator import answer_conversation
from retrieval.telemetry import render_metrics
from tests.chat.helpers import indexed


@pytest.mark.parametrize("answer, passage, missing", [
    ("The allowance is 5,80 Kč per km [S1].", "Rate: 5.80 CZK per kilometre.", []),
    ("Up to 10 000 Kč without VAT [S1].", "Purchases up to 10,000 CZK excl. VAT.", []),
    ("Submit it by 24. 11. 2026 [S1].", "Deadline 2026-11-24.", []),
    ("1. Trips over 18 hours get 333 Kč [S1].", "Over 18 hours: 333 CZK.", []),
    ("Trips over 18 hours get 353 Kč [S1].", "Over 18 hours: 333 CZK.", ["353"]),
    ("You get 25 days [S2].", "", ["25"]),
])
def test_numbers_are_checked_against_the_cited_passages(answer, passage, missing):
    assert ungrounded_numbers(answer, [passage] if passage else []) == missing


def test_only_the_sections_passages_count():
    tag_map = {"S1": {"excerpt": "Over 18 hours: 333 CZK."}, "S2": {"excerpt": "Leave: 25 days."}}
    sections = [{"text": "333 Kč", "source_ids": ["S1"]}, {"text": "25 days", "source_ids": ["S1"]}]
    assert mark_ungrounded_sections(sections, tag_map) == 1  # type: ignore[arg-type]
    assert "ungrounded_numbers" not in sections[0] and sections[1]["ungrounded_numbers"] == ["25"]


def _ungrounded_total() -> float:
    for line in render_metrics().decode().splitlines():
        if line.startswith("ai_chat_ungrounded_sections_total "):
            return float(line.split()[-1])
    return 0.0


@pytest.mark.django_db
def test_an_answer_whose_number_is_not_in_its_passage_is_flagged_end_to_end(api, user, chat_ai):
    indexed(user, "Trips over 18 hours: the meal allowance is 333 CZK.", "travel.txt")
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    chat_ai.script_chat("Trips over 18 hours get 353 CZK [S1].\n\nSee the travel rules [S1].")
    before = _ungrounded_total()
    sent = api.post(f"/api/conversations/{conversation}/messages/",
                    {"content": "What is the meal allowance for trips over 18 hours?"}, format="json").json()
    answer_conversation(conversation)
    answer = Message.objects.get(pk=sent["assistant_message"]["id"])
    assert answer.status == "done", answer.error
    assert answer.metadata["ungrounded_sections"] == 1
    assert answer.metadata["sections"][0]["ungrounded_numbers"] == ["353"]
    assert "ungrounded_numbers" not in answer.metadata["sections"][1]
    assert _ungrounded_total() == before + 1
    shown = api.get(f"/api/conversations/{conversation}/messages/").json()
    rows = shown["results"] if isinstance(shown, dict) else shown
    assert next(m for m in rows if m["id"] == answer.pk)["metadata"]["ungrounded_sections"] == 1
