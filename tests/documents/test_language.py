"""Which language a question is in: measured on XQuAD's questions, and the short cases."""
from __future__ import annotations

import json

import pytest

from documents.language import detect_question_language


@pytest.mark.parametrize("language", ["en", "de", "es"])
def test_xquad_questions_are_told_apart_and_never_mistaken(sample_data, language):
    questions = json.loads((sample_data / "xquad" / f"questions.{language}.json").read_text(encoding="utf-8"))
    assert len(questions) == 1190
    found = [detect_question_language(q) for q in questions]
    wrong = [(q, f) for q, f in zip(questions, found) if f not in ("", language)]
    assert wrong == []
    assert found.count(language) / len(questions) >= 0.99


@pytest.mark.parametrize("question, language", [
    ("What was the bridge made of?", "en"),
    ("Was wurde in Teslas Firma produziert?", "de"),  # "was" is English too
    ("In welchem Jahr starb Tesla?", "de"),  # "in" is English too
    ("¿Cuándo se abrió el puente?", "es"),
    ("Когда построили мост?", "ru"),
    ("Tesla 1943", ""),  # no telling: every language's documents are searched by full text
    ("", ""),
])
def test_short_questions(question, language):
    assert detect_question_language(question) == language
