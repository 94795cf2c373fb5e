"""When to trust the full-text arm in the fusion (pure).

Reciprocal rank fusion gives the full-text arm's first passage a fixed share of the score however
poor its match: a Thai question whose whole phrase was one "word" still had a "best" passage, and
it dragged hybrid below the vector arm (XQuAD Thai hit@1 0.558 against 0.778). The rule:

- the question's language is known and the full-text arm cannot analyse it (no stemmer, no
  segmenter, no stop words: Lao, Khmer, Burmese, ...) -> the arm is skipped;
- the best full-text passage holds less than `WEAK_COVERAGE` of the question's terms (a third or
  fewer) -> its weight drops to `WEAK_WEIGHT_FACTOR` (0: its ranks stay in the trace only).

Both were chosen with bench/fusion_sweep.py on the even-numbered XQuAD articles of seven
languages plus two blind cases (German questions over English documents with every language
searched: hybrid hit@1 0.568 against the vector arm's 0.760 without the rule, 0.768 with it;
Chinese indexed without segmentation), and checked on the odd-numbered ones (README, Evaluation).
A factor of 0.25 instead of 0 still let the blind arm pull the cross-lingual case down to 0.656.
The trace says which rule applied.
"""
from __future__ import annotations

from dataclasses import dataclass

WEAK_COVERAGE = 0.34
WEAK_WEIGHT_FACTOR = 0.0


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
