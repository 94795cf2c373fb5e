"""bench/czech_analysis.py's `simple` switch analyses Czech as before issue #31, and only Czech (no database)."""
from __future__ import annotations

from bench import czech_analysis
from documents.language import search_input, search_text


def test_the_simple_switch_turns_czech_lemmas_off_for_chunks_and_questions_alike(monkeypatch):
    # Registered so the switch is undone after the test.
    monkeypatch.setattr(search_text, "lemmatised", search_text.lemmatised)
    monkeypatch.setattr(search_text, "word_terms", search_text.word_terms)
    assert search_input("Dostanu dovolenou", language="cs", config="simple").split() == ["dostat", "dovolena"]

    czech_analysis.use("simple")

    assert search_input("Dostanu dovolenou", language="cs", config="simple").split() == ["Dostanu", "dovolenou"]
    assert search_text.analysis_of("cs", "simple") == "stop words"
    assert search_text.analysis_of("sk", "simple") == "lemmatised"  # the other languages as shipped
