"""Ways of grouping the gap inbox's questions, compared on the same vectors (issue #34): JSON.

    python bench/gaps_variants.py [--json-out FILE]

No database, no worker: the built-in model (multilingual-e5-small) embeds the questions of
bench/sets/approved_qa and its shipped calibration questions once; each variant then groups the
questions online, one after another, as the inbox does (a question joins the best group it may join,
else starts one). Two selections: the one bench/gaps.py uses (the first pairs by id, plus near misses
and unrelated questions) and a held-out one (the remaining pairs, the other near misses and unrelated
questions), each in the bench's order (a pair's questions together) and shuffled (seed 7). Reported:
pairwise precision and recall of "same group" against the known groups, all pairs and pairs in two
languages. The bounds are the model's calibration (retrieval/knowledge/calibration.py), none is fitted.

Variants: linkage complete (every question of the group within the bound), average (the mean
distance within it) or centroid (the distance to the group's mean vector); bound same-language p1
(twice the direct bound: what chat/gaps.py used), the direct bound itself (the same-question bound
of approved answers), or p1 per pair of languages; with or without number agreement.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gaps import choose, pairwise, truth_of
from bench.setdata import load_approved_qa
from retrieval.knowledge.agreement import numbers_in
from retrieval.knowledge.calibration import bounds_from, calibration_questions


def group_online(order: list[int], vectors: np.ndarray, languages: list[str], numbers: list[frozenset], *,
                 linkage: str, same: float, cross: float, agree_numbers: bool) -> dict[int, int]:
    """{question index: group number}, each question put in the group it joins nearest (see the module)."""
    groups: list[list[int]] = []
    for i in order:
        best = None
        for number, members in enumerate(groups):
            if agree_numbers and any(numbers[j] != numbers[i] for j in members):
                continue
            distances = 1.0 - vectors[members] @ vectors[i]
            bounds = np.array([cross if languages[j] != languages[i] else same for j in members])
            if linkage == "complete":
                score = float((distances - bounds).max())
            elif linkage == "average":
                score = float((distances - bounds).mean())
            else:  # centroid
                centre = vectors[members].mean(axis=0)
                centre /= max(float(np.linalg.norm(centre)), 1e-12)
                score = float(1.0 - centre @ vectors[i]) - (cross if all(languages[j] != languages[i] for j in members)
                                                            else same)
            if score <= 0 and (best is None or score < best[0]):
                best = (score, number)
        if best is None:
            groups.append([i])
        else:
            groups[best[1]].append(i)
    return {i: number for number, members in enumerate(groups) for i in members}


def main(argv=None) -> int:
    from retrieval.ai import builtin

    p = argparse.ArgumentParser(prog="bench/gaps_variants.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--json-out")
    args = p.parse_args(argv)
    questions = load_approved_qa().questions
    vectors = np.asarray(builtin.query([q.question for q in questions]), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    shipped = calibration_questions()
    calibration = bounds_from(np.asarray(builtin.query([q for _, q in shipped]), dtype=np.float64),
                              [language for language, _ in shipped])
    p1, p1_cross, direct = (calibration["unrelated"]["same_language_p1"], calibration["unrelated"]["cross_language_p1"],
                            calibration["direct_distance"])
    index = {q.id: i for i, q in enumerate(questions)}
    languages = [q.lang for q in questions]
    numbers = [frozenset(numbers_in(q.question)) for q in questions]
    bench = choose(questions, 200)
    taken_pairs, taken = {q.pair_id for q in bench}, {q.id for q in bench}
    held_out = choose([q for q in questions if q.id not in taken and q.pair_id not in taken_pairs], 200)
    variants = {
        "complete, same-language p1 (before)": dict(linkage="complete", same=p1, cross=p1, agree_numbers=False),
        "complete, direct bound": dict(linkage="complete", same=direct, cross=direct, agree_numbers=False),
        "average, same-language p1": dict(linkage="average", same=p1, cross=p1, agree_numbers=False),
        "average, p1 per pair of languages": dict(linkage="average", same=p1, cross=p1_cross, agree_numbers=False),
        "centroid, same-language p1": dict(linkage="centroid", same=p1, cross=p1, agree_numbers=False),
        "centroid, direct bound": dict(linkage="centroid", same=direct, cross=direct, agree_numbers=False),
        "complete, same-language p1, numbers agree": dict(linkage="complete", same=p1, cross=p1, agree_numbers=True),
        "complete, p1 per pair of languages, numbers agree (kept)": dict(linkage="complete", same=p1, cross=p1_cross,
                                                                        agree_numbers=True),
    }
    result: dict = {"set": "bench/sets/approved_qa", "model": builtin.MODEL_NAME,
                    "bounds": {"same_language_p1": p1, "cross_language_p1": p1_cross, "direct": direct},
                    "selections": {"bench": len(bench), "held_out": len(held_out)}, "variants": {}}
    for name, options in variants.items():
        row = {}
        for selection_name, selection in (("bench", bench), ("held_out", held_out)):
            items = [index[q.id] for q in selection]
            for order_name in ("in_order", "shuffled"):
                order = list(items)
                if order_name == "shuffled":
                    random.Random(7).shuffle(order)
                group_of = group_online(order, vectors, languages, numbers, **options)
                triples = [(truth_of(questions[i]), languages[i], group_of[i]) for i in items]
                row[f"{selection_name}_{order_name}"] = {
                    "all": {k: v for k, v in pairwise(triples).items() if k in ("precision", "recall")},
                    "two_languages": {k: v for k, v in pairwise(triples, cross_language_only=True).items()
                                      if k in ("precision", "recall")}}
        result["variants"][name] = row
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
