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
of approved answers), or p1 per pair of languages; with or without number agreement; then, on top
of the grouping before, negation agreement (retrieval/knowledge/agreement.is_negated; in any two
questions, or only in two of one language) and density-adaptive bounds (local scaling as in
self-tuning spectral clustering, with its published K = 7; mutual K nearest neighbours; the group of
the nearest question), and what retrieval would find: the passages of bench/sets/czech_retrieval (the
same domain) ranked for each question by the vector arm alone, the best one the same for every
member, or each one's best among the other's best three.

A third selection, `siblings`, holds the set's number and negation variants with every question of
the pair each one names: the near siblings the embedding cannot tell apart (shown, not chosen on).

    python bench/gaps_variants.py --only "negation"   # only the variants whose name contains it
"""
from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import json_report
from bench.gaps import choose, pairwise, truth_of
from bench.setdata import load_approved_qa, load_czech_retrieval
from retrieval.knowledge.agreement import is_negated, numbers_in
from retrieval.knowledge.calibration import bounds_from, calibration_questions


K_NEIGHBOURS = 7  # the K of self-tuning spectral clustering (Zelnik-Manor & Perona 2004), taken as published


def local_scales(distances: np.ndarray, seen: list[int], k: int = K_NEIGHBOURS) -> dict[int, float]:
    """{question: its distance to the k-th nearest other question seen so far} (inf with fewer than k)."""
    if len(seen) <= k:
        return {i: float("inf") for i in seen}
    block = distances[np.ix_(seen, seen)].copy()
    np.fill_diagonal(block, np.inf)
    kth = np.partition(block, k - 1, axis=1)[:, k - 1]
    return {i: float(kth[n]) for n, i in enumerate(seen)}


def group_online(order: list[int], vectors: np.ndarray, languages: list[str], numbers: list[frozenset], *,
                 linkage: str, same: float, cross: float, agree_numbers: bool, negated: list[bool] | None = None,
                 density: str = "", negation_across: bool = True,
                 best_passage: list[tuple[int, ...]] | None = None, passage_rule: str = "") -> dict[int, int]:
    """{question index: group number}, each question put in the group it joins nearest (see the module).

    `negated`: also the same negation as every member (`negation_across`: in two languages too).
    `density`: "local_scaling" (also d² <= σ_i σ_j with every member, σ the distance to the K-th
    nearest question seen so far: the bound tightens in a dense domain; "any": with at least one member;
    "normalised": each distance divided by its pair of languages' bound first), "mutual_knn" (also each
    among the other's K nearest seen so far), "nearest" (only the group holding the candidate's nearest
    question seen so far, if it may join it)."""
    distances = 1.0 - vectors @ vectors.T
    if density.endswith("normalised"):  # each distance in units of its pair of languages' bound
        pair_bound = np.array([[cross if a != b else same for b in languages] for a in languages])
        scaled = distances / pair_bound
    else:
        scaled = distances
    groups: list[list[int]] = []
    group_of: dict[int, int] = {}
    seen: list[int] = []
    for i in order:
        seen.append(i)
        scale = local_scales(scaled, seen) if density.startswith("local_scaling") else {}
        neighbours: dict[int, set[int]] = {}
        if "mutual_knn" in density:
            block = scaled[np.ix_(seen, seen)].copy()
            np.fill_diagonal(block, np.inf)
            for n, j in enumerate(seen):
                neighbours[j] = {seen[m] for m in np.argsort(block[n], kind="stable")[:K_NEIGHBOURS]}
        nearest_group = None
        if density == "nearest" and len(seen) > 1:
            others = [o for o in seen if o != i]
            nearest_group = group_of[min(others, key=lambda o: distances[i, o])]
        best = None
        for number, members in enumerate(groups):
            if agree_numbers and any(numbers[j] != numbers[i] for j in members):
                continue
            if negated is not None and any(negated[j] != negated[i] and (negation_across or languages[j] == languages[i])
                                           for j in members):
                continue
            if density.startswith("local_scaling any") and not any(
                    scaled[i, j] ** 2 <= scale[i] * scale[j] for j in members):
                continue
            if density.startswith("local_scaling") and "any" not in density and any(
                    scaled[i, j] ** 2 > scale[i] * scale[j] for j in members):
                continue
            if density == "mutual_knn" and any(j not in neighbours[i] or i not in neighbours[j] for j in members):
                continue
            if density == "nearest" and number != nearest_group:
                continue
            if passage_rule == "same" and any(best_passage[j][0] != best_passage[i][0] for j in members):
                continue
            if passage_rule == "overlap" and any(best_passage[j][0] not in best_passage[i]
                                                 and best_passage[i][0] not in best_passage[j] for j in members):
                continue
            d = distances[members, i]
            bounds = np.array([cross if languages[j] != languages[i] else same for j in members])
            if linkage == "complete":
                score = float((d - bounds).max())
            elif linkage == "average":
                score = float((d - bounds).mean())
            else:  # centroid
                centre = vectors[members].mean(axis=0)
                centre /= max(float(np.linalg.norm(centre)), 1e-12)
                score = float(1.0 - centre @ vectors[i]) - (cross if all(languages[j] != languages[i] for j in members)
                                                            else same)
            if score <= 0 and (best is None or score < best[0]):
                best = (score, number)
        if best is None:
            groups.append([i])
            group_of[i] = len(groups) - 1
        else:
            groups[best[1]].append(i)
            group_of[i] = best[1]
    return group_of


def main(argv=None) -> int:
    from retrieval.ai import builtin

    p = argparse.ArgumentParser(prog="bench/gaps_variants.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--json-out")
    p.add_argument("--only", default="", help="run only the variants whose name contains this")
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
    negated = [is_negated(q.question, q.lang) for q in questions]
    # What retrieval would find for each question: the passages of bench/sets/czech_retrieval (the same
    # domain: travel allowances, sick days, leave), nearest first, by the vector arm alone.
    passages = load_czech_retrieval().passages
    passage_vectors = np.asarray(builtin.passage([f"{p.title}\n{p.text}" for p in passages]), dtype=np.float64)
    passage_vectors /= np.linalg.norm(passage_vectors, axis=1, keepdims=True)
    best_passage = [tuple(int(k) for k in np.argsort(-(passage_vectors @ v), kind="stable")[:3]) for v in vectors]
    bench = choose(questions, 200)
    taken_pairs, taken = {q.pair_id for q in bench}, {q.id for q in bench}
    held_out = choose([q for q in questions if q.id not in taken and q.pair_id not in taken_pairs], 200)
    # Siblings: the number and negation variants with every question of the pair each names (a third
    # selection, where a variant is the near sibling the embedding cannot tell apart; not for choosing).
    named = {q.id: m.group(0) for q in questions if q.kind in ("number_variant", "negation_variant")
             and (m := re.match(r"qa-[a-z]{2}-\d+", q.note))}
    siblings = [q for q in questions if q.id in named or (q.kind in ("paraphrase", "cross_language")
                                                         and q.pair_id in set(named.values()))]
    variants = {
        "complete, same-language p1 (first)": dict(linkage="complete", same=p1, cross=p1, agree_numbers=False),
        "complete, direct bound": dict(linkage="complete", same=direct, cross=direct, agree_numbers=False),
        "average, same-language p1": dict(linkage="average", same=p1, cross=p1, agree_numbers=False),
        "average, p1 per pair of languages": dict(linkage="average", same=p1, cross=p1_cross, agree_numbers=False),
        "centroid, same-language p1": dict(linkage="centroid", same=p1, cross=p1, agree_numbers=False),
        "centroid, direct bound": dict(linkage="centroid", same=direct, cross=direct, agree_numbers=False),
        "complete, same-language p1, numbers agree": dict(linkage="complete", same=p1, cross=p1, agree_numbers=True),
        "complete, p1 per pair of languages, numbers agree (before)": dict(linkage="complete", same=p1, cross=p1_cross,
                                                                        agree_numbers=True),
        "before + negation agrees": dict(linkage="complete", same=p1, cross=p1_cross, agree_numbers=True,
                                       negated=negated),
        "before + negation agrees within one language (kept)": dict(
            linkage="complete", same=p1, cross=p1_cross, agree_numbers=True, negated=negated, negation_across=False),
        "before + negation within one language + local scaling to the nearest member, normalised": dict(
            linkage="complete", same=p1, cross=p1_cross, agree_numbers=True, density="local_scaling any normalised",
            negated=negated, negation_across=False),
        "before + local scaling (K=7)": dict(linkage="complete", same=p1, cross=p1_cross, agree_numbers=True,
                                           density="local_scaling"),
        "before + mutual K nearest (K=7)": dict(linkage="complete", same=p1, cross=p1_cross, agree_numbers=True,
                                              density="mutual_knn"),
        "before + local scaling, normalised by the pair's bound": dict(
            linkage="complete", same=p1, cross=p1_cross, agree_numbers=True, density="local_scaling normalised"),
        "before + local scaling to the nearest member, normalised": dict(
            linkage="complete", same=p1, cross=p1_cross, agree_numbers=True, density="local_scaling any normalised"),
        "before + negation + local scaling to the nearest member, normalised": dict(
            linkage="complete", same=p1, cross=p1_cross, agree_numbers=True, density="local_scaling any normalised",
            negated=negated),
        "kept + the same best passage (vector arm, czech_retrieval)": dict(
            linkage="complete", same=p1, cross=p1_cross, agree_numbers=True, negated=negated, negation_across=False,
            best_passage=best_passage, passage_rule="same"),
        "kept + each one's best passage among the other's best three": dict(
            linkage="complete", same=p1, cross=p1_cross, agree_numbers=True, negated=negated, negation_across=False,
            best_passage=best_passage, passage_rule="overlap"),
        "before + the nearest question's group": dict(linkage="complete", same=p1, cross=p1_cross, agree_numbers=True,
                                                    density="nearest"),
    }
    result: dict = {"set": "bench/sets/approved_qa", "model": builtin.MODEL_NAME,
                    "bounds": {"same_language_p1": p1, "cross_language_p1": p1_cross, "direct": direct},
                    "selections": {"bench": len(bench), "held_out": len(held_out), "siblings": len(siblings)}, "variants": {}}
    for name, options in variants.items():
        if args.only not in name:
            continue
        row = {}
        for selection_name, selection in (("bench", bench), ("held_out", held_out), ("siblings", siblings)):
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
    json_report(result, args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
