"""Retrieval metrics of a test-set run, and the comparison of two runs (no Django: pure functions).

A retrieved passage answers a question when it matches one of the question's gold targets, at the
finest level the question has: gold passages (the chunk holds the passage, or the two share at
least half of the shorter one's word 5-grams, so a passage cut by a chunk boundary or spread over
small chunks still counts; short ones as a substring) or chunk ids, else approved pairs, else pages, else documents, else key facts. `rank`
is the first matching passage's (1-based); hit@1, hit@5 and MRR follow from it. `recall` is the
share of the gold targets found in the top k; `fact_coverage` the share of key facts whose words
appear in the top k's text.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Iterable

SHINGLE = 5


def normalise(text: str) -> str:
    return " ".join(str(text).casefold().split())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def passage_in(passage: str, text: str) -> bool:
    """True when the chunk `text` shows the gold `passage`: holds it, or shares at least half of the
    shorter one's word 5-grams (a passage cut by a chunk boundary, or a chunk smaller than the passage)."""
    passage, text = normalise(passage), normalise(text)
    if not passage:
        return False
    if passage in text:
        return True
    words = passage.split()
    if len(words) < 2 * SHINGLE:
        return False
    gold, chunk = _shingles(words), _shingles(text.split())
    return bool(chunk) and len(gold & chunk) >= min(len(gold), len(chunk)) / 2


def document_is(ref: str, segment: dict) -> bool:
    """True when the document named `ref` (id, title, file name with or without extension) is the segment's."""
    ref = str(ref).strip()
    if ref.isascii() and ref.isdigit():
        return segment.get("document_id") == int(ref)
    name = str(segment.get("document_name") or "")
    names = {normalise(name), normalise(PurePath(name).stem), normalise(segment.get("document_title") or "")}
    return normalise(ref) in names - {""}


def gold_level(gold: dict) -> str:
    """The finest level of gold a question has: passage, qa, page, document, facts ('' for none)."""
    if gold.get("gold_passages") or gold.get("gold_chunk_ids"):
        return "passage"
    for key, level in (("gold_qa_ids", "qa"), ("gold_pages", "page"), ("gold_documents", "document"),
                       ("key_facts", "facts")):
        if gold.get(key):
            return level
    return ""


def _targets(gold: dict) -> list[Any]:
    level = gold_level(gold)
    if level == "passage":
        return ([("passage", p) for p in gold.get("gold_passages") or []]
                + [("chunk", c) for c in gold.get("gold_chunk_ids") or []])
    if level == "qa":
        return [("qa", q) for q in gold["gold_qa_ids"]]
    if level == "page":
        return [("page", p) for p in gold["gold_pages"]]
    if level == "document":
        return [("document", d) for d in gold["gold_documents"]]
    if level == "facts":
        return [("fact", f) for f in gold["key_facts"]]
    return []


def _matches(target: tuple[str, Any], segment: dict) -> bool:
    kind, value = target
    text = segment.get("text") or segment.get("excerpt") or ""
    if kind == "passage":
        return segment.get("source_type") == "document" and passage_in(value, text)
    if kind == "chunk":  # a passage joined with its neighbour holds both chunks (retrieval/search/neighbours.py)
        return int(value) in (segment.get("joined_chunk_ids") or [segment.get("chunk_id")])
    if kind == "qa":
        return segment.get("qa_id") == int(value)
    if kind == "page":
        return segment.get("page_number") == int(value["page"]) and document_is(value["document"], segment)
    if kind == "document":
        return document_is(value, segment)
    return normalise(value) in normalise(text)


@dataclass
class Outcome:
    rank: int | None
    recall: float
    fact_coverage: float | None

    @property
    def reciprocal(self) -> float:
        return 1.0 / self.rank if self.rank else 0.0


def score(gold: dict, segments: list[dict], *, k: int) -> Outcome:
    """How well the first `k` retrieved segments answer a question with this gold."""
    top = segments[:k]
    targets = _targets(gold)
    rank = next((i for i, segment in enumerate(top, start=1) if any(_matches(t, segment) for t in targets)), None)
    found = sum(1 for t in targets if any(_matches(t, segment) for segment in top))
    facts = gold.get("key_facts") or []
    joined = normalise(" ".join(s.get("text") or s.get("excerpt") or "" for s in top))
    coverage = sum(1 for f in facts if normalise(f) in joined) / len(facts) if facts else None
    return Outcome(rank=rank, recall=found / len(targets) if targets else 0.0, fact_coverage=coverage)


