"""What the gap inbox's batch run costs for a burst, with and without the answer path's vectors: JSON.

    python bench/gaps_cpu.py [--questions 200] [--rounds 3] [--json-out FILE]

On a throw-away ragsite (bench/common.py's BenchSite) with the built-in embedding model
(multilingual-e5-small, in this process), no worker: the burst of bench/gaps.py (the questions
after its first ten) becomes finished, refused answers waiting in GapPending, as `gap_wanted` leaves
them, and `chat.gaps.gap_inbox_run()` records them all here, timed by this process's CPU time (every
thread of it, the embedder's included: the machine's load does not hide a regression) and by the
clock. Two ways, alternated `--rounds` times on fresh groups:

- `embedded_by_the_inbox`: the waiting rows carry no vector (before: the run embeds every question);
- `vectors_reused`: each row carries its question's vector, embedded beforehand as the answer path
  does for retrieval (not counted: that call was paid by the answer), so the run only groups.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gaps import SINGLES, choose
from bench.setdata import load_approved_qa


def run(questions: list[str], *, rounds: int) -> dict:
    from django.contrib.auth import get_user_model

    from chat.gaps import gap_inbox_run
    from chat.models import Conversation, GapGroup, GapPending, GapQuestion, Message, MessageRole
    from retrieval.ai.clients import query_embedder_for
    from retrieval.knowledge.calibrating import embedding_model_calibrate
    from retrieval.selectors import default_embedding_server
    from retrieval.vectors import embedding_model_ensure

    client = query_embedder_for(default_embedding_server())
    model = embedding_model_ensure(name=client.model, dim=len(client.embed_queries(["warm up"])[0]))
    embedding_model_calibrate(model_id=model.pk)
    owner = get_user_model().objects.create_user("asker", password="x")
    answers = []
    for text in questions:
        conversation = Conversation.objects.create(owner=owner, category="")
        Message.objects.create(conversation=conversation, role=MessageRole.USER, content=text)
        answers.append(Message.objects.create(conversation=conversation, role=MessageRole.ASSISTANT,
                                              content="I cannot answer that from the documents.",
                                              metadata={"mode": "refused", "retrieval": {"question_language": ""}}))
    vectors = client.embed_queries([text.strip() for text in questions])  # what the answer path embedded

    def burst(reuse: bool) -> dict:
        GapQuestion.objects.all().delete()
        GapGroup.objects.all().delete()
        GapPending.objects.bulk_create([
            GapPending(answer=answer, embedding=vector if reuse else None, embedding_model=client.model if reuse else "")
            for answer, vector in zip(answers, vectors)])
        cpu, wall = time.process_time(), time.perf_counter()
        outcomes = gap_inbox_run()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        assert list(outcomes.values()).count("grouped") == len(answers), outcomes
        return {"cpu_s": cpu, "wall_s": wall, "groups": GapGroup.objects.count()}

    runs: dict[str, list[dict]] = {"embedded_by_the_inbox": [], "vectors_reused": []}
    for _ in range(rounds):
        runs["embedded_by_the_inbox"].append(burst(reuse=False))
        runs["vectors_reused"].append(burst(reuse=True))
    result: dict = {"questions": len(questions), "rounds": rounds}
    for name, rows in runs.items():
        result[name] = {"cpu_seconds_median": round(statistics.median(r["cpu_s"] for r in rows), 3),
                        "cpu_seconds": [round(r["cpu_s"], 3) for r in rows],
                        "wall_seconds_median": round(statistics.median(r["wall_s"] for r in rows), 3),
                        "groups": sorted({r["groups"] for r in rows})}
    result["cpu_ratio_reused_to_embedded"] = round(result["vectors_reused"]["cpu_seconds_median"]
                                                   / result["embedded_by_the_inbox"]["cpu_seconds_median"], 3)
    return result


def main(argv=None) -> int:
    from bench.common import BenchSite, json_report, machine_info

    p = argparse.ArgumentParser(prog="bench/gaps_cpu.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json-out")
    args = p.parse_args(argv)
    burst = [q.question for q in choose(load_approved_qa().questions, args.questions)[SINGLES:]]
    load_before = os.getloadavg()[0]
    with BenchSite(prefix="ragsite-bench-gaps-cpu-"):
        result = run(burst, rounds=args.rounds)
    result.update({"set": "bench/sets/approved_qa", "load_average_1min": {"before": round(load_before, 2),
                   "after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}, "machine": machine_info()})
    json_report(result, args.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
