"""bench/gaps.py's figures (no database): the questions it picks and pairwise precision/recall of grouping."""
from __future__ import annotations

from bench.gaps import choose, pairwise, truth_of
from bench.setdata import QAQuestion


def q(id_: str, kind: str, pair: str | None, lang: str = "cs") -> QAQuestion:
    return QAQuestion(id_, lang, f"question {id_}", kind, pair, "")


def test_pairwise_precision_and_recall_count_pairs_of_questions():
    items = [("a", "cs", 1), ("a", "en", 1), ("a", "de", 2), ("b", "cs", 2), ("c", "en", 3)]
    # same truth: (0,1) (0,2) (1,2); same group: (0,1) (2,3) -> tp 1, fp 1, fn 2
    assert pairwise(items) == {"precision": 0.5, "recall": 0.3333, "true_pairs": 3, "grouped_pairs": 2}
    # across languages only: (0,1) (0,2) (1,2) true, (2,3) is de/cs grouped wrongly
    assert pairwise(items, cross_language_only=True)["recall"] == 0.3333
    assert pairwise([("a", "cs", 1), ("b", "cs", 2)]) == {"precision": None, "recall": None, "true_pairs": 0,
                                                          "grouped_pairs": 0}


def test_choose_takes_whole_groups_then_near_misses_and_unrelated_questions_of_their_own():
    questions = [q("1", "paraphrase", "p1"), q("2", "cross_language", "p1", "en"), q("3", "paraphrase", "p2"),
                 q("4", "paraphrase", "p2"), q("5", "near_miss", None), q("6", "unrelated", None),
                 q("7", "number_variant", None)]
    chosen = choose(questions, 4)
    assert [c.id for c in chosen] == ["1", "2", "5", "6"]  # p2 would pass 80 % of 4
    assert [truth_of(c) for c in chosen] == ["p1", "p1", "5", "6"]
