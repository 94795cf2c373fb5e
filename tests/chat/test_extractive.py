"""Tests for chat.extractive (pure Python; no Django, no database)."""
from __future__ import annotations

import inspect

import pytest

from chat.citations import parse_answer
from chat.extractive import (
    MESSAGES,
    NO_LLM_NOTE,
    NOTHING_FOUND,
    extractive_answer,
    split_sentences,
)
from chat.prompts import TaggedSegment, tag_segments
from documents.language.detection import answer_language, words


def doc(i: int, text: str) -> dict:
    return {
        "chunk_id": 100 + i,
        "qa_id": None,
        "source_type": "document",
        "document_id": 1,
        "document_name": "Bridges.pdf",
        "chunk_index": i,
        "page_number": i + 1,
        "heading_path": [],
        "start_offset": 0,
        "end_offset": len(text),
        "excerpt": text,
        "score": 1.0,
        "distance": 0.1,
        "tier": 2,
    }


def qa(i: int, question: str, answer: str) -> dict:
    return {
        "chunk_id": None,
        "qa_id": i,
        "source_type": "qa",
        "document_id": None,
        "document_name": None,
        "chunk_index": None,
        "page_number": None,
        "heading_path": [],
        "start_offset": None,
        "end_offset": None,
        "excerpt": f"Q: {question}\nA: {answer}",
        "score": 1.0,
        "distance": None,
        "tier": 1,
    }


BRIDGE_SEGMENTS = [
    doc(0, "The city lies on a wide river. Its old town is famous for markets. Trams run every ten minutes."),
    doc(
        1,
        "The harbour was built in 1890. Dr. Novak designed several structures, e.g. the lighthouse. "
        "The bridge was opened in 1932. It carries four lanes of traffic.",
    ),
    doc(2, "Tourists enjoy the view from the hills. Many cafés stay open late."),
]


def parsed_for(answer: str, tagged) -> "object":
    return parse_answer(answer, {t.tag: t.segment for t in tagged})


def test_picks_the_sentence_with_the_answer_words():
    tagged = tag_segments(BRIDGE_SEGMENTS)
    answer = extractive_answer("When was the bridge opened?", tagged)
    parsed = parsed_for(answer, tagged)
    assert parsed.sections[0]["text"] == NO_LLM_NOTE
    first_cited = parsed.sections[1]
    assert first_cited["text"].startswith("The bridge was opened in 1932.")
    assert first_cited["source_ids"] == ["S2"]
    assert "markets" not in answer and "cafés" not in answer  # unrelated passages left out


def test_every_non_note_section_cites_a_valid_tag():
    tagged = tag_segments(BRIDGE_SEGMENTS + [qa(9, "Who built the bridge?", "The city council built the bridge.")])
    answer = extractive_answer("Who built the bridge and when was it opened?", tagged)
    parsed = parsed_for(answer, tagged)
    assert parsed.invalid_citations == 0
    assert parsed.sections[0] == {"text": NO_LLM_NOTE, "source_ids": [], "citations": []}
    assert len(parsed.sections) >= 3
    for section in parsed.sections[1:]:
        assert len(section["source_ids"]) == 1
        assert section["source_ids"][0] in {t.tag for t in tagged}
        assert section["text"].endswith(f"[{section['source_ids'][0]}]")


def test_no_segments_message():
    assert extractive_answer("Anything?", []) == NOTHING_FOUND
    assert NOTHING_FOUND == "I could not find anything about this in your documents."


def test_qa_answer_comes_first_whole():
    segs = BRIDGE_SEGMENTS + [qa(7, "When did the bridge open?", "It opened on 5 May 1932.\n\nThe mayor cut the ribbon.")]
    tagged = tag_segments(segs)  # the Q&A is ranked last (S4)
    answer = extractive_answer("When was the bridge opened?", tagged)
    parsed = parsed_for(answer, tagged)
    assert parsed.sections[1]["source_ids"] == ["S4"]
    assert parsed.sections[1]["text"] == "It opened on 5 May 1932.\nThe mayor cut the ribbon. [S4]"
    assert parsed.sections[2]["source_ids"] == ["S2"]


def test_qa_answer_given_as_keys():
    seg = {"qa_id": 1, "chunk_id": None, "source_type": "qa", "question": "Opening hours?", "answer": "Nine to five."}
    answer = extractive_answer("What are the opening hours?", tag_segments([seg]))
    assert answer.split("\n\n")[1] == "Nine to five. [S1]"


def test_max_sentences_respected():
    text = " ".join(f"Bridge fact number {i} about the bridge." for i in range(10))
    tagged = tag_segments([doc(0, text)])
    answer = extractive_answer("bridge", tagged, max_sentences=2)
    body = answer.split("\n\n", 1)[1]
    assert body.count("Bridge fact") == 2
    assert parsed_for(answer, tagged).sections[1]["source_ids"] == ["S1"]


def test_sentences_from_one_passage_are_grouped_in_passage_order():
    text = "The bridge is long. Birds sing. The bridge was opened in 1932. The bridge is red."
    tagged = tag_segments([doc(0, text)])
    answer = extractive_answer("When was the bridge opened?", tagged, max_sentences=3)
    paragraphs = answer.split("\n\n")
    assert len(paragraphs) == 2
    assert paragraphs[1] == "The bridge is long. \u2026 The bridge was opened in 1932. The bridge is red. [S1]"


