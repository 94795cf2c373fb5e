"""Distances calibrated to an embedding model's vector space (no Django).

A fixed cosine distance does not transfer between models: with the built-in e5-small unrelated
questions sit 0.15-0.36 apart, with others 0.6-1.0. So each model's bounds come from its own
distribution of distances between unrelated questions (`calibration_questions.json`, shipped with
this package: generic questions in cs/en/de/ru on subjects no organisation files):

- **direct answer**: half the 1st percentile of the distances between unrelated questions of one
  language. A question gets a pair as the answer itself only when it is twice as close to the
  pair's question as almost any two unrelated questions are to each other (and agrees with it,
  retrieval/knowledge/agreement.py).
- **approved pairs as sources** (tier 1): the median distance between unrelated questions, any
  languages (pairs are asked across languages): a pair farther than a typical unrelated question
  is not offered to the model. The model's space is not the same across languages: two unrelated
  questions in one language sit closer than two in different languages (e5-small: medians 0.22
  against 0.26), so a pair in the user's language outranks the right pair in another language.
  `qa_language_shift` is, per relation between the two questions' languages (`same`, `cross`), its
  median less the overall median; tier 1 ranks and bounds a pair by its distance less the shift of
  its relation (retrieval/search/qa_tier.py), i.e. by how much closer it is than unrelated
  questions of the same relation are.
- **passages as sources** (tiers 2-3 with a topic): the largest distance between unrelated
  questions: a passage farther than any two unrelated questions is not about the question.

- **grouping the gap inbox's questions** (chat/gaps.py): the same-language 1st percentile, and the
  1st percentile of unrelated questions of two languages (`unrelated.cross_language_p1`) for a pair
  of questions in two languages, which the model keeps farther apart than one language's.

No labels are used: nothing here knows which question a pair answers.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

QUESTIONS_FILE = Path(__file__).resolve().parent / "calibration_questions.json"
METHOD = "unrelated-questions-v2"  # v2: qa_language_shift


def calibration_questions(path: Path = QUESTIONS_FILE) -> list[tuple[str, str]]:
    """(language, question) for every shipped question."""
    data = json.loads(path.read_text(encoding="utf-8"))["questions"]
    return [(language, question) for language, questions in data.items() for question in questions]


def pairwise_distances(vectors: np.ndarray) -> np.ndarray:
    """Cosine distances between every two rows (upper triangle, flattened in row order)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    distances = 1.0 - unit @ unit.T
    return distances[np.triu_indices(len(unit), 1)]


def bounds_from(vectors: np.ndarray, languages: Sequence[str]) -> dict:
    """The calibration of one model from its vectors of the calibration questions (see the module)."""
    if len(vectors) != len(languages) or len(vectors) < 4:
        raise ValueError("calibration needs at least four questions, one vector each")
    every = pairwise_distances(np.asarray(vectors, dtype=np.float64))
    rows, cols = np.triu_indices(len(languages), 1)
    same = np.array([languages[int(i)] == languages[int(j)] for i, j in zip(rows, cols)])
    one_language = every[same] if same.any() else every
    p1 = float(np.percentile(one_language, 1))
    median = float(np.percentile(every, 50))
    across = every[~same] if (~same).any() else every
    return {
        "method": METHOD,
        "questions": len(languages),
        "direct_distance": round(p1 / 2, 4),
        "qa_distance": round(median, 4),
        "qa_language_shift": {"same": round(float(np.percentile(one_language, 50)) - median, 4),
                              "cross": round(float(np.percentile(across, 50)) - median, 4)},
        "doc_distance": round(float(every.max()), 4),
        "unrelated": {"same_language_p1": round(p1, 4),
                      "same_language_median": round(float(np.percentile(one_language, 50)), 4),
                      "cross_language_median": round(float(np.percentile(across, 50)), 4),
                      "cross_language_p1": round(float(np.percentile(across, 1)), 4),
                      "min": round(float(every.min()), 4), "p5": round(float(np.percentile(every, 5)), 4),
                      "median": round(float(np.percentile(every, 50)), 4), "max": round(float(every.max()), 4)},
    }
