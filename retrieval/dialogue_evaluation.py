"""Retrieval on dialogue sets (issue #31): is a follow-up found as well as its standalone rewrite?

A dialogue set (`bench/sets/dialogues/dialogues.jsonl`, see `bench/sets/README.md`) holds
conversations whose turns carry the question as typed, a person's standalone `rewrite`, whether
the turn stands alone, and the gold passage ids of a passage corpus (`czech_retrieval/passages.jsonl`).
Each passage becomes one document ("title" and text) of the evaluation user, ingested through the
real pipeline and reused by sha256 on later runs; a turn is a hit at rank r when the r-th retrieved
segment belongs to a gold passage.

Every turn is searched four ways (`METHODS`): `verbatim` (the message as typed, what the chat did
before), `heuristic` (retrieval.search.followup without a model), `model` (with a chat server's
condense request; only with `rewrite_server`) and `human` (the set's rewrite: the target).
Figures are reported for first turns, follow-ups (`standalone: false`) and later turns that stand
alone, and how many of the latter each method left unchanged. The history a method sees is the
dialogue's earlier questions with, as each earlier answer, the text of the passage that method
found first (the answer is not in the set).
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model

from retrieval.ai.clients import condenser_for
from retrieval.evaluation import ARMS, eval_scope, eval_username, default_strategy, ingest_one
from retrieval.models import AiServer
from retrieval.search import retrieve
from retrieval.search.followup import REWRITE_MAX_TOKENS, QueryRewrite, keep_rewrite_if_needed, standalone_query

METHODS = ("verbatim", "heuristic", "model", "human")
PARTS = ("first_turns", "follow_ups", "standalone_later", "all")


@dataclass
class DialogueTurn:
    question: str
    rewrite: str
    standalone: bool
    gold: list[str]


@dataclass
class Dialogue:
    id: str
    lang: str
    turns: list[DialogueTurn]


def load_dialogues(path: Path) -> list[Dialogue]:
    """The dialogues of a JSONL file (the schema of bench/sets/README.md)."""
    dialogues = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            dialogues.append(Dialogue(row["id"], row.get("lang", ""), [
                DialogueTurn(t["question"], t.get("rewrite") or t["question"], bool(t.get("standalone")),
                             list(t["gold"])) for t in row["turns"]]))
    return dialogues


def load_passages(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def ingest_passages(passages: list[dict], *, log=print, strategy: str | None = None,
                    failed: list[dict] | None = None) -> dict[int, str]:
    """Index every passage as one document of the evaluation user: {document id: passage id} (with
    `failed`: a passage that does not index is recorded there and left out)."""
    strategy = strategy or default_strategy()
    user, _ = get_user_model().objects.get_or_create(username=eval_username(strategy), defaults={"is_active": False})
    ids: dict[int, str] = {}
    started = time.monotonic()
    for passage in passages:
        text = f"{passage.get('title', '')}\n\n{passage['text']}".strip()
        document = ingest_one(user=user, name=f"{passage['id']}.txt", data=text.encode("utf-8"), strategy=strategy,
                              log=lambda message: None, failed=failed)
        if document is not None:
            ids[document.pk] = passage["id"]
    log(f"{len(ids)} passages indexed or reused in {time.monotonic() - started:.1f}s")
    return ids


def model_rewriter(server: AiServer, timeout: float):
    """`rewrite_with` for standalone_query: one condense request to `server` within `timeout` seconds."""
    client = condenser_for(server, timeout=timeout)

    def rewrite_with(messages: list[dict]) -> str:
        return client.complete(messages, max_tokens=REWRITE_MAX_TOKENS, temperature=0.0).text
    return rewrite_with


def evaluate_dialogues(user, documents: dict[int, str], dialogues: list[Dialogue], *, k: int = 10,
                       rewrite_server: AiServer | None = None, timeout: float = 8.0, log=print) -> dict:
    """hit@1, hit@5 and MRR@k per method and part, the share of standalone turns left unchanged, per language."""
    scope = eval_scope(user, list(documents))
    texts = {passage_id: doc_id for doc_id, passage_id in documents.items()}
    methods = [m for m in METHODS if m != "model" or rewrite_server is not None]
    rewrite_with = model_rewriter(rewrite_server, timeout) if rewrite_server is not None else None
    results: dict = {}
    for method in methods:
        started = time.perf_counter()
        ranks: dict[str, list[int | None]] = defaultdict(list)
        unchanged = rewritten = model_used = 0
        for dialogue in dialogues:
            history: list[dict] = []
            for number, turn in enumerate(dialogue.turns):
                query, how, rewrite = _query(method, turn, history, rewrite_with)
                model_used += how == "model"
                segments = retrieve(user, query, scope, k=k, arms=ARMS["hybrid"], rerank=False).segments
                if rewrite is not None:  # as the chat does: earlier words only when the message alone is weak
                    rewrite, alone = keep_rewrite_if_needed(rewrite, segments, lambda text: retrieve(
                        user, text, scope, k=k, arms=ARMS["hybrid"], rerank=False))
                    if alone is not None:
                        query, segments = rewrite.query, alone.segments
                gold = {texts[g] for g in turn.gold if g in texts}
                rank = next((i for i, s in enumerate(segments, start=1) if s.get("document_id") in gold), None)
                part = "first_turns" if number == 0 else ("standalone_later" if turn.standalone else "follow_ups")
                for key in (part, "all", f"{part}:{dialogue.lang}"):
                    ranks[key].append(rank)
                if number and turn.standalone:
                    unchanged += query.strip() == turn.question.strip()
                if number and not turn.standalone:
                    rewritten += query.strip() != turn.question.strip()
                answer = (segments[0].get("excerpt") or "") if segments else ""
                history += [{"role": "user", "content": turn.question}, {"role": "assistant", "content": answer}]
        standalone_later = len(ranks["standalone_later"])
        results[method] = {part: _scores(ranks[part], k) for part in PARTS}
        results[method]["follow_ups_by_language"] = {
            key.split(":", 1)[1]: _scores(values, k) for key, values in sorted(ranks.items())
            if key.startswith("follow_ups:")}
        results[method]["standalone_unchanged"] = round(unchanged / standalone_later, 4) if standalone_later else None
        results[method]["follow_ups_rewritten"] = (round(rewritten / len(ranks["follow_ups"]), 4)
                                                   if ranks["follow_ups"] else None)
        if method == "model":
            results[method]["model_rewrites"] = model_used  # the others fell back to the heuristic
        results[method]["seconds"] = round(time.perf_counter() - started, 1)
        log(f"{method}: follow-ups {results[method]['follow_ups']}, standalone unchanged "
            f"{results[method]['standalone_unchanged']}")
    return results


def _query(method: str, turn: DialogueTurn, history: list[dict], rewrite_with) -> tuple[str, str, QueryRewrite | None]:
    if method == "verbatim":
        return turn.question, "none", None
    if method == "human":
        return turn.rewrite, "human", None
    rewrite = standalone_query(turn.question, history, rewrite_with=rewrite_with if method == "model" else None)
    return rewrite.query, rewrite.method, rewrite


def _scores(ranks: list[int | None], k: int) -> dict:
    n = len(ranks)
    if not n:
        return {"n": 0}
    return {"n": n, "hit@1": round(sum(r == 1 for r in ranks) / n, 4),
            "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
            f"mrr@{k}": round(sum(1.0 / r for r in ranks if r is not None and r <= k) / n, 4)}
