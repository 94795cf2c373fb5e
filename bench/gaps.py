"""The gap inbox groups questions by meaning, in any language, and shows them quickly (issue #34): JSON.

    python bench/gaps.py [--questions 200] [--json-out FILE] [--keep] [--reuse-vectors]

On a throw-away ragsite (bench/common.py's BenchSite) with the built-in embedding model
(multilingual-e5-small), calibrated on its shipped unrelated questions (never this set), and a real
django-q2 worker (`manage.py qcluster`, the default cluster):

1. About 200 questions from bench/sets/approved_qa: every paraphrase and cross-language question of
   the first pairs (by id) -- the same question in several wordings and languages, so one known
   group per pair -- then near misses and unrelated questions, each a group of its own.
2. Each becomes a finished, refused answer in a conversation of its own (as the orchestrator leaves
   one) and `chat.gaps.gap_check_wanted` queues its task, as the orchestrator does.
3. Time to appear: from the queueing to its question's row in a group, per question (the worker
   embeds it and groups it; the inbox reads the rows) -- ten questions one at a time (the usual
   case), then the rest at once (a burst: the first task run takes every waiting question, a
   batch at a time). Beside it, the floor: the burst's questions embedded in one call in this
   process, and the machine's load average (other work on the machine slows both alike).
4. Grouping quality: pairwise precision and recall of "same group" against the known groups, overall
   and for the pairs of questions in two different languages.

Nothing is tuned to the set: the grouping distance is the model's calibrated one (chat/gaps.py).
"""
from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.setdata import QAQuestion, load_approved_qa

REPO = Path(__file__).resolve().parent.parent
SINGLES = 11  # queued one at a time (the first warms the worker up and is not counted)


def choose(questions: list[QAQuestion], total: int) -> list[QAQuestion]:
    """~80 % same-meaning questions (whole groups, by pair id), the rest near misses and unrelated ones."""
    by_pair: dict[str, list[QAQuestion]] = {}
    for question in questions:
        if question.kind in ("paraphrase", "cross_language") and question.pair_id:
            by_pair.setdefault(question.pair_id, []).append(question)
    chosen: list[QAQuestion] = []
    for pair_id in sorted(by_pair):
        if len(chosen) + len(by_pair[pair_id]) > total * 0.8:
            break
        chosen.extend(by_pair[pair_id])
    others = [q for q in questions if q.kind in ("near_miss", "unrelated")]
    singles = [q for q in others if q.kind == "near_miss"][: (total - len(chosen)) // 2]
    singles += [q for q in others if q.kind == "unrelated"][: total - len(chosen) - len(singles)]
    return chosen + singles


def truth_of(question: QAQuestion) -> str:
    """Its known group: the pair it asks about, or itself."""
    return question.pair_id if question.kind in ("paraphrase", "cross_language") and question.pair_id else question.id


def pairwise(items: list[tuple[str, str, int]], *, cross_language_only: bool = False) -> dict:
    """Precision and recall of "same group" over every two questions: items are (truth, lang, group)."""
    tp = fp = fn = 0
    for (t1, l1, g1), (t2, l2, g2) in itertools.combinations(items, 2):
        if cross_language_only and l1 == l2:
            continue
        same_truth, same_group = t1 == t2, g1 == g2
        tp += same_truth and same_group
        fp += same_group and not same_truth
        fn += same_truth and not same_group
    return {"precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None,
            "true_pairs": tp + fn, "grouped_pairs": tp + fp}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 3)


def summary(values: list[float]) -> dict:
    if not values:
        return {}
    return {"n": len(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95),
            "max": round(max(values), 3)}


