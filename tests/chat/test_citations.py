"""Tests for chat.citations (pure Python; no Django, no database)."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from chat.citations import (
    TAG_GROUP_RE,
    ParsedAnswer,
    make_citation,
    normalize_tag,
    parse_answer,
    parse_any,
    parse_json_answer,
    snippet_preview,
    strip_citation_tags,
)

TAG_MAP = {
    "S1": {
        "chunk_id": 11,
        "qa_id": None,
        "source_type": "document",
        "document_id": 3,
        "document_name": "Handbook.pdf",
        "document_version": 2,
        "chunk_index": 4,
        "page_number": 7,
        "heading_path": ["Safety", "Ladders"],
        "start_offset": 1200,
        "end_offset": 1850,
        "excerpt": "Ladders must be inspected before each use. " * 10,
        "score": 0.9,
        "distance": 0.1,
        "tier": 2,
    },
    "S2": {
        "chunk_id": 12,
        "qa_id": None,
        "source_type": "document",
        "document_id": 5,
        "document_name": "Руководство.docx",
        "chunk_index": 0,
        "page_number": None,
        "heading_path": [],
        "start_offset": 0,
        "end_offset": 90,
        "excerpt": "Лестницы проверяют перед каждым использованием.",
        "score": 0.8,
        "distance": 0.2,
        "tier": 2,
    },
    "S3": {
        "chunk_id": None,
        "qa_id": 42,
        "source_type": "qa",
        "document_id": None,
        "document_name": None,
        "chunk_index": None,
        "page_number": None,
        "heading_path": [],
        "start_offset": None,
        "end_offset": None,
        "excerpt": "Q: Who inspects ladders?\nA: The site supervisor.",
        "score": 1.0,
        "distance": None,
        "tier": 1,
    },
}


def ids(parsed: ParsedAnswer) -> list[list[str]]:
    return [s["source_ids"] for s in parsed.sections]


# --- validation ---------------------------------------------------------------------------


def test_made_up_tag_dropped_and_counted_real_tags_become_citations():
    parsed = parse_answer("Inspect ladders before use [S1][S9].\n\nThe supervisor does it [S3] [S12].", TAG_MAP)
    assert parsed.invalid_citations == 2
    assert parsed.invalid_tags == ["S9", "S12"]
    assert [c["source_id"] for c in parsed.citations] == ["S1", "S3"]
    c1 = parsed.citations[0]
    assert c1 == {
        "source_id": "S1",
        "source_type": "document",
        "chunk_id": 11,
        "qa_id": None,
        "document_id": 3,
        "document_name": "Handbook.pdf",
        "document_version": 2,  # the version quoted: the viewer opens that version's text
        "chunk_index": 4,
        "page_number": 7,
        "page_label": None,  # no printed label known: the page number stands
        "heading_path": ["Safety", "Ladders"],
        "start_offset": 1200,
        "end_offset": 1850,
        "snippet_preview": snippet_preview(TAG_MAP["S1"]["excerpt"]),
    }
    c3 = parsed.citations[1]
    assert (c3["source_type"], c3["qa_id"], c3["chunk_id"]) == ("qa", 42, None)
    assert c3["snippet_preview"] == "Q: Who inspects ladders? A: The site supervisor."
    assert "S9" not in parsed.content and "S12" not in parsed.content


def test_invalid_tags_removed_from_text_without_dangling_space():
    parsed = parse_answer(
        "Foo [S9].\n\n[S9] Bar starts here.\n\nMixed [S1, S9] stays.\n\nGlued[S9]word and a [S7] b.", TAG_MAP
    )
    assert [s["text"] for s in parsed.sections] == [
        "Foo.",
        "Bar starts here.",
        "Mixed [S1] stays.",
        "Glued word and a b.",
    ]
    assert parsed.invalid_citations == 5
    assert parsed.invalid_tags == ["S9", "S7"]


def test_removing_invalid_tag_between_cjk_characters_adds_no_space():
    parsed = parse_answer("梯子[S9]は点検します[S1]。", TAG_MAP)
    assert parsed.sections[0]["text"] == "梯子は点検します[S1]。"


def test_section_with_only_invalid_tag_disappears():
    parsed = parse_answer("Real [S1].\n\n[S99]", TAG_MAP)
    assert [s["text"] for s in parsed.sections] == ["Real [S1]."]
    assert parsed.invalid_citations == 1


def test_repeated_invalid_tag_counts_every_occurrence():
    parsed = parse_answer("a [S9] b [S9] c [s9]", TAG_MAP)
    assert parsed.invalid_citations == 3 and parsed.invalid_tags == ["S9"]
    assert parsed.citations == []


# --- sections -----------------------------------------------------------------------------


def test_sections_split_by_paragraphs_with_own_sources():
    text = "First paragraph [S1].\n\n\nSecond paragraph [S2][S1].\n  \nThird without source."
    parsed = parse_answer(text, TAG_MAP)
    assert [s["text"] for s in parsed.sections] == [
        "First paragraph [S1].",
        "Second paragraph [S2][S1].",
        "Third without source.",
    ]
    assert ids(parsed) == [["S1"], ["S2", "S1"], []]
    assert [c["source_id"] for c in parsed.sections[1]["citations"]] == ["S2", "S1"]
    assert [c["source_id"] for c in parsed.citations] == ["S1", "S2"]  # first appearance, unique
    assert parsed.content == "First paragraph [S1].\n\nSecond paragraph [S2][S1].\n\nThird without source."


def test_single_newline_does_not_split_section():
    parsed = parse_answer("Line one [S1]\nline two [S2]", TAG_MAP)
    assert len(parsed.sections) == 1 and ids(parsed) == [["S1", "S2"]]


def test_code_fence_is_one_section_and_its_content_untouched():
    text = "Run this [S1]:\n\n```python\nx = data[S9]\n\nprint(x)  # [S2]\n```\n\nDone [S2]."
    parsed = parse_answer(text, TAG_MAP)
    assert len(parsed.sections) == 3
    assert parsed.sections[1]["text"] == "```python\nx = data[S9]\n\nprint(x)  # [S2]\n```"
    assert parsed.sections[1]["source_ids"] == []
    assert parsed.invalid_citations == 0
    assert ids(parsed) == [["S1"], [], ["S2"]]


def test_inline_code_not_parsed():
    parsed = parse_answer("Use `items[S9]` here [S1].", TAG_MAP)
    assert parsed.sections[0]["text"] == "Use `items[S9]` here [S1]."
    assert parsed.invalid_citations == 0


def test_loose_markdown_list_stays_one_section():
    text = "Steps:\n\n- Inspect the ladder [S1]\n\n- Ask the supervisor [S3]\n\n  continued detail\n\n1. numbered [S2]\n\nAfter the list."
    parsed = parse_answer(text, TAG_MAP)
    assert [s["text"].split("\n")[0] for s in parsed.sections] == ["Steps:", "- Inspect the ladder [S1]", "After the list."]
    assert ids(parsed) == [[], ["S1", "S3", "S2"], []]


def test_citation_only_paragraph_attaches_to_previous_section():
    parsed = parse_answer("The answer is yes.\n\n[S1][S2]\n\nAnother point.\n\nSources: [S3], [S8]", TAG_MAP)
    assert [s["text"] for s in parsed.sections] == ["The answer is yes. [S1][S2]", "Another point. [S3]"]
    assert ids(parsed) == [["S1", "S2"], ["S3"]]
    assert parsed.invalid_citations == 1


def test_empty_answer():
    parsed = parse_answer("   \n\n  ", TAG_MAP)
    assert parsed.sections == [] and parsed.citations == [] and parsed.content == ""


# --- syntaxes ----------------------------------------------------------------------------


def test_multiple_tag_syntaxes_are_canonicalised():
    cases = {
        "A [S1, S2].": ("A [S1][S2].", ["S1", "S2"]),
        "A [S1][S2].": ("A [S1][S2].", ["S1", "S2"]),
        "A [s1].": ("A [S1].", ["S1"]),
        "A [S01].": ("A [S1].", ["S1"]),
        "A 【S2】.": ("A [S2].", ["S2"]),
        "A ［S3］.": ("A [S3].", ["S3"]),
        "A [S1; S3].": ("A [S1][S3].", ["S1", "S3"]),
        "A [S1 and S2].": ("A [S1][S2].", ["S1", "S2"]),
        "A [Source: S2].": ("A [S2].", ["S2"]),
        "A [Source 3].": ("A [S3].", ["S3"]),
        "A [ S1 ].": ("A [S1].", ["S1"]),
        "A [S1-S3].": ("A [S1][S2][S3].", ["S1", "S2", "S3"]),
        "A [S1–S2].": ("A [S1][S2].", ["S1", "S2"]),
        "A [S1, S1].": ("A [S1].", ["S1"]),
    }
    for raw, (text, source_ids) in cases.items():
        parsed = parse_answer(raw, TAG_MAP)
        assert parsed.sections[0]["text"] == text, raw
        assert parsed.sections[0]["source_ids"] == source_ids, raw
        assert parsed.invalid_citations == 0, raw


def test_ambiguous_forms_are_not_citations():
    text = "Class (S1) steel, footnote [1], array [x], the S1 model and S1."
    parsed = parse_answer(text, TAG_MAP)
    assert parsed.sections[0]["text"] == text
    assert parsed.citations == [] and parsed.invalid_citations == 0


def test_unicode_answers():
    text = "Лестницы проверяют перед использованием [S2].\n\n梯子は使用前に点検します【S1】。\n\nÜberprüfung durch den Vorgesetzten [S3] — ✅"
    parsed = parse_answer(text, TAG_MAP)
    assert ids(parsed) == [["S2"], ["S1"], ["S3"]]
    assert parsed.sections[1]["text"] == "梯子は使用前に点検します[S1]。"
    assert parsed.sections[2]["text"].endswith("— ✅")
    assert parsed.citations[0]["document_name"] == "Руководство.docx"


def test_crlf_line_endings():
    parsed = parse_answer("One [S1].\r\n\r\nTwo [S2].", TAG_MAP)
    assert ids(parsed) == [["S1"], ["S2"]]


def test_tag_map_keys_normalised():
    parsed = parse_answer("x [S1]", {"s1": TAG_MAP["S1"]})
    assert ids(parsed) == [["S1"]]


def test_normalize_tag():
    assert normalize_tag("S1") == "S1"
    assert normalize_tag("s07") == "S7"
    assert normalize_tag("[S2]") == "S2"
    assert normalize_tag("3") == "S3"
    assert normalize_tag(4) == "S4"
    assert normalize_tag(True) is None
    assert normalize_tag("foo") is None
    assert normalize_tag(None) is None


def test_snippet_preview_cuts_at_word_boundary():
    text = "word " * 100
    preview = snippet_preview(text)
    assert preview.endswith("\u2026") and len(preview) <= 201
    assert preview[:-1].split(" ")[-1] == "word"
    assert snippet_preview("short  text\nhere") == "short text here"


def test_make_citation_builds_qa_excerpt_from_question_answer_keys():
    c = make_citation("S4", {"qa_id": 9, "question": "Why?", "answer": "Because."})
    assert c["source_type"] == "qa" and c["qa_id"] == 9
    assert c["snippet_preview"] == "Q: Why? A: Because."
    assert c["heading_path"] == []


def test_strip_citation_tags():
    assert strip_citation_tags("Yes [S1][S2]. No [S3, S4] more.") == "Yes. No more."


# --- JSON --------------------------------------------------------------------------------


def test_json_plain():
    raw = '{"sections": [{"text": "Inspect first.", "source_ids": ["S1"]}, {"text": "Supervisor.", "source_ids": ["S3", "S2"]}]}'
    parsed = parse_json_answer(raw, TAG_MAP)
    assert parsed is not None and parsed.format == "json"
    assert [s["text"] for s in parsed.sections] == ["Inspect first.", "Supervisor."]
    assert ids(parsed) == [["S1"], ["S3", "S2"]]
    assert [c["source_id"] for c in parsed.citations] == ["S1", "S3", "S2"]
    assert parsed.citations[0]["page_number"] == 7
    assert parsed.content == "Inspect first.\n\nSupervisor."


def test_json_in_code_fence_with_prose_and_trailing_commas():
    raw = 'Here you go:\n```json\n{"sections": [\n  {"text": "A", "source_ids": ["S1",],},\n],}\n```\nHope that helps!'
    parsed = parse_json_answer(raw, TAG_MAP)
    assert parsed is not None and ids(parsed) == [["S1"]]


def test_json_with_leading_and_trailing_prose_without_fence():
    raw = 'Sure. {"sections": [{"text": "B {braces} inside", "source_ids": ["S2"]}]} -- end'
    parsed = parse_json_answer(raw, TAG_MAP)
    assert parsed is not None
    assert parsed.sections[0]["text"] == "B {braces} inside"


def test_json_with_trailing_commas_and_prose_containing_apostrophe():
    raw = 'Answer: {"sections": [{"text": "C", "source_ids": ["S3"],}]} That\'s all, it\'s done.'
    parsed = parse_json_answer(raw, TAG_MAP)
    assert parsed is not None and ids(parsed) == [["S3"]]


def test_json_single_quotes():
    raw = "{'sections': [{'text': 'Simple answer', 'source_ids': ['S1']}]}"
    parsed = parse_json_answer(raw, TAG_MAP)
    assert parsed is not None and ids(parsed) == [["S1"]]
    raw2 = "{'sections': [{'text': \"It's fine\", 'source_ids': ['S2']}]}"
    parsed2 = parse_json_answer(raw2, TAG_MAP)
    assert parsed2 is not None and parsed2.sections[0]["text"] == "It's fine"


def test_json_source_id_variants():
    variants = [["S1", "S2"], ["1", "2"], [1, 2], "S1, S2", "1 2", ["[S1]", "s2"], ["S1, S2"]]
    for v in variants:
        import json

        raw = json.dumps({"sections": [{"text": "x", "source_ids": v}]})
        parsed = parse_json_answer(raw, TAG_MAP)
        assert parsed is not None, v
        assert ids(parsed) == [["S1", "S2"]], v
        assert parsed.invalid_citations == 0, v


def test_json_invalid_ids_dropped_and_counted():
    raw = '{"sections": [{"text": "x", "source_ids": ["S1", "S9", "banana", 12]}]}'
    parsed = parse_json_answer(raw, TAG_MAP)
    assert ids(parsed) == [["S1"]]
    assert parsed.invalid_citations == 3
    assert parsed.invalid_tags == ["S9", "banana", "S12"]


def test_json_inline_tags_in_text_are_validated_and_merged():
    raw = '{"sections": [{"text": "Yes [S2] and [S9].", "source_ids": ["S1"]}]}'
    parsed = parse_json_answer(raw, TAG_MAP)
    assert parsed.sections[0]["text"] == "Yes [S2] and."
    assert ids(parsed) == [["S1", "S2"]]
    assert parsed.invalid_citations == 1


def test_json_truncated_tail_is_repaired():
    raw = '{"sections": [{"text": "Complete.", "source_ids": ["S1"]}, {"text": "Cut off mid'
    parsed = parse_json_answer(raw, TAG_MAP)
    assert parsed is not None
    assert [s["text"] for s in parsed.sections] == ["Complete.", "Cut off mid"]


def test_json_other_shapes():
    parsed = parse_json_answer('[{"text": "list form", "source_ids": ["S1"]}]', TAG_MAP)
    assert parsed is not None and ids(parsed) == [["S1"]]
    parsed = parse_json_answer('{"answer": "flat form", "source_ids": "S3"}', TAG_MAP)
    assert parsed is not None and ids(parsed) == [["S3"]]
    parsed = parse_json_answer('{"sections": ["bare string"]}', TAG_MAP)
    assert parsed is not None and parsed.sections[0]["text"] == "bare string"


def test_json_returns_none_when_unusable():
    assert parse_json_answer("Just prose, no JSON at all [S1].", TAG_MAP) is None
    assert parse_json_answer("", TAG_MAP) is None
    assert parse_json_answer('{"foo": 1}', TAG_MAP) is None
    assert parse_json_answer('{"sections": []}', TAG_MAP) is None
    assert parse_json_answer('{"sections": [{"text": "", "source_ids": ["S1"]}]}', TAG_MAP) is None
    assert parse_json_answer("{" * 5000, TAG_MAP) is None


def test_parse_any_prefers_json_and_falls_back_to_text():
    raw_json = '{"sections": [{"text": "J", "source_ids": ["S1"]}]}'
    assert parse_any(raw_json, TAG_MAP, json_mode=True).format == "json"
    fallback = parse_any("Plain answer [S2].", TAG_MAP, json_mode=True)
    assert fallback.format == "text" and ids(fallback) == [["S2"]]
    text_mode = parse_any("Plain [S1][S9].", TAG_MAP, json_mode=False)
    assert text_mode.format == "text" and text_mode.invalid_citations == 1


def test_to_dict_is_json_serialisable():
    import json

    parsed = parse_answer("x [S1]", TAG_MAP)
    data = json.loads(json.dumps(parsed.to_dict()))
    assert data["citations"][0]["source_id"] == "S1"


# --- properties -------------------------------------------------------------------------

_pieces = st.sampled_from(
    ["word", " ", "\n", "\n\n", ".", "[S1]", "[S2]", "[S9]", "[s3]", "【S4】", "[S1, S9]", "- ", "(S2)", "[1]", "é", "梯"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_pieces, max_size=40))
def test_property_only_valid_tags_survive(pieces):
    text = "".join(pieces)
    tag_map = {"S1": TAG_MAP["S1"], "S2": TAG_MAP["S2"], "S3": TAG_MAP["S3"]}
    parsed = parse_answer(text, tag_map)
    remaining = {g for g in TAG_GROUP_RE.findall(parsed.content)}
    assert all(re.fullmatch(r"\[S[123]\]", g) for g in remaining), remaining
    assert {c["source_id"] for c in parsed.citations} <= set(tag_map)
    for section in parsed.sections:
        in_text = re.findall(r"\[(S\d+)\]", section["text"])
        assert section["source_ids"] == list(dict.fromkeys(in_text))
    # each invalid occurrence was counted
    expected_invalid = text.count("[S9]") + text.count("[S1, S9]") + text.count("【S4】")
    assert parsed.invalid_citations == expected_invalid


def test_a_citation_previews_the_sentences_its_claim_matches_not_the_passages_opening():
    from chat.citations import best_sentences, parse_answer

    passage = ("Chapter 2. Travel. Employees travel by train where they can. A trip over 18 hours earns a meal "
               "allowance of 353 CZK a day. The allowance is paid with the salary.\nChapter 3. Leave.")
    assert best_sentences(passage, "Cesta delší než 18 hodin: stravné 353 CZK denně.").startswith(
        "A trip over 18 hours earns a meal allowance of 353 CZK a day.")
    assert best_sentences(passage, "Nothing in common here.") == ""
    parsed = parse_answer("A trip over 18 hours earns 353 CZK a day [S1].",
                          {"S1": {"excerpt": passage, "document_id": 1, "page_number": 3, "page_label": "3"}})
    citation = parsed.citations[0]
    assert citation["match_preview"].startswith("A trip over 18 hours earns a meal allowance of 353 CZK a day.")
    assert citation["snippet_preview"].startswith("Chapter 2.")  # the passage's opening stays for the sources panel
