"""Retrieval evaluation on real files with document-, page- and passage-level gold (issue #31).

A gold file is JSONL, one question per line:

    {"id": "q1", "question": "…", "gold_documents": ["manual.pdf"], "gold_pages": [12, 13], "evidence": "…"}

`gold_documents` names files of the evaluated folder (required); `gold_pages` (1-based page numbers of
the file, optional) and `evidence` (the passage's text, optional; whitespace and table pipes do not
matter) say where the answer is. The files are uploaded through the product's own upload, extraction,
OCR and table path. Per arm it reports:

- document level, over the retrieved chunks de-duplicated by document (as IR papers report):
  hit@1, hit@5, R@k (share of gold documents among the first k documents) and MRR@k;
- evidence level: a chunk of a gold document that covers at least half of the evidence (located in
  the stored text, on the gold pages first), hit@1 / hit@5 / MRR@k — the "evidence chunk first" figure;
- page level: a chunk of a gold document on one of the gold pages, hit@1 / hit@5 / MRR@k;
- `first_decided_by`: which arm put each question's first passage first — `both` (it is in both arms'
  lists), `vector` or `fts` (in one list only), `none` (nothing found) — over all questions.
"""
from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model

from documents.models import Document, DocumentText
from retrieval.evaluation import ARMS, default_strategy, eval_username, ingest_one
from retrieval.search import retrieve
from retrieval.search.scope import Scope


class GoldFormatError(ValueError):
    """A gold file that cannot be read as documented (the message names the line)."""


@dataclass(frozen=True)
class GoldQuestion:
    id: str
    question: str
    gold_documents: tuple[str, ...]
    gold_pages: tuple[int, ...] = ()
    evidence: str = ""
    lang: str = ""
    kind: str = ""


@dataclass
class Located:
    """A question's gold in the evaluated documents: ids, and the evidence's span in its document."""
    question: GoldQuestion
    document_ids: set[int]
    evidence: tuple[int, int, int] | None = None  # (document id, start, end) in the stored text
    pages: set[int] = field(default_factory=set)


def load_gold(path: Path) -> list[GoldQuestion]:
    """The questions of a gold JSONL file; GoldFormatError names the first bad line and why."""
    questions, seen = [], set()
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{Path(path).name} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldFormatError(f"{where}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise GoldFormatError(f"{where}: expected an object")
        qid, question, documents = row.get("id"), row.get("question"), row.get("gold_documents")
        if not isinstance(qid, str) or not qid or qid in seen:
            raise GoldFormatError(f"{where}: 'id' must be a unique non-empty string")
        if not isinstance(question, str) or not question.strip():
            raise GoldFormatError(f"{where}: 'question' must be a non-empty string")
        if not isinstance(documents, list) or not documents or not all(isinstance(d, str) and d for d in documents):
            raise GoldFormatError(f"{where}: 'gold_documents' must be a non-empty list of file names")
        pages = row.get("gold_pages", [])
        if not isinstance(pages, list) or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 1
                                                  for p in pages):
            raise GoldFormatError(f"{where}: 'gold_pages' must be a list of page numbers (1, 2, …)")
        evidence = row.get("evidence", "")
        if not isinstance(evidence, str):
            raise GoldFormatError(f"{where}: 'evidence' must be a string")
        seen.add(qid)
        questions.append(GoldQuestion(qid, question.strip(), tuple(documents), tuple(pages), evidence,
                                      str(row.get("lang", "")), str(row.get("kind", ""))))
    if not questions:
        raise GoldFormatError(f"{Path(path).name}: no questions")
    return questions


def normalised_with_map(text: str) -> tuple[str, list[int]]:
    """`text` with whitespace runs as one space and table pipes dropped, and each character's offset in `text`."""
    out: list[str] = []
    where: list[int] = []
    space = True  # no leading space
    for i, ch in enumerate(text):
        if ch.isspace() or ch == "|":
            if not space:
                out.append(" ")
                where.append(i)
                space = True
            continue
        out.append(ch)
        where.append(i)
        space = False
    return "".join(out), where