def run(chosen: list[QAQuestion], *, worker_timeout: float, reuse_vectors: bool = False) -> dict:
    from django.contrib.auth import get_user_model

    from chat.gaps import gap_check_wanted, grouping_distance
    from chat.models import Conversation, GapGroup, GapQuestion, Message, MessageRole
    from retrieval.ai.clients import query_embedder_for
    from retrieval.knowledge.calibrating import distance_bounds, embedding_model_calibrate
    from retrieval.selectors import default_embedding_server, retrieval_settings_get
    from retrieval.vectors import embedding_model_ensure

    client = query_embedder_for(default_embedding_server())
    model = embedding_model_ensure(name=client.model, dim=len(client.embed_queries(["warm up"])[0]))
    model = embedding_model_calibrate(model_id=model.pk)
    calibration = model.calibration
    threshold = grouping_distance(distance_bounds(model, retrieval_settings_get()))
    users = [get_user_model().objects.create_user(f"asker-{i}", password="x") for i in range(10)]
    answers = []
    for index, question in enumerate(chosen):
        conversation = Conversation.objects.create(owner=users[index % len(users)], category="")
        Message.objects.create(conversation=conversation, role=MessageRole.USER, content=question.question)
        answers.append(Message.objects.create(conversation=conversation, role=MessageRole.ASSISTANT,
                                              content="I cannot answer that from the documents.",
                                              metadata={"mode": "refused", "retrieval": {"question_language": question.lang}}))
    queued_at: dict[int, float] = {}
    appeared: dict[int, float] = {}
    # --reuse-vectors: each answer hands its question's vector to the inbox, as the answer path does
    # (embedded here beforehand, as retrieval did; not timed).
    given = dict(zip((a.pk for a in answers), client.embed_queries([q.question.strip() for q in chosen]))) \
        if reuse_vectors else {}

    def send(batch: list) -> None:
        for answer in batch:  # outside a transaction: each task is sent at once
            queued_at[answer.pk] = time.monotonic()
            vector = given.get(answer.pk)
            gap_check_wanted(answer, question_vector=(client.model, list(vector)) if vector is not None else None)

    def wait(batch: list, timeout: float) -> None:
        wanted = {a.pk for a in batch}
        deadline = time.monotonic() + timeout
        while not wanted <= set(appeared) and time.monotonic() < deadline:
            now = time.monotonic()
            for answer_id in (GapQuestion.objects.filter(answer_id__in=wanted - set(appeared))
                              .values_list("answer_id", flat=True)):
                appeared[answer_id] = now - queued_at[answer_id]
            time.sleep(0.05)

    # One at a time first (a question now and then, the usual case; the first warms the worker up),
    # then the rest at once (a burst: every task waits for the ones before it).
    singles = answers[:SINGLES]
    for answer in singles:
        send([answer])
        wait([answer], worker_timeout)
    one_at_a_time = [appeared[a.pk] for a in singles[1:] if a.pk in appeared]
    load_before = os.getloadavg()
    send(answers[SINGLES:])
    wait(answers[SINGLES:], worker_timeout)
    burst = [appeared[a.pk] for a in answers[SINGLES:] if a.pk in appeared]
    load_after = os.getloadavg()
    # The floor: the same questions embedded in one call here, on the same loaded machine, just after.
    t0 = time.monotonic()
    client.embed_queries([q.question for q in chosen[SINGLES:]])
    embed_alone = time.monotonic() - t0
    group_of = dict(GapQuestion.objects.values_list("answer_id", "group_id"))
    items = [(truth_of(q), q.lang, group_of.get(a.pk, -a.pk)) for q, a in zip(chosen, answers)]
    latencies = list(appeared.values())
    return {
        "questions": len(chosen),
        "question_vectors": "reused from the answer path" if reuse_vectors else "embedded by the inbox",
        "kinds": {kind: sum(q.kind == kind for q in chosen) for kind in sorted({q.kind for q in chosen})},
        "languages": sorted({q.lang for q in chosen}),
        "known_groups": len({truth_of(q) for q in chosen}),
        "groups_made": GapGroup.objects.count(),
        "grouping_distance": round(threshold, 4),
        "calibration": calibration,
        "pairwise": pairwise(items),
        "pairwise_cross_language": pairwise(items, cross_language_only=True),
        "appeared": len(appeared),
        "seconds_to_appear_one_at_a_time": summary(one_at_a_time),
        "seconds_to_appear_in_a_burst": {**summary(burst), "questions": len(answers) - SINGLES},
        "seconds_to_embed_the_burst_alone": round(embed_alone, 3),
        "load_average_1min": {"before_burst": round(load_before[0], 2), "after_burst": round(load_after[0], 2),
                              "cpus": os.cpu_count()},
        "all_within_60_s": len(appeared) == len(answers) and max(latencies) <= 60,
    }


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/gaps.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--timeout", type=float, default=900, help="seconds to wait for the worker")
    p.add_argument("--json-out")
    p.add_argument("--keep", action="store_true", help="keep the temporary database and folder")
    p.add_argument("--reuse-vectors", action="store_true",
                   help="hand each question's vector to the inbox, as the answer path does")
    return p.parse_args(argv)


def main(argv=None) -> int:
    from bench.common import BenchSite, json_report, log, machine_info

    args = parse_args(argv)
    chosen = choose(load_approved_qa().questions, args.questions)
    with BenchSite(keep=args.keep, prefix="ragsite-bench-gaps-") as site:
        assert site.tmp is not None
        with open(site.tmp / "worker.log", "wb") as worker_log:
            worker = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO, env=site.child_env(),
                                      stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                t0 = time.monotonic()
                result = run(chosen, worker_timeout=args.timeout, reuse_vectors=args.reuse_vectors)
                log(f"{len(chosen)} questions grouped ({time.monotonic() - t0:.1f} s)")
            finally:
                worker.terminate()
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()
    result.update({"set": "bench/sets/approved_qa", "machine": machine_info()})
    json_report(result, args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
