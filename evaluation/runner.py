"""Executing a run: every question of its set through retrieve() with the run's copy of the settings."""
from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.generation import chat_server
from core.errors import Unprocessable
from documents.models import Chunk
from evaluation import answers, metrics
from evaluation.copies import settings_copy
from evaluation.models import EvalResult, EvalRun, RunStatus, TestQuestion
from retrieval.ai.clients import condenser_for
from retrieval.search.followup import REWRITE_MAX_TOKENS, standalone_query
from retrieval.ai.clients import query_embedder_for
from retrieval.search import retrieve
from retrieval.search.scope import ALL, collection_scope
from retrieval.selectors import default_embedding_server

logger = logging.getLogger(__name__)

# Results are stored (and the progress counted) in batches: a row per question cost two statements each.
FLUSH_EVERY = 10
FLUSH_SECONDS = 2.0


def _segments_with_text(segments: list) -> list[dict]:
    """The segments with each chunk's whole text (the excerpt is cut at 2,000 characters); a passage joined
    with its neighbour has both chunks' texts."""
    ids = [c for s in segments for c in (s.get("joined_chunk_ids") or [s.get("chunk_id")]) if c]
    texts = dict(Chunk.objects.filter(pk__in=ids).values_list("pk", "content")) if ids else {}

    def text(s: dict) -> str:
        parts = [texts[c] for c in s.get("joined_chunk_ids") or [s.get("chunk_id")] if c in texts]
        return "\n".join(parts) if parts else s.get("excerpt", "")

    return [{**s, "text": text(s)} for s in segments]


def answer_server(rs):
    """The chat server answers are checked with (the chat's own: None when none is configured)."""
    return chat_server(rs)


def search_queries(questions: list[TestQuestion], server) -> list[str]:
    """What each question is searched as: a dialogue's follow-up turn becomes a standalone query from
    its earlier turns, as the chat makes it (retrieval.search.followup: the chat server's rewrite when
    one is configured, else the heuristic); any other question as it is."""
    rewrite_with = None
    timeout = float(settings.CHAT_QUERY_REWRITE_TIMEOUT or 0)
    if server is not None and timeout > 0 and any(q.turns for q in questions):
        def rewrite_with(messages: list[dict]) -> str:
            client = condenser_for(server, timeout=timeout)
            return client.complete(messages, max_tokens=REWRITE_MAX_TOKENS, temperature=0.0).text
    queries = []
    for question in questions:
        history = [{"role": "user", "content": str(turn.get("question") or "")} for turn in question.turns or []
                   if isinstance(turn, dict)]
        queries.append(standalone_query(question.question, history, rewrite_with=rewrite_with).query
                       if history else question.question)
    return queries


def _question_vectors(rs, texts: list[str]) -> dict[int, list]:
    """Every question embedded at once (in the client's batches) by the default embedding server, by its id.

    One question at a time cost the built-in model ~6x more per question (each call pays the engine's
    thread start-up, and far more on a loaded machine). Other models' spaces embed per question in retrieve()."""
    server = default_embedding_server(rs)
    if server is None or not server.embedding_model or not texts:
        return {}
    return {server.pk: list(query_embedder_for(server).embed_queries(texts))}


def _flush(run: EvalRun, pending: list[EvalResult]) -> None:
    """Store the questions answered since the last flush and count them on the run, as one unit."""
    if not pending:
        return
    with transaction.atomic():
        EvalResult.objects.bulk_create(pending)
        EvalRun.objects.filter(pk=run.pk).update(questions_done=F("questions_done") + len(pending))
    pending.clear()


def run_execute(run_id: int, *, pause: float = 0.0) -> None:
    """Ask every question of the run's set with the run's copy of the settings and store the outcomes.

    `pause`: after each question, sleep this many times as long as it took (a background run leaves
    the CPU to live answers). Delivered at least once: a finished or failed run is left alone; any
    other run starts over (its earlier results are replaced)."""
    with transaction.atomic():
        run = EvalRun.objects.select_for_update(of=("self",)).select_related("test_set", "created_by", "judge").filter(pk=run_id).first()
        if run is None or run.status in (RunStatus.FINISHED, RunStatus.FAILED):
            return
        run.results.all().delete()
        questions = list(run.test_set.questions.all())
        run.status, run.questions_done, run.questions_total = RunStatus.RUNNING, 0, len(questions)
        run.save(update_fields=["status", "questions_done", "questions_total"])
    started = time.monotonic()
    try:
        if run.created_by is None:
            raise Unprocessable(_("The person who started this run no longer exists."))
        rs = settings_copy(run.overrides)
        test_set = run.test_set
        scope = collection_scope(run.created_by, test_set.collection_id) if test_set.collection_id else ALL
        searched = search_queries(questions, chat_server(rs))
        vectors = _question_vectors(rs, searched)
        chat = answer_server(rs) if run.answers else None
        if run.answers and chat is None:
            raise Unprocessable(_("No chat server is configured, so answers cannot be checked."))
        rows, pending = [], []
        last_flush = time.monotonic()
        for number, question in enumerate(questions):
            asked = time.monotonic()
            result = retrieve(run.created_by, searched[number], scope, subcategory=test_set.topic or None,
                              k=test_set.k, retrieval_settings=rs,
                              query_vectors={pk: v[number] for pk, v in vectors.items()})
            segments = _segments_with_text(result.segments)
            gold = question.gold()
            outcome = metrics.score(gold, segments, k=test_set.k)
            row = {"question_id": question.pk, "question": question.question, "language": question.language,
                   "kind": question.kind or metrics.gold_level(gold), "rank": outcome.rank,
                   "recall": outcome.recall, "fact_coverage": outcome.fact_coverage}
            if chat is not None:
                row["answer_check"] = answers.answer_and_check(
                    question=question.question, gold=gold, segments=segments[:test_set.k], rs=rs, server=chat,
                    judge=run.judge, user=run.created_by).to_dict()
            rows.append(row)
            pending.append(EvalResult(
                run=run, question=question, question_text=question.question, language=row["language"],
                kind=row["kind"], rank=outcome.rank, recall=outcome.recall, fact_coverage=outcome.fact_coverage,
                answer=row.get("answer_check", {}).get("answer", ""), answer_check=row.get("answer_check", {}),
                retrieved=[{"document": s.get("document_title") or s.get("document_name"), "page": s.get("page_number"),
                            "chunk_id": s.get("chunk_id"), "qa_id": s.get("qa_id"), "score": round(s["score"], 4)}
                           for s in segments]))
            if len(pending) >= FLUSH_EVERY or time.monotonic() - last_flush >= FLUSH_SECONDS:
                _flush(run, pending)
                last_flush = time.monotonic()
            if pause:  # leave the machine to live answers for a while (settings.EVALUATION_YIELD)
                time.sleep(pause * (time.monotonic() - asked))
        _flush(run, pending)
        EvalRun.objects.filter(pk=run.pk).update(
            status=RunStatus.FINISHED, metrics=metrics.summarise(rows), finished_at=timezone.now(),
            duration_seconds=round(time.monotonic() - started, 2))
    except Exception as exc:  # recorded on the row the curator looks at
        logger.exception("evaluation run %s failed", run_id)
        EvalRun.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, error=str(getattr(exc, "message", exc)),
                                                 finished_at=timezone.now(),
                                                 duration_seconds=round(time.monotonic() - started, 2))
