"""The development sets in `bench/sets/` (issues #30 and #31) as dataclasses, with their checks.

Django-free, standard library only: the evaluation commands and the schema test both read the sets
through `load_approved_qa()`, `load_czech_retrieval()`, `load_czech_articles()` and `load_dialogues()`, and `validate_*()`
returns the list of problems found (empty when the set is sound). See `bench/sets/README.md`.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

SETS_DIR = Path(__file__).resolve().parent / "sets"
ARTICLES_DIR = SETS_DIR / "czech_articles" / "articles"

LANGUAGES = ("cs", "en", "de", "ru")
QUESTION_KINDS = ("paraphrase", "cross_language", "near_miss", "number_variant", "negation_variant", "unrelated")
#: Kinds whose question asks what a pair answers (pair_id set); the other kinds never have one.
KINDS_WITH_PAIR = ("paraphrase", "cross_language")
#: Kinds whose note must name the closest pair (by its id).
KINDS_NAMING_PAIR = ("near_miss", "number_variant", "negation_variant")
#: How a czech_articles question was written from its sentence (bench/sets/czech_articles/README.md).
ARTICLE_QUESTION_KINDS = ("forms", "paraphrase", "no_diacritics")
CZECH_DIACRITICS = frozenset("áčďéěíňóřšťúůýž")


class SetFormatError(ValueError):
    """A set file that cannot be read as the documented JSONL (the message names file and line)."""


@dataclass(frozen=True)
class QAPair:
    id: str
    lang: str
    category: str
    subcategory: str
    question: str
    answer: str


@dataclass(frozen=True)
class QAQuestion:
    id: str
    lang: str
    question: str
    kind: str
    pair_id: str | None
    note: str


@dataclass(frozen=True)
class ApprovedQASet:
    pairs: list[QAPair]
    questions: list[QAQuestion]


@dataclass(frozen=True)
class Passage:
    id: str
    doc: str
    title: str
    text: str


@dataclass(frozen=True)
class RetrievalQuestion:
    id: str
    question: str
    gold: list[str]
    gold_documents: list[str]
    note: str


@dataclass(frozen=True)
class RetrievalSet:
    passages: list[Passage]
    questions: list[RetrievalQuestion]


@dataclass(frozen=True)
class Article:
    file: str  # "<title>.md": the upload's document title is the title
    title: str
    text: str  # the whole Markdown file


@dataclass(frozen=True)
class ArticleQuestion:
    id: str
    lang: str
    question: str
    gold_documents: list[str]
    evidence: str
    kind: str


@dataclass(frozen=True)
class ArticleSet:
    articles: list[Article]
    questions: list[ArticleQuestion]


@dataclass(frozen=True)
class Turn:
    question: str
    rewrite: str
    standalone: bool
    gold: list[str]


@dataclass(frozen=True)
class Dialogue:
    id: str
    lang: str
    corpus: str
    turns: list[Turn]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file as a dict; blank lines are not allowed (they hide truncation)."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise SetFormatError(f"{path}:{number}: not JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise SetFormatError(f"{path}:{number}: expected an object, got {type(row).__name__}")
            rows.append(row)
    return rows


def _build(cls: type, row: dict[str, Any], path: Path, number: int) -> Any:
    names = {field.name for field in fields(cls)}
    missing, extra = names - set(row), set(row) - names
    if missing or extra:
        raise SetFormatError(f"{path}:{number}: missing {sorted(missing)}, unexpected {sorted(extra)}")
    return cls(**row)


def _load(cls: type, path: Path) -> list[Any]:
    return [_build(cls, row, path, number) for number, row in enumerate(read_jsonl(path), start=1)]


def load_approved_qa(root: Path = SETS_DIR) -> ApprovedQASet:
    """`approved_qa/pairs.jsonl` and `approved_qa/questions.jsonl`."""
    folder = root / "approved_qa"
    return ApprovedQASet(_load(QAPair, folder / "pairs.jsonl"), _load(QAQuestion, folder / "questions.jsonl"))


def load_czech_retrieval(root: Path = SETS_DIR) -> RetrievalSet:
    """`czech_retrieval/passages.jsonl` and `czech_retrieval/questions.jsonl`."""
    folder = root / "czech_retrieval"
    return RetrievalSet(_load(Passage, folder / "passages.jsonl"), _load(RetrievalQuestion, folder / "questions.jsonl"))


def load_czech_articles(root: Path = SETS_DIR) -> ArticleSet:
    """`czech_articles/articles/*.md` (the title is the first line, `# Title`) and `czech_articles/questions.jsonl`."""
    folder = root / "czech_articles"
    articles = []
    for path in sorted((folder / "articles").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        first = text.split("\n", 1)[0]
        articles.append(Article(path.name, first[2:].strip() if first.startswith("# ") else "", text))
    return ArticleSet(articles, _load(ArticleQuestion, folder / "questions.jsonl"))


def load_dialogues(root: Path = SETS_DIR) -> list[Dialogue]:
    """`dialogues/dialogues.jsonl`, each turn a `Turn`."""
    path = root / "dialogues" / "dialogues.jsonl"
    dialogues = []
    for number, row in enumerate(read_jsonl(path), start=1):
        turns = row.get("turns")
        if not isinstance(turns, list):
            raise SetFormatError(f"{path}:{number}: turns must be a list")
        row = {**row, "turns": [_build(Turn, turn, path, number) for turn in turns]}
        dialogues.append(_build(Dialogue, row, path, number))
    return dialogues


def load_dialogue_passages(root: Path = SETS_DIR) -> dict[str, list[Passage]]:
    """The passages dialogues may cite, by corpus name (`czech_retrieval` and any `passages.<lang>.jsonl`)."""
    corpora = {"czech_retrieval": _load(Passage, root / "czech_retrieval" / "passages.jsonl")}
    for path in sorted((root / "dialogues").glob("passages.*.jsonl")):
        corpora[f"dialogues_{path.name.split('.')[1]}"] = _load(Passage, path)
    return corpora


def _duplicates(values: list[str]) -> list[str]:
    return sorted(value for value, count in Counter(values).items() if count > 1)


def _text_problems(where: str, **texts: object) -> list[str]:
    problems = []
    for name, text in texts.items():
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: {name} is empty")
        elif text != text.strip() or "  " in text:
            problems.append(f"{where}: {name} has stray whitespace")
    return problems


def validate_approved_qa(data: ApprovedQASet) -> list[str]:
    """Ids unique, languages and kinds known, pair references resolve, notes name the closest pair."""
    problems = [f"duplicate pair id {i}" for i in _duplicates([p.id for p in data.pairs])]
    problems += [f"duplicate question id {i}" for i in _duplicates([q.id for q in data.questions])]
    problems += [f"duplicate question text {t!r}" for t in _duplicates([q.question.casefold() for q in data.questions])]
    pairs = {p.id: p for p in data.pairs}
    for pair in data.pairs:
        problems += _text_problems(f"pair {pair.id}", question=pair.question, answer=pair.answer,
                                   category=pair.category, subcategory=pair.subcategory)
        if pair.lang not in LANGUAGES:
            problems.append(f"pair {pair.id}: unknown language {pair.lang!r}")
    pair_texts = {p.question.casefold() for p in data.pairs}
    for q in data.questions:
        where = f"question {q.id}"
        problems += _text_problems(where, question=q.question)
        if q.lang not in LANGUAGES:
            problems.append(f"{where}: unknown language {q.lang!r}")
        if q.kind not in QUESTION_KINDS:
            problems.append(f"{where}: unknown kind {q.kind!r}")
            continue
        if q.question.casefold() in pair_texts:
            problems.append(f"{where}: repeats a pair's question word for word")
        if q.kind in KINDS_WITH_PAIR:
            target = pairs.get(q.pair_id or "")
            if target is None:
                problems.append(f"{where}: {q.kind} needs a pair_id that exists, got {q.pair_id!r}")
            elif q.kind == "paraphrase" and target.lang != q.lang:
                problems.append(f"{where}: a paraphrase is in its pair's language ({target.lang})")
            elif q.kind == "cross_language" and target.lang == q.lang:
                problems.append(f"{where}: a cross-language question is not in its pair's language")
        elif q.pair_id is not None:
            problems.append(f"{where}: {q.kind} must have pair_id null")
        if q.kind in KINDS_NAMING_PAIR and not any(word.strip(".,;:()") in pairs for word in q.note.split()):
            problems.append(f"{where}: the note must name the closest pair's id")
    return problems


def approved_qa_counts(data: ApprovedQASet) -> dict[str, dict[str, int]]:
    """Questions per kind and language: {kind: {lang: count, "total": count}}."""
    counts: dict[str, dict[str, int]] = {kind: {lang: 0 for lang in LANGUAGES} | {"total": 0} for kind in QUESTION_KINDS}
    for q in data.questions:
        if q.kind in counts and q.lang in LANGUAGES:
            counts[q.kind][q.lang] += 1
            counts[q.kind]["total"] += 1
    return counts


def _passage_problems(passages: list[Passage], label: str, min_words: int, max_words: int) -> list[str]:
    problems = [f"{label}: duplicate passage id {i}" for i in _duplicates([p.id for p in passages])]
    for p in passages:
        problems += _text_problems(f"{label} passage {p.id}", doc=p.doc, title=p.title, text=p.text)
        words = len(p.text.split())
        if not min_words <= words <= max_words:
            problems.append(f"{label} passage {p.id}: {words} words, expected {min_words}–{max_words}")
    return problems


def validate_czech_retrieval(data: RetrievalSet, *, min_words: int = 60, max_words: int = 200) -> list[str]:
    """Passage ids unique and 60–200 words; every question's gold passages exist and lie in its gold documents."""
    problems = _passage_problems(data.passages, "czech_retrieval", min_words, max_words)
    problems += [f"duplicate question id {i}" for i in _duplicates([q.id for q in data.questions])]
    problems += [f"duplicate question text {t!r}" for t in _duplicates([q.question.casefold() for q in data.questions])]
    doc_of = {p.id: p.doc for p in data.passages}
    titles: dict[str, set[str]] = {}
    for p in data.passages:
        titles.setdefault(p.doc, set()).add(p.title)
    problems += [f"document {doc} has several titles {sorted(t)}" for doc, t in titles.items() if len(t) > 1]
    for q in data.questions:
        where = f"question {q.id}"
        problems += _text_problems(where, question=q.question)
        if not q.gold:
            problems.append(f"{where}: no gold passage")
        unknown = [g for g in q.gold if g not in doc_of]
        if unknown:
            problems.append(f"{where}: unknown gold passages {unknown}")
        expected = sorted({doc_of[g] for g in q.gold if g in doc_of})
        if sorted(q.gold_documents) != expected:
            problems.append(f"{where}: gold_documents {sorted(q.gold_documents)} should be {expected}")
    return problems


