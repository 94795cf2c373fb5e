"""Evaluate retrieval on a SQuAD-format file (e.g. ../shared/data/xquad/xquad.en.json), on real files with
document-, page- and passage-level gold (--gold FILE --files DIR, retrieval/gold_evaluation.py), or on a
dialogue set (bench/sets/dialogues/dialogues.jsonl: follow-up questions searched as typed, rewritten, and
as a person rewrote them)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand

from documents.chunking import STRATEGIES
from retrieval import dialogue_evaluation, evaluation, gold_evaluation
from retrieval.models import AiServer

SETS = Path(__file__).resolve().parents[3] / "bench" / "sets"


class Command(BaseCommand):
    help = (gettext_lazy("Ingest the articles of a SQuAD-format file for an evaluation user (reused on later runs), ask its "
            "questions (or another language's, with --questions) and print hit@1, hit@5 and MRR@k per arm."))

    def add_arguments(self, parser):
        parser.add_argument("--squad", type=Path, help=gettext("Articles (and questions) in SQuAD v1.1 format"))
        parser.add_argument("--dialogues", type=Path, nargs="?", const=SETS / "dialogues" / "dialogues.jsonl",
                            help=gettext("Evaluate a dialogue set instead (default bench/sets/dialogues/dialogues.jsonl): "
                                 "each turn searched as typed, with the follow-up rewrite and as the set rewrote it"))
        parser.add_argument("--passages", type=Path, default=SETS / "czech_retrieval" / "passages.jsonl",
                            help=gettext("The dialogue set's passages (JSONL: id, title, text)"))
        parser.add_argument("--rewrite-server", metavar="SERVER",
                            help=gettext("With --dialogues: also rewrite follow-ups with this chat server (by name)"))
        parser.add_argument("--rewrite-timeout", type=float, default=8.0,
                            help=gettext("Seconds the chat server has for one rewrite (then the heuristic is used)"))
        parser.add_argument("--gold", type=Path, help=gettext("Questions with document/page/passage gold (JSONL; see "
                                                      "docs/evaluation.md), asked over the files of --files"))
        parser.add_argument("--files", type=Path, help=gettext("With --gold: the folder holding the gold documents' files"))
        parser.add_argument("--questions", type=Path, help=gettext("Ask these questions instead (same ids, another language)"))
        parser.add_argument("--k", type=int, default=10)
        parser.add_argument("--arms", default="vector,fts,hybrid")
        parser.add_argument("--limit", type=int, help=gettext("Only the first N questions"))
        parser.add_argument("--articles", type=int, help=gettext("Only the first N articles"))
        parser.add_argument("--json", action="store_true", help=gettext("Print only the JSON result"))
        parser.add_argument("--rerank", nargs="?", const="", metavar="SERVER",
                            help=gettext("Add the arm hybrid+rerank: hybrid reranked by the settings' rerank server, or by "
                                 "the AI server of this name"))
        parser.add_argument("--strategy", choices=STRATEGIES,
                            help=gettext("Chunking strategy of the evaluation documents (default: the retrieval settings'); "
                                 "each strategy has its own evaluation user and documents"))

    def handle(self, *args, squad, questions, k, arms, limit, articles, json: bool, strategy=None, **options):
        if options.get("dialogues"):
            return self._dialogues(options["dialogues"], options["passages"], k=k, json=json, strategy=strategy,
                                   server_name=options.get("rewrite_server"),
                                   timeout=options.get("rewrite_timeout") or 8.0, limit=limit)
        if (squad is None) == (options.get("gold") is None):
            raise CommandError(gettext("Give either --squad FILE or --gold FILE --files DIR (document-, page- and "
                                       "passage-level gold), or --dialogues [FILE] (a dialogue set)."))
        if options.get("gold") is not None:
            return self.handle_gold(options["gold"], options.get("files"), k=k, arms=arms, limit=limit, json=json,
                                    strategy=strategy)
        if not squad.exists():
            raise CommandError(gettext("%(path)s does not exist (the XQuAD sets are in ../shared/data/xquad on the "
                                       "project's machines; any SQuAD v1.1 file works).") % {"path": squad})
        wanted = [a.strip() for a in arms.split(",") if a.strip()]
        unknown = set(wanted) - set(evaluation.ARMS)
        if unknown:
            raise CommandError(gettext("Unknown arms: %(arms)s; use vector, fts, hybrid.")
                               % {"arms": ", ".join(sorted(unknown))})
        log = (lambda msg: print(msg, file=sys.stderr)) if json else self.stdout.write
        rerank_server = None
        if options["rerank"] is not None:  # checked before the slow ingest
            try:
                rerank_server = evaluation.rerank_server_for_evaluation(options["rerank"])
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        data = evaluation.load_squad(squad)[:articles] if articles else evaluation.load_squad(squad)
        label = squad.stem
        strategy = strategy or evaluation.default_strategy()
        started = time.monotonic()
        evaluation.recover_interrupted(log=log)
        failed: list[dict] = []
        ids = evaluation.ingest_articles(data, label=label, log=log, strategy=strategy, failed=failed)
        left_out = {f["number"] for f in failed}
        data = [article for number, article in enumerate(data) if number not in left_out]
        ingest_s = time.monotonic() - started
        texts = None
        if questions:
            texts = {qa["id"]: qa["question"] for article in evaluation.load_squad(questions)
                     for p in article["paragraphs"] for qa in p["qas"]}
        asked = evaluation.questions_for(data, ids, texts)
        if limit:
            asked = asked[:limit]
        user = get_user_model().objects.get(username=evaluation.eval_username(strategy))
        results = evaluation.evaluate(user, evaluation.eval_scope(user, ids), asked, k=k,
                                      arms={name: evaluation.ARMS[name] for name in wanted}, log=log,
                                      rerank_server=rerank_server)
        results["_run"] = {"documents": squad.name, "questions": (questions or squad).name, "articles": len(ids),
                           "k": k, "ingest_seconds": round(ingest_s, 1),
                           "eval_seconds": round(time.monotonic() - started - ingest_s, 1),
                           "strategy": strategy, "failed": failed, **evaluation.strategies_used(ids)}
        self.stdout.write(__import__("json").dumps(results, indent=None if json else 2))

    def _dialogues(self, path: Path, passages_path: Path, *, k: int, json: bool, strategy, server_name, timeout,
                   limit) -> None:
        for needed in (path, passages_path):
            if not needed.exists():
                raise CommandError(gettext("%(path)s does not exist (the development sets are in bench/sets/).")
                                   % {"path": needed})
        server = None
        if server_name:  # checked before the slow ingest
            server = AiServer.objects.filter(name=server_name, is_active=True).first()
            if server is None or not server.can("chat"):
                names = ", ".join(AiServer.objects.filter(is_active=True, capabilities__chat=True)
                                  .values_list("name", flat=True)) or gettext("none")
                raise CommandError(gettext("No active chat server is named '%(name)s' (chat servers: %(names)s).")
                                   % {"name": server_name, "names": names})
        log = (lambda msg: print(msg, file=sys.stderr)) if json else self.stdout.write
        dialogues = dialogue_evaluation.load_dialogues(path)[:limit] if limit else \
            dialogue_evaluation.load_dialogues(path)
        strategy = strategy or evaluation.default_strategy()
        started = time.monotonic()
        evaluation.recover_interrupted(log=log)
        failed: list[dict] = []
        documents = dialogue_evaluation.ingest_passages(dialogue_evaluation.load_passages(passages_path), log=log,
                                                        strategy=strategy, failed=failed)
        ingest_s = time.monotonic() - started
        user = get_user_model().objects.get(username=evaluation.eval_username(strategy))
        results = dialogue_evaluation.evaluate_dialogues(user, documents, dialogues, k=k, rewrite_server=server,
                                                         timeout=timeout, log=log)
        results["_run"] = {"dialogues": path.name, "passages": passages_path.name, "dialogue_count": len(dialogues),
                           "turns": sum(len(d.turns) for d in dialogues), "k": k, "arms": "hybrid",
                           "rewrite_server": server_name, "ingest_seconds": round(ingest_s, 1),
                           "eval_seconds": round(time.monotonic() - started - ingest_s, 1), "strategy": strategy,
                           "failed": failed}
        self.stdout.write(__import__("json").dumps(results, indent=None if json else 2))

    def handle_gold(self, gold: Path, files: Path | None, *, k: int, arms: str, limit: int | None, json: bool,
                    strategy: str | None) -> None:
        if files is None or not files.is_dir():
            raise CommandError(gettext("--gold needs --files DIR: the folder holding the files its gold_documents "
                                       "name (for the long-document set: python bench/long_documents.py build)."))
        if not gold.exists():
            raise CommandError(gettext("%(path)s does not exist.") % {"path": gold})
        try:
            asked = gold_evaluation.load_gold(gold)
        except gold_evaluation.GoldFormatError as exc:
            raise CommandError(str(exc)) from exc
        missing = gold_evaluation.missing_files(asked, files)
        if missing:
            raise CommandError(gettext("%(count)s gold documents are not in %(folder)s: %(names)s")
                               % {"count": len(missing), "folder": files, "names": ", ".join(missing[:5])})
        wanted = [a.strip() for a in arms.split(",") if a.strip()]
        unknown = set(wanted) - set(evaluation.ARMS)
        if unknown:
            raise CommandError(gettext("Unknown arms: %(arms)s; use vector, fts, hybrid.")
                               % {"arms": ", ".join(sorted(unknown))})
        if limit:
            asked = asked[:limit]
        log = (lambda msg: print(msg, file=sys.stderr)) if json else self.stdout.write
        strategy = strategy or evaluation.default_strategy()
        started = time.monotonic()
        # Every file of the folder is searched: the ones no question names are the distractors.
        evaluation.recover_interrupted(log=log)
        failed: list[dict] = []
        ids = gold_evaluation.ingest_files(gold_evaluation.folder_files(files), log=log, strategy=strategy,
                                           failed=failed)
        ingest_s = time.monotonic() - started
        located, pages = gold_evaluation.locate(asked, ids)
        user = get_user_model().objects.get(username=evaluation.eval_username(strategy))
        results = gold_evaluation.evaluate_gold(user, evaluation.eval_scope(user, list(ids.values())), located, pages,
                                                k=k, arms={name: evaluation.ARMS[name] for name in wanted}, log=log)
        results["_run"] = {"questions": gold.name, "n": len(asked), "k": k, "ingest_seconds": round(ingest_s, 1),
                           "eval_seconds": round(time.monotonic() - started - ingest_s, 1), "strategy": strategy,
                           "documents": gold_evaluation.documents_summary(ids),
                           "evidence_not_found": gold_evaluation.unlocated(located), "failed": failed,
                           **evaluation.strategies_used(list(ids.values()))}
        self.stdout.write(__import__("json").dumps(results, indent=None if json else 2))
