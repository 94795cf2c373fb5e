"""The development sets in bench/sets/ load, hold together and reach their minimum sizes (issues #30, #31).

No database: the sets are files read by bench/setdata.py, which the evaluation commands use too.
"""
from __future__ import annotations

import json

import pytest

from bench import setdata

LANGUAGES = {"cs", "en", "de", "ru"}


def test_approved_qa_set_is_valid_and_big_enough():
    data = setdata.load_approved_qa()
    assert setdata.validate_approved_qa(data) == []
    assert len(data.pairs) >= 60
    by_lang = {lang: sum(p.lang == lang for p in data.pairs) for lang in LANGUAGES}
    assert by_lang["cs"] >= 30 and min(by_lang.values()) > 0, by_lang
    counts = setdata.approved_qa_counts(data)
    minimum = {"paraphrase": 120, "cross_language": 60, "near_miss": 60, "number_variant": 50,
               "negation_variant": 40, "unrelated": 60}
    for kind, least in minimum.items():
        assert counts[kind]["total"] >= least, (kind, counts[kind])
        assert all(counts[kind][lang] > 0 for lang in LANGUAGES), (kind, counts[kind])
    assert len(data.questions) >= 400


def test_approved_qa_pairs_have_close_siblings():
    """Near-misses exist inside the pairs themselves: some subcategories hold more than one pair."""
    data = setdata.load_approved_qa()
    subcategories = [(p.category, p.subcategory) for p in data.pairs]
    siblings = {s for s in subcategories if subcategories.count(s) > 1}
    assert len(siblings) >= 3, siblings


def test_czech_questions_are_written_with_and_without_diacritics():
    data = setdata.load_approved_qa()
    czech = [q.question for q in data.questions if q.lang == "cs"]
    with_marks = [q for q in czech if any(c in q for c in "áčďéěíňóřšťúůýž")]
    assert len(with_marks) > len(czech) // 2
    assert len(czech) - len(with_marks) >= 15


@pytest.mark.parametrize("problem, expected", [
    ({"kind": "paraphrase", "pair_id": "missing"}, "needs a pair_id that exists"),
    ({"kind": "near_miss", "pair_id": None, "note": "no id here"}, "must name the closest pair"),
    ({"kind": "unrelated", "pair_id": "P1"}, "must have pair_id null"),
    ({"kind": "guess", "pair_id": None}, "unknown kind"),
    ({"lang": "fr"}, "unknown language"),
    ({"kind": "cross_language", "pair_id": "P1", "lang": "cs"}, "not in its pair's language"),
    ({"question": "Kolik dní dovolené mám?"}, "repeats a pair's question"),
])
def test_approved_qa_validation_names_each_problem(problem, expected):
    pair = setdata.QAPair("P1", "cs", "leave", "annual", "Kolik dní dovolené mám?", "25 dní.")
    fields = {"id": "Q1", "lang": "cs", "question": "Kolik mám dovolené?", "kind": "paraphrase",
              "pair_id": "P1", "note": ""} | problem
    data = setdata.ApprovedQASet([pair], [setdata.QAQuestion(**fields)])
    problems = setdata.validate_approved_qa(data)
    assert any(expected in p for p in problems), problems


