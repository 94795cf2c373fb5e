"""bench/approved_qa.py's evaluation on a tiny set (real PostgreSQL, fake embedder): the figures per kind
count what reaches the user without a topic, what is answered directly, and direct answers with a wrong pair."""
from __future__ import annotations

import pytest

from bench.approved_qa import evaluate, load_pairs
from bench.setdata import ApprovedQASet, QAPair, QAQuestion

pytestmark = pytest.mark.django_db

PAIRS = [QAPair("p1", "en", "travel", "meals", "How much is the meal allowance for a trip of 5 to 12 hours?", "140 CZK."),
         QAPair("p2", "en", "leave", "", "How many days of leave do I get a year?", "25 days.")]
QUESTIONS = [
    QAQuestion("q1", "en", "How much is the meal allowance for a trip of 5 to 12 hours", "paraphrase", "p1", ""),
    QAQuestion("q2", "en", "How many days of leave do I get a year?", "paraphrase", "p2", ""),
    QAQuestion("q3", "en", "How much is the meal allowance for a trip of 12 to 18 hours?", "number_variant", None,
               "p1 with 12-18 h"),
    QAQuestion("q4", "en", "Which printer is on the second floor?", "unrelated", None, ""),
]


def test_the_evaluation_counts_reach_direct_and_wrong_direct_per_kind(user, staff_user, fake_embedder, settings):
    settings.CHAT_QA_DIRECT_DISTANCE = 0.5  # the fake model is not calibrated: the setting is its bound
    aqa = ApprovedQASet(PAIRS, QUESTIONS)
    result = evaluate(aqa, user=user, pair_ids=load_pairs(aqa, staff=staff_user))
    kinds = result["kinds"]
    assert kinds["paraphrase"]["reach"] == 1.0 and kinds["paraphrase"]["direct"] == 1.0
    assert kinds["paraphrase"]["direct_wrong"] == 0.0 and kinds["paraphrase"]["goal_met"] is True
    assert kinds["number_variant"]["direct"] == 0.0
    assert kinds["number_variant"]["reasons"] == {"number_mismatch": 1}
    assert kinds["unrelated"]["direct"] == 0.0 and kinds["unrelated"]["goal_met"] is True
    assert result["bounds"]["source"]["direct"] == "setting" and result["pairs"] == 2
