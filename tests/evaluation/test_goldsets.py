"""The shared question-set parser (retrieval.goldsets): every format eval_retrieval and the admin read."""
from __future__ import annotations

import json

import pytest

from retrieval.goldsets import GoldSetError, parse

SQUAD = {"data": [{"title": "Bridges", "paragraphs": [{"context": "The bridge opened in 1932.", "qas": [
    {"id": "q1", "question": "When did the bridge open?", "answers": [{"text": "1932", "answer_start": 21}]}]}]}]}


def test_squad_gold_is_the_article_and_the_answer_text():
    [question] = parse("xquad.en.json", json.dumps(SQUAD).encode())
    assert (question.question, question.external_id, question.kind) == ("When did the bridge open?", "q1", "squad")
    assert question.gold_documents == ["Bridges"] and question.gold_passages == ["1932"]


def test_czech_retrieval_lines_resolve_passage_ids_through_the_passages_file():
    questions = b'{"id": "cq-1", "question": "Kolik je stravne?", "gold": ["cn-02"], "gold_documents": ["cn"]}\n'
    passages = b'{"id": "cn-02", "doc": "cn", "text": "Stravne cini 140 Kc."}\n'
    [question] = parse("questions.jsonl", questions, passages)
    assert question.gold_passages == ["Stravne cini 140 Kc."] and question.gold_documents == ["cn"]
    with pytest.raises(GoldSetError, match="line 1: gold passage 'cn-02' is not in the passages"):
        parse("questions.jsonl", questions)


def test_a_dialogue_becomes_one_question_per_turn_with_the_turns_before_it():
    line = {"id": "dlg-1", "lang": "cs", "turns": [
        {"question": "Kolik je stravne?", "rewrite": "Kolik je stravne?", "standalone": True, "gold_passages": ["a"]},
        {"question": "A v zahranici?", "rewrite": "Kolik je stravne v zahranici?", "standalone": False,
         "gold_passages": ["b"]}]}
    first, second = parse("dialogues.jsonl", json.dumps(line).encode())
    assert (first.kind, second.kind) == ("dialogue: standalone", "dialogue: follow-up")
    assert second.turns == [{"question": "Kolik je stravne?", "rewrite": "Kolik je stravne?"}]
    assert second.external_id == "dlg-1#2" and second.language == "cs"


def test_csv_with_pages_chunks_and_key_facts():
    data = ("question,language,kind,gold_documents,gold_pages,key_facts\n"
            "How long is leave?,en,paraphrase,leave.pdf,leave.pdf#3|rules#4,25 days|full-time\n").encode()
    [question] = parse("set.csv", data)
    assert question.gold_pages == [{"document": "leave.pdf", "page": 3}, {"document": "rules", "page": 4}]
    assert question.key_facts == ["25 days", "full-time"] and question.language == "en"


@pytest.mark.parametrize("name, data, message", [
    ("set.csv", b"text\nhello\n", "line 1: CSV needs a header line with a 'question' column"),
    ("set.csv", b"question,gold_documents\nWhat?,\n", "line 2: the question has no gold"),
    ("set.csv", b"question,gold_pages\nWhat?,doc#zero\n", "line 2: gold page 'doc#zero'"),
    ("set.jsonl", b'{"question": "a", "gold_documents": ["d"]}\n{"question": \n', "line 2: not valid JSON"),
    ("set.json", b'{"something": 1}', "JSON must be SQuAD"),
    ("set.txt", b"question", "use a .csv, .json"),
    ("set.json", b"[]", "holds no questions"),
    ("set.csv", "question,gold_documents\nWhat?,d\n".encode("utf-16"), "not UTF-8"),
])
def test_bad_files_are_refused_whole_with_the_line_and_the_reason(name, data, message):
    with pytest.raises(GoldSetError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse(name, data)