def _summary(rows: list[dict]) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    covered = [r["fact_coverage"] for r in rows if r.get("fact_coverage") is not None]
    result = {"n": n,
              "hit@1": round(sum(1 for r in rows if r["rank"] == 1) / n, 4),
              "hit@5": round(sum(1 for r in rows if r["rank"] and r["rank"] <= 5) / n, 4),
              "mrr": round(sum(1.0 / r["rank"] for r in rows if r["rank"]) / n, 4),
              "recall": round(sum(r["recall"] for r in rows) / n, 4)}
    if covered:
        result["fact_coverage"] = round(sum(covered) / len(covered), 4)
    result.update(_answer_summary([r["answer_check"] for r in rows if r.get("answer_check")]))
    return result


# The answer metrics' keys in a summary (evaluation/answers.py); "faithfulness" is model-judged.
ANSWER_KEYS = ("citation_correct", "answer_fact_coverage", "numbers_grounded", "refusal_rate", "faithfulness")


def _share(values: list) -> float | None:
    values = [float(v) for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def _answer_summary(checks: list[dict]) -> dict:
    """Shares over the questions each metric applies to: citations over answers that cite, key facts over
    questions with facts, numbers over answers that state one; refusals over all answered questions."""
    if not checks:
        return {}
    found = {"answers": len(checks),
             "citation_correct": _share([c.get("citation_correct") for c in checks]),
             "answer_fact_coverage": _share([c.get("fact_coverage") for c in checks]),
             "numbers_grounded": _share([c.get("numbers_grounded") for c in checks]),
             "refusal_rate": _share([bool(c.get("refused")) for c in checks]),
             "faithfulness": _share([c.get("faithfulness") for c in checks])}
    return {key: value for key, value in found.items() if value is not None}


def summarise(rows: Iterable[dict]) -> dict:
    """Overall, per language and per kind: n, hit@1, hit@5, MRR, recall (and key-fact coverage)."""
    rows = list(rows)
    by: dict[str, dict[str, list[dict]]] = {"language": {}, "kind": {}}
    for row in rows:
        by["language"].setdefault(row.get("language") or "?", []).append(row)
        by["kind"].setdefault(row.get("kind") or "?", []).append(row)
    return {"overall": _summary(rows),
            "by_language": {key: _summary(group) for key, group in sorted(by["language"].items())},
            "by_kind": {key: _summary(group) for key, group in sorted(by["kind"].items())}}


def compare(before: list[dict], after: list[dict], *, margin: float = 0.02) -> dict:
    """Two runs' rows (`question_id`, `rank`, `recall`, ...) side by side: deltas, and the questions
    that got better or worse (by recall, then by reciprocal rank); `recall_dropped` when the overall
    recall fell by more than `margin`."""
    first = {row["question_id"]: row for row in before}
    better, worse = [], []
    for row in after:
        old = first.get(row["question_id"])
        if old is None:
            continue
        old_key = (round(old["recall"], 6), 1.0 / old["rank"] if old["rank"] else 0.0)
        new_key = (round(row["recall"], 6), 1.0 / row["rank"] if row["rank"] else 0.0)
        change = {"question_id": row["question_id"], "question": row.get("question", ""),
                  "language": row.get("language", ""), "kind": row.get("kind", ""),
                  "rank_before": old["rank"], "rank_after": row["rank"],
                  "recall_before": old["recall"], "recall_after": row["recall"],
                  "answer_before": (old.get("answer_check") or {}).get("answer", ""),
                  "answer_after": (row.get("answer_check") or {}).get("answer", "")}
        if new_key > old_key:
            better.append(change)
        elif new_key < old_key:
            worse.append(change)
    common = [q for q in first if q in {row["question_id"] for row in after}]
    a = summarise(first[q] for q in common)
    b = summarise(row for row in after if row["question_id"] in first)

    def delta(x: dict, y: dict) -> dict:
        return {key: round(y[key] - x[key], 4) for key in ("hit@1", "hit@5", "mrr", "recall", *ANSWER_KEYS)
                if key in x and key in y}

    recall_delta = delta(a["overall"], b["overall"]).get("recall", 0.0)
    return {"before": a, "after": b, "delta": delta(a["overall"], b["overall"]),
            "delta_by_language": {lang: delta(a["by_language"][lang], b["by_language"].get(lang, {}))
                                  for lang in a["by_language"]},
            "better": better, "worse": worse, "margin": margin,
            "recall_dropped": recall_delta < -margin - 1e-9}
