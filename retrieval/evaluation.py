"""Retrieval evaluation on SQuAD-format question sets (XQuAD): hit@1, hit@5, MRR@10 per arm.

Each article becomes one document (its paragraphs joined by blank lines) of a dedicated
evaluation user, ingested through the real pipeline and reused by sha256 on later runs. A
question is a hit at rank r when the r-th retrieved chunk's [start_offset, end_offset) covers
the answer's span in that article's stored text.

The arms never rerank, whatever the settings say, so each measures what its name says; with a
rerank server, the arm `hybrid+rerank` is hybrid followed by that server's reranking.

Chunking strategies are compared with one evaluation user per strategy (`eval-retrieval` for
`tokens`, `eval-retrieval-late`, ...), so each keeps its own documents; a document is reused only
if it was indexed with the strategy asked for, else it is indexed again with it (a `late` run
whose documents fell back to `tokens` therefore tries `late` again next time).
"""
from __future__ import annotations

import io
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model

from documents.models import Document, DocumentText
from documents.services import document_reindex, document_upload
from core.errors import ApplicationError
from retrieval.ai import AiServerError
from retrieval.ai.clients import reranker_for
from retrieval.tasks import index_document
from retrieval.models import AiServer, AiServerKind
from retrieval.search.scope import Scope, documents_scope
from retrieval.search import retrieve
from retrieval.selectors import retrieval_settings_get

ARMS = {"vector": ("vector",), "fts": ("fts",), "hybrid": ("vector", "fts")}
RERANK_ARM = "hybrid+rerank"
EVAL_USER = "eval-retrieval"


@dataclass
class Question:
    id: str
    text: str
    article: int
    answer_start: int  # in the article's stored text
    answer_end: int


def load_squad(path: Path) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))["data"]


def article_text(article: dict) -> str:
    return "\n\n".join(p["context"].strip() for p in article["paragraphs"])


def default_strategy() -> str:
    """The chunking strategy of the retrieval settings."""
    return retrieval_settings_get().chunking_strategy


def eval_username(strategy: str | None = None) -> str:
    """The evaluation user whose documents are chunked with `strategy` (default: the settings')."""
    strategy = strategy or default_strategy()
    return EVAL_USER if strategy == "tokens" else f"{EVAL_USER}-{strategy}"


def ingest_one(*, user, name: str, data: bytes, strategy: str, log=print, failed: list[dict] | None = None,
               number: int | None = None) -> Document | None:
    """Upload and index one file for an evaluation (reused by sha256, re-indexed when chunked otherwise).

    A file that is refused or fails to index raises, unless `failed` is given: then it is recorded there
    ({"file", "reason"}, and "number" when given) and None returned, so one bad file does not end the run."""
    try:
        document = document_upload(owner=user, source=io.BytesIO(data), filename=name).document
        if document.status == "failed" or (document.status == "indexed" and document.chunking_strategy != strategy):
            document = document_reindex(document_id=document.pk, user=user)
    except ApplicationError as exc:
        _ingest_failed(name, str(exc.message), log=log, failed=failed, number=number)
        return None
    if document.status != "indexed":
        started = time.monotonic()
        index_document(document.pk, strategy)
        document.refresh_from_db()
        log(f"indexed {name}: {document.status} {document.chunk_count} chunks, {document.pages_total or 0} pages "
            f"in {time.monotonic() - started:.1f}s")
    if document.status != "indexed":
        why = document.index_error or f"left {document.status} (another process holds its indexing lease)"
        _ingest_failed(name, why, log=log, failed=failed, number=number)
        return None
    return document


def _ingest_failed(name: str, reason: str, *, log, failed: list[dict] | None, number: int | None) -> None:
    if failed is None:
        raise RuntimeError(f"{name} did not index: {reason}")
    log(f"FAILED {name}: {reason}")
    failed.append({"file": name, "status": "failed", "reason": reason,
                   **({"number": number} if number is not None else {})})


def recover_interrupted(log=print) -> int:
    """Before an evaluation ingests: the worker's crash recovery, so a document a killed run left
    "processing" (its lease lapsed) is indexed again rather than failing the run."""
    from retrieval.tasks import recover_stale_documents

    recovered = recover_stale_documents()
    if recovered:
        log(f"recovered {recovered} interrupted indexing jobs")
    return recovered


def ingest_articles(articles: list[dict], *, label: str, log=print, strategy: str | None = None,
                    failed: list[dict] | None = None) -> list[int]:
    """Index every article as a document of the strategy's evaluation user; return their ids in order
    (with `failed`: of the articles that indexed; the others are recorded there with their number)."""
    strategy = strategy or default_strategy()
    user, _ = get_user_model().objects.get_or_create(username=eval_username(strategy), defaults={"is_active": False})
    ids = []
    for number, article in enumerate(articles):
        name = f"{label}-{number:02d}-{article.get('title', 'article')[:60]}.txt"
        document = ingest_one(user=user, name=name, data=article_text(article).encode("utf-8"), strategy=strategy,
                              log=log, failed=failed, number=number)
        if document is not None:
            ids.append(document.pk)
    return ids


def strategies_used(document_ids: list[int]) -> dict:
    """How the documents were really chunked ({"late": 40, "tokens": 8}) and why any fell back."""
    rows = Document.objects.filter(pk__in=document_ids).values_list("chunking_strategy", "chunking_note")
    return {"indexed_with": dict(Counter(strategy for strategy, _ in rows)),
            "notes": sorted({note for _, note in rows if note})}


