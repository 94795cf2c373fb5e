"""Weighted reciprocal rank fusion (pure)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)


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
