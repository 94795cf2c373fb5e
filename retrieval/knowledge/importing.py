"""Bulk import of approved Q&A pairs from CSV or JSON, with a report of every row accepted or rejected."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

from django.utils import timezone

from retrieval.knowledge.services import knowledge_entries_create_many
from retrieval.models import KnowledgeEntry

FIELDS = ("question", "answer", "category", "subcategory")
REQUIRED = ("question", "answer")
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_ROWS = 20_000
MAX_QUESTION_CHARS = 4_000
MAX_ANSWER_CHARS = 20_000
MAX_LABEL_CHARS = 100  # KnowledgeEntry.category / subcategory


@dataclass
class Rejected:
    row: str  # "line 4" (CSV) or "item 3" (JSON), as a person finds it in the file
    reason: str
    question: str = ""


@dataclass
class ImportReport:
    format: str = ""
    accepted: list[KnowledgeEntry] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    error: str = ""  # the whole file was refused

    @property
    def total(self) -> int:
        return len(self.accepted) + len(self.rejected)


class FileRefused(Exception):
    pass


class RowError(str):
    """A row the parser could not read; the text says why."""


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def _rows_csv(text: str) -> list[tuple[str, object]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        raise FileRefused("The CSV file is empty.")
    header = {name: (name or "").strip().lower() for name in reader.fieldnames}
    missing = [name for name in REQUIRED if name not in header.values()]
    if missing:
        raise FileRefused(f"The CSV header has no {' and no '.join(repr(m) for m in missing)} column "
                          f"(found: {', '.join(repr(h) for h in reader.fieldnames)}). "
                          f"Expected columns: {', '.join(FIELDS)}.")
    rows = []
    for raw in reader:
        if None in raw:  # more cells than header columns
            rows.append((f"line {reader.line_num}", RowError("this line has more cells than the header has columns")))
            continue
        rows.append((f"line {reader.line_num}", {header[k]: v for k, v in raw.items()}))
    return rows


def _rows_json(text: str) -> list[tuple[str, object]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FileRefused(f"The file is not valid JSON ({exc}).") from None
    if isinstance(data, dict) and isinstance(data.get("entries"), list):
        data = data["entries"]
    if not isinstance(data, list):
        raise FileRefused('The JSON must be a list of objects (or {"entries": [...]}), each with '
                          f"{', '.join(FIELDS)}.")
    return [(f"item {n}", item) for n, item in enumerate(data, start=1)]


def parse_rows(data: bytes, filename: str) -> tuple[str, list[tuple[str, object]]]:
    """(format, [(row label, dict or RowError)]) from an uploaded CSV or JSON file."""
    if len(data) > MAX_FILE_BYTES:
        raise FileRefused(f"The file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FileRefused("The file is not UTF-8 text.") from None
    if not text.strip():
        raise FileRefused("The file is empty.")
    is_json = filename.lower().endswith(".json") or (
        not filename.lower().endswith(".csv") and text.lstrip()[:1] in "[{")
    fmt, rows = ("JSON", _rows_json(text)) if is_json else ("CSV", _rows_csv(text))
    if len(rows) > MAX_ROWS:
        raise FileRefused(f"The file has {len(rows)} rows; import at most {MAX_ROWS} at a time.")
    return fmt, rows


def _validate(item: object) -> tuple[dict | None, str]:
    if isinstance(item, RowError):
        return None, str(item)
    if not isinstance(item, dict):
        return None, "not an object with question, answer, category and subcategory"
    values = {}
    for name in FIELDS:
        value = item.get(name)
        if value is None:
            value = ""
        if not isinstance(value, str):
            return None, f"'{name}' must be text, not {type(value).__name__}"
        values[name] = value.strip()
    for name in REQUIRED:
        if not values[name]:
            return None, f"the {name} is empty"
    if len(values["question"]) > MAX_QUESTION_CHARS:
        return None, f"the question is longer than {MAX_QUESTION_CHARS} characters"
    if len(values["answer"]) > MAX_ANSWER_CHARS:
        return None, f"the answer is longer than {MAX_ANSWER_CHARS} characters"
    for name in ("category", "subcategory"):
        if len(values[name]) > MAX_LABEL_CHARS:
            return None, f"the {name} is longer than {MAX_LABEL_CHARS} characters"
    if values["subcategory"] and not values["category"]:
        return None, "a subcategory needs a category"
    return values, ""


def knowledge_entries_import(*, data: bytes, filename: str, user, approve: bool = True) -> ImportReport:
    """Create a Q&A pair for every valid row (approved by `user` when `approve`) and queue their embeddings.

    Rows that are invalid or repeat an existing pair (same category, subcategory and question,
    ignoring case and spacing) are rejected with their reason; the valid rows are saved in one
    transaction.
    """
    report = ImportReport()
    try:
        report.format, rows = parse_rows(data, filename)
    except FileRefused as exc:
        report.error = str(exc)
        return report
    seen = {(c, s, _normalise(q)) for c, s, q in KnowledgeEntry.objects.values_list("category", "subcategory", "question")}
    now = timezone.now()
    for label, item in rows:
        values, reason = _validate(item)
        question = item.get("question", "") if isinstance(item, dict) else ""
        if values is None:
            report.rejected.append(Rejected(label, reason, str(question or "")[:120]))
            continue
        key = (values["category"], values["subcategory"], _normalise(values["question"]))
        if key in seen:
            report.rejected.append(Rejected(label, "the same question already exists in this category and "
                                                   "subcategory", values["question"][:120]))
            continue
        seen.add(key)
        report.accepted.append(KnowledgeEntry(
            **values, is_active=True, approved_by=user if approve else None, approved_at=now if approve else None))
    knowledge_entries_create_many(entries=report.accepted)
    return report
