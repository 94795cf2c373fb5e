"""Dolamic and Savoy's Czech stemmers on the examples their algorithm is known by (no database)."""
from __future__ import annotations

import pytest

from documents.language.czech_stem import czech_stem


@pytest.mark.parametrize(("word", "light", "aggressive"), [
    ("velkého", "velk", "vel"),
    ("velkému", "velk", "vel"),
    ("velitelem", "velitel", "vel"),
    ("velitelů", "velitel", "vel"),
    ("velení", "velen", "vel"),
    ("velice", "velik", "vel"),  # "-ce" was softened from "-k": restored
    ("vědci", "vědk", "věd"),
])
def test_case_endings_go_and_the_aggressive_stemmer_also_cuts_derivations(word, light, aggressive):
    assert czech_stem(word, aggressive=False) == light
    assert czech_stem(word) == aggressive


def test_derived_words_meet_only_in_the_aggressive_stem():
    assert czech_stem("skartace") == czech_stem("skartační") == "skarta"
    assert czech_stem("schválení") == czech_stem("schválit") == "schvál"
    assert czech_stem("skartace", aggressive=False) != czech_stem("skartační", aggressive=False)


def test_short_words_numbers_and_mixed_tokens_are_left_alone():
    assert czech_stem("dům") == "dům"  # three letters: no rule cuts it
    assert [czech_stem(w) for w in ("2024", "5,80", "b2b")] == ["2024", "5,80", "b2b"]
