"""The fusion rules that keep a blind or weak full-text arm, or a vector arm that cannot tell its passages
apart, from moving hybrid results below the better arm (pure)."""
from __future__ import annotations

from retrieval.search.fusion_rule import (FLAT_WEIGHT_FACTOR, WEAK_COVERAGE, FtsEvidence, fts_weight, skip_fts,
                                          vector_not_separated, vector_weight)


def test_a_language_the_arm_cannot_analyse_skips_it_with_a_reason():
    assert "no full-text analysis for the question's language 'km'" in skip_fts(language="km", analysis="")
    assert skip_fts(language="zh", analysis="segmented") == ""
    # A question whose language is not told keeps the arm (every configuration is searched).
    assert skip_fts(language="", analysis="") == ""


def test_weak_coverage_lowers_the_weight_and_says_why():
    weight, why = fts_weight(weight=1.5, evidence=FtsEvidence("en", "stemmed", WEAK_COVERAGE / 2))
    assert weight < 1.5
    assert "the best full-text passage holds" in why and "weak below" in why


def test_strong_coverage_or_no_hit_keeps_the_weight():
    assert fts_weight(weight=1.5, evidence=FtsEvidence("en", "stemmed", 1.0)) == (1.5, "")
    assert fts_weight(weight=1.5, evidence=FtsEvidence("en", "stemmed", WEAK_COVERAGE)) == (1.5, "")
    assert fts_weight(weight=1.5, evidence=FtsEvidence("en", "stemmed", None)) == (1.5, "")


# --- the weak vector arm: a first passage not separated from the rest ------------------------------

FLAT = [0.150, 0.151, 0.153, 0.154, 0.156, 0.158, 0.159, 0.161, 0.163, 0.165]  # gap 0.001 < mean 0.0017
SEPARATED = [0.080, 0.150, 0.151, 0.153, 0.154, 0.156, 0.158, 0.159, 0.161, 0.163]  # gap 0.070 > mean 0.0092


def test_a_vector_arm_whose_first_passage_is_not_separated_yields_to_full_text():
    assert vector_not_separated(FLAT) and not vector_not_separated(SEPARATED)
    weight, why = vector_weight(weight=1.0, distances=FLAT, fts_weight=1.5)
    assert weight == 1.0 * FLAT_WEIGHT_FACTOR < 1.0
    assert "vector weight 1 -> 0.5" in why and "mean gap 0.0017" in why


def test_the_signal_is_scale_free_so_it_holds_for_any_embedder():
    # An embedder with distances ten times wider and shifted decides the same: no distance constant.
    assert vector_not_separated([0.5 + 10 * (d - 0.15) for d in FLAT])
    assert not vector_not_separated([0.5 + 10 * (d - 0.15) for d in SEPARATED])


def test_a_separated_vector_arm_or_a_weak_or_absent_full_text_arm_keeps_the_vector_weight():
    assert vector_weight(weight=1.0, distances=SEPARATED, fts_weight=1.5) == (1.0, "")
    # With the full-text arm zeroed by its own rule (or not run) nothing is left to decide the order.
    assert vector_weight(weight=1.0, distances=FLAT, fts_weight=0.0) == (1.0, "")
    # Too few passages to call a profile flat.
    assert vector_weight(weight=1.0, distances=[0.15, 0.15], fts_weight=1.5) == (1.0, "")
