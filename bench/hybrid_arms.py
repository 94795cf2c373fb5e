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

`--gold FILE --files DIR` asks an `eval_retrieval --gold` set (FinanceBench, the Czech articles, the
long documents) over its folder's files instead (ingested and reused by sha256 as that command does).
In either form `--runs` writes the fusion's own inputs (each arm's list as retrieve() fused it, the
weights it used, the vector distances and full-text rank values), the candidates' positions (document,
chunk index, section, offsets; pages for `--gold`) and each question's gold, so bench/fusion_offline.py
re-fuses, joins neighbours and scores exactly as `eval_retrieval` does (k = 10).
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
    source.add_argument("--gold", type=Path, help="An eval_retrieval --gold file (with --files)")
    parser.add_argument("--files", type=Path, help="The folder the --gold questions are asked over")
    parser.add_argument("--questions", type=Path,
                        help="Ask this SQuAD file's questions (same ids) instead of --squad's: cross-lingual")
    parser.add_argument("--articles", type=int, default=0, help="Only the first N articles (SQuAD)")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N questions")
    parser.add_argument("--runs", type=Path, help="Also write every question's lists here (JSON)")
    parser.add_argument("--k", type=int, default=10, help="Passages retrieve() returns (eval_retrieval's k)")
    parser.add_argument("--query-vectors", type=Path,
                        help="Keep the questions' embeddings in this file and reuse them on later runs (the "
                             "full-text analysis and the fusion change between runs, the embedder does not)")
    parser.add_argument("--titles", choices=("set", "file", "humanised", "none", "keep"), default="set",
                        help="The documents' titles (module docstring); `file` reproduces the figures before; "
                             "`keep` leaves the indexed documents as they are (as eval_retrieval asks them)")
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
    if args.gold:
        label, ids, asked, extra = _gold_questions(args)
    else:
        label, ids, asked, extra = _squad_questions(args, evaluation, search_vectors_rebuild)
    if args.limit:
        asked = asked[:args.limit]
    if args.query_vectors:
        _reuse_query_vectors(args.query_vectors)
    user = get_user_model().objects.get(username=evaluation.eval_username())
    scope = evaluation.eval_scope(user, ids)
    vectors = {} if args.query_vectors else _question_vectors([text for text, _ in asked])
    capture = _Capture()
    runs, languages, decisions = [], Counter(), Counter()
    for number, (text, gold) in enumerate(asked):
        capture.clear()
        result = retrieve(user, text, scope, k=args.k, rerank=False,
                          query_vectors={pk: v[number] for pk, v in vectors.items()})
        tier = result.trace["tiers"][-1] if result.trace["tiers"] else {}
        languages[result.trace.get("question_language") or "-"] += 1
        decisions["vector lowered" if tier.get("vector_weight_lowered")
                  else "fts lowered" if tier.get("fts_weight_lowered") else "none"] += 1
        runs.append(capture.run(text, gold, result.segments, tier))
    chunks = _chunk_positions({key for run in runs for key in (*run["vector"], *run["fts"], *run["hybrid"])})
    for run in runs:
        run["good"] = _good_chunks(run, chunks)
    if args.runs:
        args.runs.write_text(json.dumps({"set": label, "mode": "gold" if args.gold else "span", "k": args.k,
                                         "chunks": chunks, **extra, "runs": runs}))
    if args.query_vectors:
        args.query_vectors.write_text(json.dumps(_VECTORS))
    print(json.dumps({"set": label, "titles": args.titles, "analysis": args.analysis or "lemmas",
                      "asked": args.questions.stem if args.questions else label,
                      "questions": len(runs), "question_languages": dict(languages),
                      "fusion_decisions": dict(decisions),
                      "vector": score(runs, "vector"), "fts": score(runs, "fts"), "hybrid": score(runs, "hybrid")}))


def _squad_questions(args, evaluation, search_vectors_rebuild) -> tuple[str, list[int], list, dict]:
    """A SQuAD set (or the Czech set) ingested and retitled: its label, document ids, and
    [(question text, gold span {"document", "start", "end"})]."""
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
    asked = [(q.text, {"document": q.article, "start": q.answer_start, "end": q.answer_end})
             for q in evaluation.questions_for(data, ids, texts)]
    return label, ids, asked, {}