def locate_evidence(text: str, evidence: str, region: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """The span of `evidence` in `text` (in `region` first), ignoring whitespace and table pipes; None if absent."""
    wanted, _ = normalised_with_map(evidence)
    wanted = wanted.strip()
    if not wanted:
        return None
    for lo, hi in ([region] if region else []) + [(0, len(text))]:
        normal, where = normalised_with_map(text[lo:hi])
        at = normal.find(wanted)
        if at >= 0:
            return lo + where[at], lo + where[at + len(wanted) - 1] + 1
    return None


def ingest_files(paths: list[Path], *, log=print, strategy: str | None = None,
                 failed: list[dict] | None = None) -> dict[str, int]:
    """Upload and index each file for the strategy's evaluation user (reused by sha256); {file name: id}
    (with `failed`: a file that does not index is recorded there and left out)."""
    strategy = strategy or default_strategy()
    user, _ = get_user_model().objects.get_or_create(username=eval_username(strategy), defaults={"is_active": False})
    ids = {}
    for path in paths:
        document = ingest_one(user=user, name=path.name, data=path.read_bytes(), strategy=strategy, log=log,
                              failed=failed)
        if document is not None:
            ids[path.name] = document.pk
    return ids


def folder_files(folder: Path) -> list[Path]:
    """The files a gold set is asked over: every visible file of the folder, by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def locate(questions: list[GoldQuestion], ids: dict[str, int]) -> tuple[list[Located], dict[int, list]]:
    """Each question's gold in the stored documents; and each document's pages ([page, start, end], …)."""
    texts = {row.document_id: row for row in DocumentText.objects.filter(document_id__in=ids.values())}
    pages = {doc_id: list(row.pages or []) for doc_id, row in texts.items()}
    located = []
    for q in questions:
        doc_ids = {ids[name] for name in q.gold_documents if name in ids}
        spot = None
        if q.evidence:
            for doc_id in sorted(doc_ids):
                on = [(s, e) for number, s, e in pages.get(doc_id, []) if number in q.gold_pages]
                region = (min(s for s, _ in on), max(e for _, e in on)) if on else None
                span = locate_evidence(texts[doc_id].text, q.evidence, region)
                if span:
                    spot = (doc_id, *span)
                    break
        located.append(Located(q, doc_ids, spot, set(q.gold_pages)))
    return located, pages


def _pages_of(pages: list, start: int, end: int) -> set[int]:
    return {number for number, s, e in pages if s < end and start < e}


def _scores(ranks: list[int | None], k: int) -> dict:
    n = len(ranks)
    if not n:
        return {"hit@1": 0.0, "hit@5": 0.0, f"mrr@{k}": 0.0}
    return {"hit@1": round(sum(r == 1 for r in ranks) / n, 4),
            "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
            f"mrr@{k}": round(sum(1.0 / r for r in ranks if r is not None and r <= k) / n, 4)}


def evaluate_gold(user, scope: Scope, located: list[Located], pages: dict[int, list], *, k: int = 10,
                  arms=ARMS, log=print, query_vectors: dict | None = None) -> dict:
    """Document-, evidence- and page-level figures per arm (module docstring), overall and per language.
    `query_vectors`: {question: {embedding server id: vector}} embedded already (else each is embedded)."""
    results: dict = {}
    for arm_name, arm in arms.items():
        rows = []
        decided: Counter = Counter()  # which arm put each question's first passage first
        started = time.perf_counter()
        for item in located:
            found = retrieve(user, item.question.question, scope, k=k, arms=arm,
                             query_vectors=(query_vectors or {}).get(item.question.question))
            segments = found.segments
            decided[_decided_by(segments)] += 1
            documents: list[int] = []
            for s in segments:
                document_id = s["document_id"]
                if document_id is not None and document_id not in documents:
                    documents.append(document_id)
            doc_rank = next((i for i, d in enumerate(documents, 1) if d in item.document_ids), None)
            recall = len(set(documents[:k]) & item.document_ids) / len(item.document_ids) if item.document_ids else 0.0
            evidence_rank = whole_rank = page_rank = None
            for rank, s in enumerate(segments, 1):
                first, last = s["start_offset"], s["end_offset"]
                if s["document_id"] not in item.document_ids or first is None or last is None:
                    continue  # another document's passage, or an approved answer
                if item.evidence and s["document_id"] == item.evidence[0]:
                    _, start, end = item.evidence
                    if evidence_rank is None and (min(end, last) - max(start, first)) * 2 >= end - start:
                        evidence_rank = rank
                    if whole_rank is None and first <= start and end <= last:
                        whole_rank = rank
                if page_rank is None and item.pages & _pages_of(pages.get(s["document_id"], []), first, last):
                    page_rank = rank
            rows.append((item, doc_rank, recall, evidence_rank, page_rank, whole_rank))
        elapsed = time.perf_counter() - started

        def summary(part: list) -> dict:
            with_evidence = [r for r in part if r[0].evidence]
            with_pages = [r for r in part if r[0].pages]
            return {"n": len(part),
                    "document": {**_scores([r[1] for r in part], k),
                                 f"recall@{k}": round(sum(r[2] for r in part) / len(part), 4) if part else 0.0},
                    "evidence": {"n": len(with_evidence), **_scores([r[3] for r in with_evidence], k)},
                    "evidence_whole": {"n": len(with_evidence), **_scores([r[5] for r in with_evidence], k)},
                    "page": {"n": len(with_pages), **_scores([r[4] for r in with_pages], k)}}

        result = summary(rows)
        result["ms_per_question"] = round(elapsed * 1000 / len(rows), 1) if rows else 0.0
        result["first_decided_by"] = dict(decided)
        languages = Counter(r[0].question.lang for r in rows if r[0].question.lang)
        if len(languages) > 1:
            result["by_language"] = {lang: summary([r for r in rows if r[0].question.lang == lang])
                                     for lang in sorted(languages)}
        kinds = Counter(r[0].question.kind for r in rows if r[0].question.kind)
        if len(kinds) > 1:
            result["by_kind"] = {kind: summary([r for r in rows if r[0].question.kind == kind])
                                 for kind in sorted(kinds)}
        results[arm_name] = result
        log(f"{arm_name}: {json.dumps({key: result[key] for key in ('document', 'evidence', 'evidence_whole', 'page')})}")
    return results


def _decided_by(segments: list) -> str:
    """Which arm's list the first document passage came from: "both", "vector", "fts" or "none"."""
    first = next((s for s in segments if s.get("source_type") == "document"), None)
    if first is None:
        return "none"
    vector, fts = first.get("vector_rank") is not None, first.get("fts_rank") is not None
    return "both" if vector and fts else "vector" if vector else "fts" if fts else "none"


def unlocated(located: list[Located]) -> list[str]:
    """Ids of questions whose evidence was not found in the stored text (they count as misses at evidence level)."""
    return [item.question.id for item in located if item.question.evidence and item.evidence is None]


def missing_files(questions: list[GoldQuestion], folder: Path) -> list[str]:
    names = {name for q in questions for name in q.gold_documents}
    return sorted(name for name in names if not (folder / name).is_file())


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name)[:80]


def documents_summary(ids: dict[str, int]) -> dict:
    """Pages and chunks of each evaluated file, for the run's record."""
    rows = Document.objects.filter(pk__in=ids.values()).values_list("pk", "pages_total", "chunk_count")
    by_id = {pk: {"pages": pages, "chunks": chunks} for pk, pages, chunks in rows}
    return {_safe(name): by_id.get(pk, {}) for name, pk in ids.items()}
