"""The fusion rule that keeps a blind or weak full-text arm from moving hybrid results (pure)."""
from __future__ import annotations

from retrieval.search.fusion_rule import WEAK_COVERAGE, FtsEvidence, fts_weight, skip_fts


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
