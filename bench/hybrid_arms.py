"""Each arm alone against hybrid, per set: hit@1, hit@5 and MRR@10 of the vector arm, the full-text
arm and their fusion as retrieve() fuses them (the rules of retrieval/search/fusion_rule.py).

    python bench/hybrid_arms.py --czech                      # bench/sets/czech_retrieval, one passage a document
    python bench/hybrid_arms.py --czech --analysis simple    # Czech without lemmas (bench/czech_analysis.py)
    python bench/hybrid_arms.py --squad ../shared/data/xquad/xquad.de.json [--articles 16]
    python bench/hybrid_arms.py --squad ../shared/data/xquad/xquad.en.json --questions ../shared/data/xquad/xquad.de.json

Runs on the configured database (documents of the eval_retrieval user, ingested on first use and
reused by content). Each question is retrieved once with both arms and every candidate kept: "hybrid"
is the list retrieve() returned (the product's weights and rules), "vector" and "fts" are each arm's
own ranking of the same retrieval, and the trace's decisions are counted (`fusion_decisions`). `--runs FILE` keeps
the lists (with each candidate's distance and the full-text coverage, to recompute a rule offline);
`--query-vectors FILE` embeds each question once across runs. The built-in model embeds with one
engine thread (faster on a busy machine) and the questions in one batched call, as evaluation runs
do. Prints JSON.

Titles: every article is uploaded as a file named `<set>-NN-<id>.txt`, and a document's title goes
into every chunk's embedded and full-text-indexed context (documents/chunking/layout.py,
`chunk_context`). `--titles set` (the default) gives each document its real title (the Czech set's
"Směrnice o cestovních náhradách", a SQuAD article's title), as someone uploading it with a title
would; `file` keeps the title the upload derives from the file name (`czech_retrieval-01-cestovni-
nahrady-02`: the figures before #31's realistic titles); `humanised` is that stem with its
separators as spaces; `none` leaves the title out of the context. A change is applied to documents
already indexed by renaming them and `chunk_context_rebuild` (the embeddings cache keeps each
variant's vectors, so switching back re-embeds nothing).
Since a title that is only the file name's stem is left out of the chunk context
(documents.titles.context_title), `file` now indexes like `none`; the file-name figures in
docs/retrieval.md were measured before that.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")

CZECH_SET = Path(__file__).resolve().parent / "sets" / "czech_retrieval"


def czech_articles() -> list[dict]:
    """The Czech set in SQuAD form: each passage one article (one chunk), its questions' answer the passage's start."""
    passages = [json.loads(line) for line in (CZECH_SET / "passages.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [json.loads(line) for line in (CZECH_SET / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    by_passage: dict[str, list[dict]] = {}
    for q in questions:
        by_passage.setdefault(q["gold"][0], []).append(
            {"id": q["id"], "question": q["question"], "answers": [{"text": "", "answer_start": 0}]})
    articles = []
    for p in passages:
        qas = by_passage.get(p["id"], [])
        for qa in qas:
            qa["answers"][0]["text"] = p["text"][:40]
        articles.append({"title": p["id"], "document_title": p["title"],
                         "paragraphs": [{"context": p["text"], "qas": qas}]})
    return articles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--czech", action="store_true")
    source.add_argument("--squad", type=Path)
    parser.add_argument("--questions", type=Path,
                        help="Ask this SQuAD file's questions (same ids) instead of --squad's: cross-lingual")
    parser.add_argument("--articles", type=int, default=0, help="Only the first N articles (SQuAD)")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N questions")
    parser.add_argument("--runs", type=Path, help="Also write every question's lists here (JSON)")
    parser.add_argument("--query-vectors", type=Path,
                        help="Keep the questions' embeddings in this file and reuse them on later runs (the "
                             "full-text analysis and the fusion change between runs, the embedder does not)")
    parser.add_argument("--titles", choices=("set", "file", "humanised", "none"), default="set",
                        help="The documents' titles (module docstring); `file` reproduces the figures before")
    parser.add_argument("--rebuild", action="store_true",
                        help="Rebuild the set's search vectors first (after a change to the analysis)")
    parser.add_argument("--analysis", choices=("lemmas", "simple", "ispell"),
                        help="Index and ask Czech under this analysis (bench/czech_analysis.py; rebuilds the set's "
                             "search vectors first; `lemmas` is what ships)")
    args = parser.parse_args()
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from documents.search_vectors import search_vectors_rebuild
    from retrieval import evaluation
    from retrieval.ai import builtin
    from retrieval.search import retrieve

    builtin.single_thread_here()  # one engine thread: faster than several waiting for each other on a busy machine
    if args.analysis:
        from bench import czech_analysis

        czech_analysis.use(args.analysis)

    data = czech_articles() if args.czech else evaluation.load_squad(args.squad)
    if args.articles:
        data = data[:args.articles]
    label = "czech_retrieval" if args.czech else args.squad.stem
    ids = evaluation.ingest_articles(data, label=label, log=lambda m: print(m, file=sys.stderr))
    _retitle(data, ids, args.titles)
    if args.rebuild or args.analysis:
        search_vectors_rebuild(document_ids=ids)
    texts = None
    if args.questions:
        texts = {qa["id"]: qa["question"] for a in evaluation.load_squad(args.questions)
                 for p in a["paragraphs"] for qa in p["qas"]}
    questions = evaluation.questions_for(data, ids, texts)
    if args.limit:
        questions = questions[:args.limit]
    if args.query_vectors:
        _reuse_query_vectors(args.query_vectors)
    user = get_user_model().objects.get(username=evaluation.eval_username())
    scope = evaluation.eval_scope(user, ids)
    vectors = {} if args.query_vectors else _question_vectors([q.text for q in questions])
    fts_scores = _capture_fts_scores()
    runs, languages, decisions = [], Counter(), Counter()
    for number, q in enumerate(questions):
        fts_scores.clear()
        result = retrieve(user, q.text, scope, k=80, rerank=False,
                          query_vectors={pk: v[number] for pk, v in vectors.items()})
        segments = result.segments
        tier = result.trace["tiers"][-1] if result.trace["tiers"] else {}
        languages[result.trace.get("question_language") or "-"] += 1
        decisions["vector lowered" if tier.get("vector_weight_lowered")
                  else "fts lowered" if tier.get("fts_weight_lowered") else "none"] += 1
        vector = sorted((s for s in segments if s["vector_rank"]), key=lambda s: s["vector_rank"])
        fts = sorted((s for s in segments if s["fts_rank"]), key=lambda s: s["fts_rank"])
        runs.append({
            "good": [s["chunk_id"] for s in segments if s["document_id"] == q.article
                     and s["start_offset"] <= q.answer_start and q.answer_end <= s["end_offset"]],
            "vector": [s["chunk_id"] for s in vector], "fts": [s["chunk_id"] for s in fts],
            "hybrid": [s["chunk_id"] for s in segments],
            "distances": {s["chunk_id"]: s["distance"] for s in segments}, "coverage": tier.get("fts_coverage"),
            "fts_scores": dict(fts_scores),
            "weights": {"vector": tier.get("vector_weight"), "fts": tier.get("fts_weight")},
        })
    if args.runs:
        args.runs.write_text(json.dumps(runs))
    if args.query_vectors:
        args.query_vectors.write_text(json.dumps(_VECTORS))
    print(json.dumps({"set": label, "titles": args.titles, "analysis": args.analysis or "lemmas",
                      "asked": args.questions.stem if args.questions else label,
                      "questions": len(runs), "question_languages": dict(languages),
                      "fusion_decisions": dict(decisions),
                      "vector": score(runs, "vector"), "fts": score(runs, "fts"), "hybrid": score(runs, "hybrid")}))


_VECTORS: dict = {}


def title_for(article: dict, document, mode: str) -> str:
    """The title a document of the set carries under `--titles mode`."""
    from pathlib import PurePath

    stem = PurePath(document.original_filename).stem
    if mode == "set":
        return article.get("document_title") or article.get("title") or stem
    if mode == "humanised":
        return " ".join(stem.replace("_", " ").replace("-", " ").split())
    return stem if mode == "file" else ""


def _retitle(articles: list[dict], ids: list[int], mode: str) -> None:
    """Give the set's documents the titles of `mode`, re-embedding the chunks whose context changed."""
    from documents.models import Document
    from retrieval.indexing.context import chunk_context_rebuild

    changed = []
    documents = Document.objects.in_bulk(ids)
    for article, document in zip(articles, (documents[pk] for pk in ids)):
        title = title_for(article, document, mode)
        if document.title != title:
            Document.objects.filter(pk=document.pk).update(title=title)
            changed.append(document.pk)
    if changed:
        counts = chunk_context_rebuild(document_ids=changed)
        print(f"titles ({mode}): {len(changed)} documents renamed, {counts.changed} chunks re-embedded "
              f"({counts.reused} from the cache)", file=sys.stderr)