def _article_problems(article: Article, min_words: int, max_words: int) -> list[str]:
    where = f"article {article.file}"
    problems = []
    if not article.title or f"{article.title}.md" != article.file:
        problems.append(f"{where}: the first line must be '# <title>' and the file named '<title>.md'")
    sections = article.text.split("\n## ")[1:]
    if len(sections) < 3:
        problems.append(f"{where}: {len(sections)} '## ' sections, expected at least 3")
    if any(not section.split("\n", 1)[-1].strip() for section in sections):
        problems.append(f"{where}: a section has a heading and no paragraph")
    body = [line for line in article.text.splitlines() if line.strip() and not line.startswith("#")]
    words = len(article.text.split())  # as `wc -w` counts: title and section headings included
    if not min_words <= words <= max_words:
        problems.append(f"{where}: {words} words, expected {min_words}–{max_words}")
    if any(line != line.strip() or "  " in line for line in body):
        problems.append(f"{where}: stray whitespace")
    return problems


def validate_czech_articles(data: ArticleSet, *, min_words: int = 300, max_words: int = 600,
                            min_questions: int = 3) -> list[str]:
    """Articles titled, sectioned, 300–600 words (as `wc -w` counts them); each question's gold is one article holding its evidence
    sentence verbatim; kinds known, `no_diacritics` questions without them; ≥ 3 questions per article."""
    problems = [f"duplicate article title {t!r}" for t in _duplicates([a.title.casefold() for a in data.articles])]
    for article in data.articles:
        problems += _article_problems(article, min_words, max_words)
    problems += [f"duplicate question id {i}" for i in _duplicates([q.id for q in data.questions])]
    problems += [f"duplicate question text {t!r}" for t in _duplicates([q.question.casefold() for q in data.questions])]
    texts = {a.file: " ".join(a.text.split()) for a in data.articles}
    asked: Counter[str] = Counter()
    for q in data.questions:
        where = f"question {q.id}"
        problems += _text_problems(where, question=q.question, evidence=q.evidence)
        if q.lang != "cs":
            problems.append(f"{where}: language must be cs, got {q.lang!r}")
        if q.kind not in ARTICLE_QUESTION_KINDS:
            problems.append(f"{where}: unknown kind {q.kind!r}")
        elif q.kind == "no_diacritics" and CZECH_DIACRITICS & set(q.question.casefold()):
            problems.append(f"{where}: a no_diacritics question has diacritics")
        if len(q.gold_documents) != 1 or q.gold_documents[0] not in texts:
            problems.append(f"{where}: gold_documents must name one article file, got {q.gold_documents}")
            continue
        asked[q.gold_documents[0]] += 1
        if isinstance(q.evidence, str) and " ".join(q.evidence.split()) not in texts[q.gold_documents[0]]:
            problems.append(f"{where}: the evidence is not a sentence of {q.gold_documents[0]}")
    problems += [f"article {a.file}: {asked[a.file]} questions, expected at least {min_questions}"
                 for a in data.articles if asked[a.file] < min_questions]
    return problems


