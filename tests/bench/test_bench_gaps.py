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


def test_the_variants_group_online_by_linkage_bound_and_numbers():
    import numpy as np

    from bench.gaps_variants import group_online

    angles = [0.0, 0.3, 0.6]  # neighbours ~0.045 apart, the ends ~0.175
    vectors = np.array([[np.cos(a), np.sin(a)] for a in angles])
    same = dict(same=0.12, cross=0.12)
    plain = [frozenset()] * 3
    complete = group_online([0, 1, 2], vectors, ["cs"] * 3, plain, linkage="complete", agree_numbers=False, **same)
    assert complete[0] == complete[1] != complete[2]  # no chain: the ends are too far apart
    average = group_online([0, 1, 2], vectors, ["cs"] * 3, plain, linkage="average", agree_numbers=False, **same)
    assert average[0] == average[1] == average[2]  # the mean of 0.175 and 0.045 is within 0.12: a chain
    numbered = [frozenset(), frozenset({"18"}), frozenset()]
    split = group_online([0, 1, 2], vectors, ["cs"] * 3, numbered, linkage="complete", agree_numbers=True, **same)
    assert split[0] != split[1]


def test_the_variants_tighten_in_a_dense_domain_and_split_by_negation_in_one_language():
    import numpy as np

    from bench.gaps_variants import group_online

    angles = [0.0] * 8 + [0.3]  # eight siblings on one spot, a ninth ~0.045 away: within the bound 0.12
    vectors = np.array([[np.cos(a), np.sin(a)] for a in angles])
    options = dict(linkage="complete", same=0.12, cross=0.12, agree_numbers=True)
    order, plain, czech = list(range(9)), [frozenset()] * 9, ["cs"] * 9
    assert len(set(group_online(order, vectors, czech, plain, **options).values())) == 1
    scaled = group_online(order, vectors, czech, plain, density="local_scaling", **options)
    assert scaled[0] == scaled[7] != scaled[8]  # its distance is large against the siblings' 7th neighbour
    negated = [False] * 8 + [True]
    assert len(set(group_online(order, vectors, czech, plain, negated=negated, **options).values())) == 2
    mixed = ["cs"] * 8 + ["en"]
    assert len(set(group_online(order, vectors, mixed, plain, negated=negated, negation_across=False,
                                **options).values())) == 1  # across languages negation is not compared
