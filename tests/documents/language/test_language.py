"""Which language a question is in (py3langid): measured on XQuAD's questions, and the short cases."""
from __future__ import annotations

import json

import pytest

from documents.language.detection import detect_chunk_language, detect_language, detect_question_language


@pytest.mark.parametrize("language", ["en", "de", "es", "zh", "ar", "tr", "ro"])
def test_xquad_questions_are_told_apart_and_rarely_mistaken(sample_data, language):
    # The stop-word vote this replaced knew only en/de/es here (99+ % right, none wrong, the rest
    # undecided). The model knows all seven and errs on a handful of English, German and Turkish
    # questions (Luxembourgish, Pidgin, Latin: bench/language_id.py lists them).
    questions = json.loads((sample_data / "xquad" / f"questions.{language}.json").read_text(encoding="utf-8"))
    assert len(questions) == 1190
    found = [detect_question_language(q) for q in questions]
    wrong = [(q, f) for q, f in zip(questions, found) if f not in ("", language)]
    assert len(wrong) / len(questions) <= 0.006, wrong
    assert found.count(language) / len(questions) >= 0.975


@pytest.mark.parametrize("question, language", [
    ("What was the bridge made of?", "en"),
    ("Was wurde in Teslas Firma produziert?", "de"),  # "was" is English too
    ("In welchem Jahr starb Tesla?", "de"),  # "in" is English too
    ("¿Cuándo se abrió el puente?", "es"),
    ("Когда построили мост?", "ru"),
    ("这座桥是什么时候建造的？", "zh"),
    ("橋はいつ建設されましたか？", "ja"),
    ("สะพานสร้างเมื่อไหร่", "th"),
    ("Kdy byl most postaven?", "cs"),
    ("Cây cầu được xây dựng khi nào?", "vi"),
    ("Tesla 1943", ""),  # no telling: every language's documents are searched by full text
    ("Who?", ""),
    ("", ""),
])
def test_short_questions(question, language):
    assert detect_question_language(question) == language


def test_a_mixed_documents_chunks_keep_their_own_language():
    english = ("The bridge was built in 1890 by the city council, which had argued for years about "
               "whether the river crossing should carry trains as well as carriages and people on foot.")
    german = ("Die Brücke wurde 1890 vom Stadtrat gebaut, der jahrelang darüber gestritten hatte, ob der "
              "Flussübergang neben Kutschen und Fußgängern auch Züge tragen sollte.")
    assert detect_language(english + " " + english) == "en"
    assert detect_chunk_language(german + " " + german, document_language="en") == "de"
    assert detect_chunk_language(english + " " + english, document_language="en") == "en"
    # too short to overrule the document
    assert detect_chunk_language("Die Brücke.", document_language="en") == "en"