def test_ties_broken_by_passage_rank():
    same = "The ferry leaves at noon."
    tagged = tag_segments([doc(0, "Nothing here. " + same), doc(1, same)])
    answer = extractive_answer("When does the ferry leave?", tagged, max_sentences=1)
    assert answer.endswith(f"{same} [S1]")


def test_fallback_to_passage_openings_when_no_words_match():
    tagged = tag_segments([doc(0, "Die Brücke wurde 1932 eröffnet. Sie ist rot.")])
    answer = extractive_answer("When was the bridge opened?", tagged)
    parsed = parsed_for(answer, tagged)
    assert parsed.sections[1]["text"] == "Die Brücke wurde 1932 eröffnet. [S1]"


def test_injected_tags_in_passages_do_not_become_citations():
    tagged = tag_segments([doc(0, "The bridge was opened in 1932 [S9]. Ignore this [S1] marker.")])
    answer = extractive_answer("When was the bridge opened?", tagged)
    parsed = parsed_for(answer, tagged)
    assert parsed.invalid_citations == 0
    assert "[S9]" not in answer and "(S9)" in answer
    assert all(s["source_ids"] in ([], ["S1"]) for s in parsed.sections)


def test_code_fences_in_passages_cannot_swallow_later_sections():
    tagged = tag_segments([doc(0, "```\nThe bridge was opened in 1932.\n"), doc(1, "The bridge is red.")])
    answer = extractive_answer("When was the bridge opened? Is it red?", tagged)
    parsed = parsed_for(answer, tagged)
    assert [s["source_ids"] for s in parsed.sections] == [[], ["S1"], ["S2"]]
    assert "```" not in answer


def test_takes_one_input_the_tagged_segments_and_cites_their_tags():
    q = "When was the bridge opened?"
    with_tags = [TaggedSegment(f"S{n}", s) for n, s in zip((5, 6, 7), BRIDGE_SEGMENTS)]
    assert extractive_answer(q, with_tags).endswith("The bridge was opened in 1932. [S6]")
    assert extractive_answer(q, tag_segments(BRIDGE_SEGMENTS)).endswith("The bridge was opened in 1932. [S2]")
    assert "tags" not in inspect.signature(extractive_answer).parameters  # no second way to say the tags


def test_language_of_note():
    tagged = tag_segments([doc(0, "Die Brücke wurde 1932 eröffnet.")])
    assert extractive_answer("Wann wurde die Brücke eröffnet?", tagged).startswith(MESSAGES["de"][0])
    assert extractive_answer("x", tagged, language_hint="cs-CZ").startswith(MESSAGES["cs"][0])
    assert extractive_answer("Когда открыли мост?", []) == MESSAGES["ru"][1]
    assert answer_language("When was the bridge opened?") == "en"
    assert answer_language("¿Cuándo se abrió el puente?") == "es"
    assert answer_language("Quand le pont a-t-il été ouvert ?") == "fr"
    assert answer_language("Kdy byl most otevřen?") == "cs"


def test_german_answer_found_with_inflected_words():
    tagged = tag_segments([doc(0, "Das Rathaus hat montags geschlossen. Die Brücke wurde im Jahr 1932 eröffnet.")])
    answer = extractive_answer("Wann wurde die Brücke eröffnet?", tagged, max_sentences=1)
    assert answer.endswith("Die Brücke wurde im Jahr 1932 eröffnet. [S1]")


def test_words_are_unicode_aware():
    assert words("Über-Brücke, мост! 橋") == ["über", "brücke", "мост", "橋"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("First one. Second one! Third one? Fourth…", ["First one.", "Second one!", "Third one?", "Fourth…"]),
        ("Dr. Smith met Mr. Jones. They talked.", ["Dr. Smith met Mr. Jones.", "They talked."]),
        ("Use tools, e.g. hammers. And i.e. nails.", ["Use tools, e.g. hammers.", "And i.e. nails."]),
        ("The value is 3.5 metres. Next.", ["The value is 3.5 metres.", "Next."]),
        ("It was approx. three hours. Done.", ["It was approx. three hours.", "Done."]),
        ("J. R. Tolkien wrote it. Yes.", ["J. R. Tolkien wrote it.", "Yes."]),
        ("橋は1932年に開通した。長さは1キロです。", ["橋は1932年に開通した。", "長さは1キロです。"]),
        ("هل الجسر مفتوح؟ نعم.", ["هل الجسر مفتوح؟", "نعم."]),
        ("Wait... what? Really.", ["Wait... what?", "Really."]),
        ("Heading\nThe first line. Second.", ["Heading", "The first line.", "Second."]),
        ("A line that wraps\nin the middle. Next.", ["A line that wraps in the middle.", "Next."]),
        ("- item one\n- item two", ["item one", "item two"]),
        ("Steps follow. 1. Open the box. 2. Remove it.", ["Steps follow.", "1. Open the box.", "2. Remove it."]),
        ("He said \"Stop.\" Then left.", ["He said \"Stop.\"", "Then left."]),
        ("z.B. ein Beispiel. Das Ende.", ["z.B. ein Beispiel.", "Das Ende."]),
        ("Мост открыт в 1932 г. и работает. Конец.", ["Мост открыт в 1932 г. и работает.", "Конец."]),
        ("", []),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected
