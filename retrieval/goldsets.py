"""Question sets with gold answers, read from the files `eval_retrieval` and the admin's test sets take
(no Django: a pure parser, shared by both).

Formats (the kind is told by the file name's ending and the JSON's shape):

- SQuAD v1.1 JSON (`{"data": [...]}`, e.g. XQuAD): each question's gold is its article (document, by
  title) and its answer's text (a passage the retrieved chunk must contain).
- JSON (a list of records, or `{"questions": [...], "passages": [...]}`) or JSONL (one record a line):
  `{"id", "question", "lang" | "language", "kind", "gold_documents", "gold_pages", "gold_passages",
  "gold_chunks", "gold_qa", "key_facts"}`. `gold` lists passage ids, resolved to their text through the
  passages (`{"id", "text"}`, in the same JSON or a separate JSONL file), as bench/sets/czech_retrieval
  has them. A record with `turns` is a dialogue (bench/sets/dialogues): every turn becomes a question
  whose `turns` are the turns before it.
- CSV with a header: `question` (required), `id`, `language`, `kind`, `gold_documents`, `gold_pages`
  (`document#page`), `gold_passages`, `gold_chunks`, `key_facts`; several values in one cell are
  separated by `|`.

A document is named by its id (a number), title or file name (with or without the extension). Every
question needs some gold (a document, page, passage, chunk, approved pair or key fact); bad input is
refused whole with the line and the reason (GoldSetError), so nothing is half imported.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import PurePath
from typing import Any

MAX_QUESTIONS = 5000
MAX_QUESTION_CHARS = 2000


class GoldSetError(ValueError):
    """A file that cannot be read as a question set; `line` is the 1-based line or record, when known."""

    def __init__(self, message: str, line: int | None = None):
        self.line = line
        super().__init__(f"line {line}: {message}" if line else message)


@dataclass
class GoldQuestion:
    question: str
    external_id: str = ""
    language: str = ""
    kind: str = ""
    gold_documents: list[str] = field(default_factory=list)
    gold_pages: list[dict[str, Any]] = field(default_factory=list)  # [{"document": "...", "page": 3}]
    gold_passages: list[str] = field(default_factory=list)  # passage texts
    gold_chunk_ids: list[int] = field(default_factory=list)
    gold_qa_ids: list[int] = field(default_factory=list)
    key_facts: list[str] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)  # the dialogue's earlier turns

    def has_gold(self) -> bool:
        return bool(self.gold_documents or self.gold_pages or self.gold_passages or self.gold_chunk_ids
                    or self.gold_qa_ids or self.key_facts)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse(name: str, data: bytes, passages: bytes | None = None) -> list[GoldQuestion]:
    """The questions of the file `name` (its bytes `data`); `passages`: a JSONL file of `{"id", "text"}`."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GoldSetError("the file is not UTF-8 text") from exc
    passage_texts = _passages(passages)
    suffix = PurePath(name).suffix.lower()
    if suffix == ".csv":
        questions = _csv(text)
    elif suffix == ".jsonl":
        questions = [q for number, record in _jsonl(text) for q in _record(record, number, passage_texts)]
    elif suffix == ".json":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GoldSetError(f"not valid JSON ({exc.msg})", exc.lineno) from exc
        questions = _json(document, passage_texts)
    else:
        raise GoldSetError(f"'{name}': use a .csv, .json (SQuAD or a list of questions) or .jsonl file")
    if not questions:
        raise GoldSetError("the file holds no questions")
    if len(questions) > MAX_QUESTIONS:
        raise GoldSetError(f"{len(questions)} questions; at most {MAX_QUESTIONS} in one set")
    return questions


def _passages(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GoldSetError("the passages file is not UTF-8 text") from exc
    found = {}
    for number, record in _jsonl(text, what="passages"):
        if not isinstance(record, dict) or not str(record.get("id", "")).strip() or not record.get("text"):
            raise GoldSetError("passages: every line needs an \"id\" and a \"text\"", number)
        found[str(record["id"]).strip()] = str(record["text"])
    return found


def _jsonl(text: str, *, what: str = "") -> list[tuple[int, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise GoldSetError(f"{what + ': ' if what else ''}not valid JSON ({exc.msg})", number) from exc
    return rows


def _json(document: Any, passage_texts: dict[str, str]) -> list[GoldQuestion]:
    if isinstance(document, dict) and "data" in document:
        return _squad(document["data"])
    if isinstance(document, dict) and "questions" in document:
        for record in document.get("passages") or []:
            if isinstance(record, dict) and record.get("id") is not None and record.get("text"):
                passage_texts.setdefault(str(record["id"]), str(record["text"]))
        document = document["questions"]
    if not isinstance(document, list):
        raise GoldSetError("JSON must be SQuAD ({\"data\": …}), a list of questions or {\"questions\": […]}")
    return [q for number, record in enumerate(document, start=1) for q in _record(record, number, passage_texts)]


def _squad(articles: Any) -> list[GoldQuestion]:
    questions: list[GoldQuestion] = []
    if not isinstance(articles, list):
        raise GoldSetError("SQuAD: \"data\" must be a list of articles")
    for article in articles:
        title = str(article.get("title", "")).strip()
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                answers = [a["text"] for a in qa.get("answers", []) if str(a.get("text", "")).strip()]
                question = GoldQuestion(question=_question_text(qa.get("question"), len(questions) + 1),
                                        external_id=str(qa.get("id", "")), kind="squad",
                                        gold_documents=[title] if title else [], gold_passages=answers[:1])
                if not question.has_gold():
                    raise GoldSetError(f"SQuAD question {qa.get('id', '')!r} has no answer")
                questions.append(question)
    return questions


def _question_text(value: Any, number: int) -> str:
    text = str(value or "").strip()
    if not text:
        raise GoldSetError("the question is empty", number)
    if len(text) > MAX_QUESTION_CHARS:
        raise GoldSetError(f"the question is longer than {MAX_QUESTION_CHARS} characters", number)
    return text


def _strings(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    values = value if isinstance(value, list) else [value]
    return [str(v).strip() for v in values if str(v).strip()]


def _ints(value: Any, what: str, number: int) -> list[int]:
    try:
        return [int(v) for v in _strings(value)]
    except ValueError as exc:
        raise GoldSetError(f"{what} must be numbers", number) from exc


def _pages(value: Any, number: int) -> list[dict[str, Any]]:
    pages = []
    for item in value if isinstance(value, list) else _strings(value):
        raw: Any
        if isinstance(item, dict):
            document, raw = item.get("document"), item.get("page")
        else:
            document, _, raw = str(item).rpartition("#")
        try:
            page = int(raw)
        except (TypeError, ValueError) as exc:
            raise GoldSetError(f"gold page {item!r}: give a document and a page number (document#page)", number) from exc
        if not str(document or "").strip() or page < 1:
            raise GoldSetError(f"gold page {item!r}: give a document and a page number from 1 (document#page)", number)
        pages.append({"document": str(document).strip(), "page": page})
    return pages


def _record(record: Any, number: int, passage_texts: dict[str, str]) -> list[GoldQuestion]:
    if not isinstance(record, dict):
        raise GoldSetError("each question must be a JSON object", number)
    if "turns" in record:
        return _dialogue(record, number, passage_texts)
    gold_passages = _strings(record.get("gold_passages"))
    for passage_id in _strings(record.get("gold")):
        if passage_id not in passage_texts:
            raise GoldSetError(f"gold passage {passage_id!r} is not in the passages (give the passages file "
                               f"with their texts, or put the text in gold_passages)", number)
        gold_passages.append(passage_texts[passage_id])
    qa_ids = record.get("gold_qa", record.get("gold_qa_ids"))
    question = GoldQuestion(
        question=_question_text(record.get("question"), number),
        external_id=str(record.get("id", "") or ""), language=str(record.get("lang") or record.get("language") or ""),
        kind=str(record.get("kind") or ""), gold_documents=_strings(record.get("gold_documents")),
        gold_pages=_pages(record.get("gold_pages"), number), gold_passages=gold_passages,
        gold_chunk_ids=_ints(record.get("gold_chunks", record.get("gold_chunk_ids")), "gold_chunks", number),
        gold_qa_ids=_ints(qa_ids, "gold_qa", number), key_facts=_strings(record.get("key_facts")))
    if not question.has_gold():
        raise GoldSetError("the question has no gold (documents, pages, passages, chunks, pairs or key facts)",
                           number)
    return [question]


def _dialogue(record: dict, number: int, passage_texts: dict[str, str]) -> list[GoldQuestion]:
    turns = record.get("turns")
    if not isinstance(turns, list) or not turns:
        raise GoldSetError("a dialogue's \"turns\" must be a non-empty list", number)
    questions: list[GoldQuestion] = []
    earlier: list[dict[str, Any]] = []
    for position, turn in enumerate(turns, start=1):
        if not isinstance(turn, dict):
            raise GoldSetError(f"turn {position} must be a JSON object", number)
        fields = {**turn, "id": f"{record.get('id', number)}#{position}", "lang": record.get("lang", ""),
                  "kind": turn.get("kind") or ("dialogue: standalone" if turn.get("standalone", position == 1)
                                               else "dialogue: follow-up")}
        fields.pop("turns", None)
        question = _record(fields, number, passage_texts)[0]
        question.turns = list(earlier)
        questions.append(question)
        earlier.append({"question": question.question, "rewrite": str(turn.get("rewrite") or "")})
    return questions


def _csv(text: str) -> list[GoldQuestion]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "question" not in [f.strip() for f in reader.fieldnames]:
        raise GoldSetError("CSV needs a header line with a 'question' column", 1)
    questions = []
    for number, row in enumerate(reader, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items() if isinstance(v, str) or v is None}

        def cells(key: str) -> list[str]:
            return [part.strip() for part in row.get(key, "").split("|") if part.strip()]

        record = {"id": row.get("id", ""), "question": row.get("question", ""),
                  "language": row.get("language") or row.get("lang", ""), "kind": row.get("kind", ""),
                  "gold_documents": cells("gold_documents"), "gold_pages": cells("gold_pages"),
                  "gold_passages": cells("gold_passages"), "gold_chunks": cells("gold_chunks"),
                  "key_facts": cells("key_facts")}
        questions.extend(_record(record, number, {}))
    return questions