def _question_vectors(texts: list[str]) -> dict:
    """Every question embedded in one batched call by the default embedding server, by its id."""
    from retrieval.ai.clients import query_embedder_for
    from retrieval.selectors import default_embedding_server

    server = default_embedding_server()
    if server is None or not server.embedding_model or not texts:
        return {}
    return {server.pk: list(query_embedder_for(server).embed_queries(texts))}


def _capture_fts_scores() -> dict:
    """The full-text arm's own rank values of the current question (chunk id -> ts_rank), for --runs."""
    from retrieval.search import arms

    scores: dict = {}
    fts_arm = arms.fts_arm

    def capturing(**kwargs):
        hits = fts_arm(**kwargs)
        scores.update(hits)
        return hits

    arms.fts_arm = capturing
    return scores


def _reuse_query_vectors(path: Path) -> None:
    """Embed each question once across runs: the retriever's query embedder reads this cache first."""
    from retrieval.search import request

    if path.exists():
        _VECTORS.update(json.loads(path.read_text()))
    embedder_for = request.query_embedder_for

    class Cached:
        def __init__(self, client):
            self.client = client

        def embed_queries(self, texts):
            missing = [t for t in texts if t not in _VECTORS]
            if missing:
                _VECTORS.update(zip(missing, (list(map(float, v)) for v in self.client.embed_queries(missing))))
            return [_VECTORS[t] for t in texts]

    request.query_embedder_for = lambda server: Cached(embedder_for(server))


def score(runs: list[dict], arm: str) -> dict:
    """hit@1, hit@5 and MRR@10 of one list of every run."""
    hit1 = hit5 = mrr = 0.0
    for run in runs:
        good = set(run["good"])
        rank = next((i for i, key in enumerate(run[arm][:10], start=1) if key in good), None)
        hit1 += rank == 1
        hit5 += rank is not None and rank <= 5
        mrr += 1 / rank if rank else 0
    n = max(1, len(runs))
    return {"hit@1": round(hit1 / n, 4), "hit@5": round(hit5 / n, 4), "mrr@10": round(mrr / n, 4)}


if __name__ == "__main__":
    main()
