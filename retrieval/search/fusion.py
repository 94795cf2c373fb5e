"""Fusing the arms' ranked lists into one (pure): by their scores, each on its own kind of scale
(the default), or by weighted reciprocal rank (RRF, the `fusion` retrieval setting)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Hashable, Literal, TypeVar

K = TypeVar("K", bound=Hashable)

# How an arm's scores are brought onto 0..1 (`scaled`): "range" for a scale without a meaningful zero
# (cosine similarity: every passage of a collection is "somewhat" close), "best" for one whose 0 means no
# match (ts_rank: a passage with half the best value holds about half as much of the question).
Scale = Literal["range", "best"]


@dataclass
class Fused(Generic[K]):
    key: K  # what the arms ranked (chunk ids in retrieve())
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # arm name -> 1-based rank


def rrf(arms: dict[str, list[K]], *, k: int = 60, weights: dict[str, float] | None = None) -> list[Fused[K]]:
    """Fuse ranked lists: score(d) = sum over arms of weight / (k + rank).

    `arms` maps an arm name to its keys, best first. A weight of 0 keeps an arm's ranks in
    the result (for the trace) without letting it move the order. Ties go to the key whose
    best rank is better, then to the first arm's order.
    """
    weights = weights or {}
    fused: dict[K, Fused[K]] = {}
    for name, keys in arms.items():
        weight = weights.get(name, 1.0)
        for rank, key in enumerate(keys, start=1):
            entry = fused.setdefault(key, Fused(key, 0.0))
            if name in entry.ranks:  # a key listed twice in one arm counts once
                continue
            entry.ranks[name] = rank
            entry.score += weight / (k + rank)
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values())))


def scaled(scores: list[float], scale: Scale) -> list[float]:
    """An arm's scores (best first, higher better) on 0..1: "range" puts its best at 1 and its last at 0
    (all 1 when they are equal), "best" divides each by the best (all 1 when the best is not positive)."""
    if not scores:
        return []
    best = max(scores)
    if scale == "best":
        return [s / best if best > 0 else 1.0 for s in scores]
    low = min(scores)
    return [(s - low) / (best - low) if best > low else 1.0 for s in scores]


def score_fusion(arms: dict[str, list[tuple[K, float]]], *, scales: dict[str, Scale],
                 weights: dict[str, float] | None = None) -> list[Fused[K]]:
    """Fuse scored lists: score(d) = sum over arms of weight × d's score scaled on the arm's own list
    (`scaled`, by `scales[name]`, "range" when not given); an arm that did not list d adds 0.

    `arms` maps an arm name to its (key, score) pairs, best first. Unlike RRF, a first passage that
    stands far above the rest of its list keeps that distance: passages two arms list lower down do not
    outvote it by being in both. A weight of 0 keeps the arm's ranks for the trace only; ties go to the
    key whose best rank is better, then to the first arm's order.
    """
    weights = weights or {}
    fused: dict[K, Fused[K]] = {}
    for name, pairs in arms.items():
        weight = weights.get(name, 1.0)
        values = scaled([score for _, score in pairs], scales.get(name, "range"))
        for rank, ((key, _), value) in enumerate(zip(pairs, values), start=1):
            entry = fused.setdefault(key, Fused(key, 0.0))
            if name in entry.ranks:  # a key listed twice in one arm counts once
                continue
            entry.ranks[name] = rank
            entry.score += weight * value
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values())))