def _gold_questions(args) -> tuple[str, list[int], list, dict]:
    """An eval_retrieval --gold set over its folder: its label, document ids, [(question text, gold
    {"documents", "pages", "evidence"})] and {"pages": each document's [page, start, end] list}."""
    from retrieval import gold_evaluation

    if not args.files:
        raise SystemExit("--gold needs --files")
    ids = gold_evaluation.ingest_files(gold_evaluation.folder_files(args.files),
                                       log=lambda m: print(m, file=sys.stderr))
    located, pages = gold_evaluation.locate(gold_evaluation.load_gold(args.gold), ids)
    asked = [(item.question.question, {"documents": sorted(item.document_ids), "pages": sorted(item.pages),
                                       "evidence": list(item.evidence) if item.evidence else None})
             for item in located]
    return args.gold.parent.name if args.gold.name == "gold.jsonl" else args.gold.stem, \
        sorted(ids.values()), asked, {"pages": {str(d): p for d, p in pages.items()}}


class _Capture:
    """The fusion's inputs of the current question, read where retrieve() fuses them (document_tier.rrf and
    score_fusion, arms.vector_arm, arms.fts_arm wrapped): each arm's list, the weights used, distances, rank
    values."""

    def __init__(self) -> None:
        from retrieval.search import arms, document_tier

        self.lists: dict = {}
        self.weights: dict = {}
        self.distances: dict = {}
        self.fts_scores: dict = {}
        rrf, score_fusion = document_tier.rrf, document_tier.score_fusion
        vector_arm, fts_arm = arms.vector_arm, arms.fts_arm

        def capturing_rrf(lists, **kwargs):
            self.lists = {name: list(keys) for name, keys in lists.items()}
            self.weights = dict(kwargs.get("weights") or {})
            return rrf(lists, **kwargs)

        def capturing_scores(lists, **kwargs):
            self.lists = {name: [key for key, _ in pairs] for name, pairs in lists.items()}
            self.weights = dict(kwargs.get("weights") or {})
            return score_fusion(lists, **kwargs)

        def capturing_vector(**kwargs):
            hits, how = vector_arm(**kwargs)
            self.distances.update(dict(hits))
            return hits, how

        def capturing_fts(**kwargs):
            hits = fts_arm(**kwargs)
            self.fts_scores.update(hits)
            return hits

        document_tier.rrf, document_tier.score_fusion = capturing_rrf, capturing_scores
        arms.vector_arm, arms.fts_arm = capturing_vector, capturing_fts

    def clear(self) -> None:
        self.lists, self.weights = {}, {}
        self.distances.clear()
        self.fts_scores.clear()

    def run(self, text: str, gold: dict, segments: list, tier: dict) -> dict:
        vector = next((keys for name, keys in self.lists.items() if name.startswith("vector")), [])
        return {"question": text, "gold": gold, "vector": vector, "fts": self.lists.get("fts", []),
                "hybrid": [s["chunk_id"] for s in segments if s.get("chunk_id")],
                "distances": dict(self.distances), "fts_scores": dict(self.fts_scores),
                "coverage": tier.get("fts_coverage"),
                "weights": {"vector": next((w for n, w in self.weights.items() if n.startswith("vector")), None),
                            "fts": self.weights.get("fts")}}


def _chunk_positions(keys: set) -> dict:
    """{chunk id: [document id, chunk index, heading path, start offset, end offset]} of the candidates."""
    from documents.models import Chunk

    rows = Chunk.objects.filter(pk__in=keys).values_list("pk", "document_id", "chunk_index", "heading_path",
                                                        "start_offset", "end_offset")
    return {str(pk): [doc, index, list(path or []), start, end] for pk, doc, index, path, start, end in rows}


def _good_chunks(run: dict, chunks: dict) -> list:
    """The candidates that hold the gold alone (no neighbour): the answer span, or a gold page's text."""
    gold, good = run["gold"], []
    for key in {*run["vector"], *run["fts"], *run["hybrid"]}:
        doc, _, _, start, end = chunks[str(key)]
        if "start" in gold:
            ok = doc == gold["document"] and start <= gold["start"] and gold["end"] <= end
        else:
            evidence = gold.get("evidence")
            ok = bool(evidence) and doc == evidence[0] and (min(evidence[2], end) - max(evidence[1], start)) * 2 \
                >= evidence[2] - evidence[1]
        if ok:
            good.append(key)
    return good


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
    if mode == "keep":
        return
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