def questions_for(articles: list[dict], document_ids: list[int], question_texts: dict[str, str] | None = None
                  ) -> list[Question]:
    """Questions with their answer spans mapped into the stored text of each article."""
    questions = []
    for number, (article, doc_id) in enumerate(zip(articles, document_ids)):
        stored = DocumentText.objects.get(document_id=doc_id).text
        cursor = 0
        for paragraph in article["paragraphs"]:
            context = paragraph["context"].strip()
            offset = stored.find(context, cursor)
            exact = offset >= 0
            if not exact:  # extraction normalised something in this paragraph (whitespace, a control character)
                offset = cursor
            lead = len(paragraph["context"]) - len(paragraph["context"].lstrip())
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                start = offset + answer["answer_start"] - lead
                end = start + len(answer["text"])
                if stored[start:end] != answer["text"]:
                    # Nearest occurrence of the answer after the previous paragraph.
                    found = stored.find(answer["text"], max(cursor, start - 200))
                    if found < 0:
                        found = stored.find(answer["text"], cursor)
                    if found < 0:
                        continue
                    start, end = found, found + len(answer["text"])
                text = (question_texts or {}).get(qa["id"], qa["question"])
                questions.append(Question(qa["id"], text, doc_id, start, end))
            cursor = offset + len(context) if exact else cursor
    return questions


def evaluate(user, scope: Scope, questions: list[Question], *, k: int = 10, arms=ARMS, log=print,
             rerank_server: AiServer | None = None) -> dict:
    """hit@1, hit@5 and MRR@k per arm, plus timing per question; with `rerank_server`, also `hybrid+rerank`."""
    results = {}
    runs = [(name, arm, False) for name, arm in arms.items()]
    if rerank_server is not None:
        runs.append((RERANK_ARM, ARMS["hybrid"], rerank_server))
    for arm_name, arm, rerank in runs:
        hits1 = hits5 = 0
        reciprocal = 0.0
        statuses: Counter = Counter()
        started = time.perf_counter()
        for question in questions:
            result = retrieve(user, question.text, scope, k=k, arms=arm, rerank=rerank)
            segments = result.segments
            if rerank:
                statuses[(result.trace["rerank"] or {}).get("status", "not used")] += 1
            rank = next((i for i, s in enumerate(segments, start=1)
                         if s["document_id"] == question.article and s["start_offset"] <= question.answer_start
                         and question.answer_end <= s["end_offset"]), None)
            if rank == 1:
                hits1 += 1
            if rank is not None and rank <= 5:
                hits5 += 1
            if rank is not None and rank <= k:
                reciprocal += 1.0 / rank
        n = len(questions)
        elapsed = time.perf_counter() - started
        results[arm_name] = {"n": n, "hit@1": round(hits1 / n, 4) if n else 0.0,
                             "hit@5": round(hits5 / n, 4) if n else 0.0,
                             f"mrr@{k}": round(reciprocal / n, 4) if n else 0.0,
                             "ms_per_question": round(elapsed * 1000 / n, 1) if n else 0.0}
        if rerank:
            # Fallbacks keep the fused order: a question not reranked counts as hybrid, so say how many.
            results[arm_name].update(rerank_server=rerank.name, rerank_status=dict(statuses))
            if statuses["ok"] < n:
                log(f"warning: {n - statuses['ok']} of {n} questions were not reranked ({dict(statuses)}); "
                    "they count in the fused order")
        log(f"{arm_name}: {results[arm_name]}")
    return results


def rerank_server_for_evaluation(name: str = "") -> AiServer:
    """The named server, else the settings' rerank server, checked with one probe; ValueError says why not."""
    capable = list(AiServer.objects.filter(is_active=True, kind=AiServerKind.OPENAI, capabilities__rerank=True)
                   .values_list("name", flat=True))
    hint = (f"Rerank-capable servers: {', '.join(capable)}; name one with --rerank NAME." if capable else
            "No active AI server has the rerank capability: add one in the admin (an OpenAI-compatible server "
            "with text-embeddings-inference /rerank or a Jina/Cohere-compatible /v1/rerank, 'Reranks' ticked).")
    if name:
        server = AiServer.objects.filter(name=name).first()
        if server is None:
            raise ValueError(f"No AI server is named '{name}'. {hint}")
        if name not in capable:
            raise ValueError(f"'{name}' is not an active OpenAI-compatible server with the rerank capability. {hint}")
    else:
        server = retrieval_settings_get().rerank_server
        if server is None:
            raise ValueError(f"No rerank server is chosen in the retrieval settings. {hint}")
        if server.name not in capable:
            raise ValueError(f"The settings' rerank server '{server.name}' is not an active OpenAI-compatible server "
                             f"with the rerank capability. {hint}")
    # One probe first: a server that cannot answer would otherwise make every question fall back silently.
    try:
        reranker_for(server, timeout=max(retrieval_settings_get().rerank_timeout, 10.0)).rerank("probe", ["probe"])
    except (AiServerError, ApplicationError) as exc:
        raise ValueError(f"The rerank server '{server.name}' cannot be used: {getattr(exc, 'message', exc)}") from exc
    return server


def eval_scope(user, document_ids: list[int]) -> Scope:
    """The evaluation's search scope: exactly these documents of the evaluation user."""
    return documents_scope(user, document_ids)