def test_a_broken_line_is_reported_with_its_file_and_line(tmp_path):
    folder = tmp_path / "approved_qa"
    folder.mkdir()
    pair = {"id": "P1", "lang": "cs", "category": "c", "subcategory": "s", "question": "q", "answer": "a"}
    (folder / "pairs.jsonl").write_text(json.dumps(pair) + "\n{not json\n", encoding="utf-8")
    (folder / "questions.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(setdata.SetFormatError, match=r"pairs\.jsonl:2: not JSON"):
        setdata.load_approved_qa(tmp_path)
    (folder / "pairs.jsonl").write_text(json.dumps(pair | {"extra": 1}) + "\n", encoding="utf-8")
    with pytest.raises(setdata.SetFormatError, match=r"pairs\.jsonl:1: .*unexpected \['extra'\]"):
        setdata.load_approved_qa(tmp_path)


def test_czech_retrieval_set_is_valid_and_big_enough():
    data = setdata.load_czech_retrieval()
    assert setdata.validate_czech_retrieval(data) == []
    assert len(data.passages) >= 120 and len(data.questions) >= 200
    documents = {p.doc for p in data.passages}
    assert 10 <= len(documents) <= 14, documents
    assert all(sum(p.doc == doc for p in data.passages) >= 8 for doc in documents)
    assert {d for q in data.questions for d in q.gold_documents} == documents


def test_czech_retrieval_questions_mostly_use_other_word_forms_than_their_passage():
    """Most questions share under half of their words, as typed, with their gold passage."""
    data = setdata.load_czech_retrieval()
    text = {p.id: p.text for p in data.passages}

    def words(s: str) -> set[str]:
        return {w.strip(".,;:?!()„“\"").lower() for w in s.split()} - {""}

    low = [q for q in data.questions
           if len(words(q.question) & words(" ".join(text[g] for g in q.gold))) < len(words(q.question)) / 2]
    assert len(low) > len(data.questions) * 0.6


def test_czech_retrieval_validation_names_each_problem():
    passage = setdata.Passage("d-01", "d", "Dokument", " ".join(["slovo"] * 60))
    short = setdata.Passage("d-02", "d", "Jiný titul", "krátký text")
    questions = [setdata.RetrievalQuestion("Q1", "Otázka?", ["d-09"], ["d"], ""),
                 setdata.RetrievalQuestion("Q2", "Jiná otázka?", ["d-01"], ["x"], "")]
    problems = setdata.validate_czech_retrieval(setdata.RetrievalSet([passage, short], questions))
    for expected in ["d-02: 2 words", "several titles", "unknown gold passages ['d-09']", "gold_documents ['x'] should be ['d']"]:
        assert any(expected in p for p in problems), (expected, problems)


def test_czech_articles_set_is_valid_and_big_enough():
    """SQAD-like: ≥ 80 titled articles over ~10 domains, ≥ 240 questions, each from one sentence of one article."""
    data = setdata.load_czech_articles()
    assert setdata.validate_czech_articles(data) == []
    assert len(data.articles) >= 80 and len(data.questions) >= 240
    kinds = {kind: sum(q.kind == kind for q in data.questions) for kind in setdata.ARTICLE_QUESTION_KINDS}
    assert kinds["forms"] >= 100 and kinds["paraphrase"] >= 80 and kinds["no_diacritics"] >= 20, kinds
    assert {q.gold_documents[0] for q in data.questions} == {a.file for a in data.articles}


def test_czech_articles_validation_names_each_problem():
    body = " ".join(["slovo"] * 100)
    good = setdata.Article("Město.md", "Město", f"# Město\n\n## A\n\n{body}.\n\n## B\n\n{body}.\n\n## C\n\n{body} konec.\n")
    short = setdata.Article("Řeka.md", "Jiná řeka", "# Jiná řeka\n\n## A\n\nKrátký text.\n")
    questions = [
        setdata.ArticleQuestion("Q1", "cs", "Kde to je?", ["Město.md"], "Tato věta v článku není.", "forms"),
        setdata.ArticleQuestion("Q2", "cs", "Kde je město?", ["Hora.md"], "slovo konec.", "forms"),
        setdata.ArticleQuestion("Q3", "cs", "kde je mesto", ["Město.md"], "slovo konec.", "guess"),
        setdata.ArticleQuestion("Q4", "cs", "kde je město", ["Město.md"], "slovo konec.", "no_diacritics"),
    ]
    problems = setdata.validate_czech_articles(setdata.ArticleSet([good, short], questions))
    for expected in ["Řeka.md: the first line must be", "Řeka.md: 1 '## ' sections", "Řeka.md: 7 words",
                     "Q1: the evidence is not a sentence of Město.md", "Q2: gold_documents must name one article",
                     "Q3: unknown kind", "Q4: a no_diacritics question has diacritics",
                     "Řeka.md: 0 questions, expected at least 3"]:
        assert any(expected in p for p in problems), (expected, problems)
    assert not any("article Město.md" in p for p in problems), problems


def test_the_czech_articles_builder_adds_the_czech_retrieval_documents_as_distractors(tmp_path):
    from bench import czech_articles

    summary = czech_articles.build(tmp_path, distractors=True)
    assert summary["articles"] >= 80 and summary["distractors"] == 12
    assert (tmp_path / "Vltava.md").read_text(encoding="utf-8").startswith("# Vltava\n")
    distractor = (tmp_path / "Směrnice o cestovních náhradách.md").read_text(encoding="utf-8")
    assert distractor.startswith("# Směrnice o cestovních náhradách\n\n") and "stravné" in distractor


def test_the_long_document_sets_czech_distractor_holds_every_article_as_a_chapter():
    from bench import long_documents

    booklet = long_documents.czech_articles_document()
    data = setdata.load_czech_articles()
    assert booklet.count("<h1>") == len(data.articles) and "<h1>Vltava</h1>" in booklet
    assert booklet.count("<h2>") == sum(a.text.count("\n## ") for a in data.articles)
    assert "<p>Vltava je nejdelší řeka" in booklet and "#" not in booklet.replace("&#x27;", "")


def test_dialogue_set_is_valid_and_big_enough():
    dialogues = setdata.load_dialogues()
    assert setdata.validate_dialogues(dialogues, setdata.load_dialogue_passages()) == []
    counts = setdata.dialogue_counts(dialogues)
    assert counts["dialogues"] >= 60
    assert counts["later_standalone"] >= 0.3 * counts["later_turns"], counts
    assert counts["later_turns"] - counts["later_standalone"] >= 60, counts
    assert {d.lang for d in dialogues} == LANGUAGES
    for lang in LANGUAGES:
        later = [t for d in dialogues if d.lang == lang for t in d.turns[1:]]
        assert any(t.standalone for t in later) and any(not t.standalone for t in later), lang


def test_dialogue_validation_names_each_problem():
    passages = {"czech_retrieval": [setdata.Passage("d-01", "d", "Dokument", " ".join(["slovo"] * 60))]}
    turn = setdata.Turn("Kolik?", "Kolik?", True, ["d-01"])
    dialogues = [
        setdata.Dialogue("A", "cs", "czech_retrieval", [setdata.Turn("A co dál?", "A co dál?", False, ["d-01"]), turn]),
        setdata.Dialogue("B", "cs", "czech_retrieval", [turn, setdata.Turn("A tam?", "Jiné znění", True, ["d-02"])]),
        setdata.Dialogue("C", "cs", "elsewhere", [turn]),
    ]
    problems = setdata.validate_dialogues(dialogues, passages)
    for expected in ["dialogue A turn 1: a first turn stands alone", "dialogue A turn 1: a follow-up needs a rewrite",
                     "dialogue B turn 2: a standalone turn's rewrite is the question unchanged",
                     "dialogue B turn 2: unknown gold passages ['d-02']", "dialogue C: unknown corpus",
                     "dialogue C: 1 turns"]:
        assert any(expected in p for p in problems), (expected, problems)