def validate_dialogues(dialogues: list[Dialogue], corpora: dict[str, list[Passage]]) -> list[str]:
    """Ids unique, 2–4 turns, corpus known, gold resolves in it; first turns and standalone turns keep their text."""
    problems = [f"duplicate dialogue id {i}" for i in _duplicates([d.id for d in dialogues])]
    for name, passages in corpora.items():
        if name != "czech_retrieval":
            problems += _passage_problems(passages, name, 30, 200)
    ids = {name: {p.id for p in passages} for name, passages in corpora.items()}
    for d in dialogues:
        where = f"dialogue {d.id}"
        if d.lang not in LANGUAGES:
            problems.append(f"{where}: unknown language {d.lang!r}")
        if d.corpus not in ids:
            problems.append(f"{where}: unknown corpus {d.corpus!r}")
        if not 2 <= len(d.turns) <= 4:
            problems.append(f"{where}: {len(d.turns)} turns, expected 2–4")
        for number, turn in enumerate(d.turns, start=1):
            at = f"{where} turn {number}"
            problems += _text_problems(at, question=turn.question, rewrite=turn.rewrite)
            if not isinstance(turn.standalone, bool):
                problems.append(f"{at}: standalone must be true or false")
            if number == 1 and not turn.standalone:
                problems.append(f"{at}: a first turn stands alone")
            if turn.standalone and turn.rewrite != turn.question:
                problems.append(f"{at}: a standalone turn's rewrite is the question unchanged")
            if not turn.standalone and turn.rewrite == turn.question:
                problems.append(f"{at}: a follow-up needs a rewrite that differs from the question")
            if not turn.gold:
                problems.append(f"{at}: no gold passage")
            unknown = [g for g in turn.gold if g not in ids.get(d.corpus, set())]
            if unknown:
                problems.append(f"{at}: unknown gold passages {unknown}")
    return problems


def dialogue_counts(dialogues: list[Dialogue]) -> dict[str, int]:
    """Dialogues, turns after the first, and how many of those stand alone."""
    later = [turn for d in dialogues for turn in d.turns[1:]]
    return {"dialogues": len(dialogues), "later_turns": len(later),
            "later_standalone": sum(turn.standalone for turn in later)}
