"""When to trust each arm in the fusion (pure).

Fusion gives the full-text arm's first passage a fixed share of the score however poor its match (by
reciprocal rank weight / (k + 1); by scores, the default, its full weight: it is its list's best): a
Thai question whose whole phrase was one "word" still had a "best" passage, and it dragged hybrid
below the vector arm (XQuAD Thai hit@1 0.558 against 0.778). The rule:

- the question's language is known and the full-text arm cannot analyse it (no stemmer, no
  segmenter, no stop words: Lao, Khmer, Burmese, ...) -> the arm is skipped;
- the best full-text passage holds less than `WEAK_COVERAGE` of the question's terms (a third or
  fewer) -> its weight drops to `WEAK_WEIGHT_FACTOR` (0: its ranks stay in the trace only).

Both were chosen with bench/fusion_sweep.py on the even-numbered XQuAD articles of seven
languages plus two blind cases (German questions over English documents with every language
searched: hybrid hit@1 0.568 against the vector arm's 0.760 without the rule, 0.768 with it;
Chinese indexed without segmentation), and checked on the odd-numbered ones (README, Evaluation).
A factor of 0.25 instead of 0 still let the blind arm pull the cross-lingual case down to 0.656.

Its counterpart for a weak vector arm: on long German court decisions full text alone found the
answer first for 52.5 % of the questions, hybrid 49.0 %, the vector arm 36.0 %: every passage of a
long decision is about the same thing, so the embedder sees them all about equally close and its
order among them is noise that RRF fuses in at full weight. The signal is the vector arm's own
distance profile, scale-free (no distance constant, which would not transfer between embedders,
docs/retrieval.md): its first passage is *not separated* when the gap to the second is smaller
than the mean gap between consecutive passages of its top `FLAT_TOP` (the first is then no more
apart from the rest than any passage is from its neighbour). Then, when the full-text arm has a
match that is not weak, the vector weight is multiplied by `FLAT_WEIGHT_FACTOR`: full text decides
the order among the passages the embedder cannot tell apart, the vector arm still adds its
candidates. Measured with bench/hybrid_arms.py (docs/retrieval.md, "Fusion").
The trace says which rule applied.
"""
from __future__ import annotations

from dataclasses import dataclass

WEAK_COVERAGE = 0.34
WEAK_WEIGHT_FACTOR = 0.0
FLAT_TOP = 10
FLAT_WEIGHT_FACTOR = 0.5


@dataclass(frozen=True)
class FtsEvidence:
    language: str  # the question's language, "" when not told
    analysis: str  # documents.language.search_text.analysis_of(...): "" when the arm cannot analyse it
    coverage: float | None  # share of the question's terms in the best full-text passage


def skip_fts(*, language: str, analysis: str) -> str:
    """Why the full-text arm is not run for a question of `language`, or "" to run it."""
    if language and not analysis:
        return (f"full-text arm skipped: no full-text analysis for the question's language '{language}' "
                "(no stemmer, segmenter or stop words)")
    return ""


def fts_weight(*, weight: float, evidence: FtsEvidence, weak_coverage: float = WEAK_COVERAGE,
               weak_factor: float = WEAK_WEIGHT_FACTOR) -> tuple[float, str]:
    """The full-text arm's weight for this question, and the reason when it is lowered ("" if not)."""
    if evidence.coverage is not None and evidence.coverage < weak_coverage:
        return weight * weak_factor, (
            f"full-text weight {weight:g} -> {weight * weak_factor:g}: the best full-text passage holds "
            f"{evidence.coverage:.0%} of the question's terms (weak below {weak_coverage:.0%})")
    return weight, ""


def vector_not_separated(distances: list[float], *, top: int = FLAT_TOP) -> bool:
    """Whether the vector arm's first passage stands no further from its second than the mean gap
    between consecutive passages of its top `top` (cosine distances, best first)."""
    head = distances[:top]
    if len(head) < 3:
        return False
    mean_gap = (head[-1] - head[0]) / (len(head) - 1)
    return head[1] - head[0] < mean_gap


def vector_weight(*, weight: float, distances: list[float], fts_weight: float,
                  flat_factor: float = FLAT_WEIGHT_FACTOR) -> tuple[float, str]:
    """The vector arm's weight for this question, and the reason when it is lowered ("" if not).

    `fts_weight` is the full-text arm's weight after its own rule: a full-text arm that is absent or
    weak (0) leaves the vector arm alone whatever its profile.
    """
    if fts_weight <= 0 or not vector_not_separated(distances):
        return weight, ""
    head = distances[:FLAT_TOP]
    return weight * flat_factor, (
        f"vector weight {weight:g} -> {weight * flat_factor:g}: its first passage is {head[1] - head[0]:.4f} "
        f"closer than its second, less than the mean gap {(head[-1] - head[0]) / (len(head) - 1):.4f} "
        f"between its top {len(head)}; full text orders what the embedder cannot tell apart")
