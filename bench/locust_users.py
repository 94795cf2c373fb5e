"""The simulated users of bench/load.py, run with locust in a process of their own (locust patches
the standard library with gevent, which the orchestrating process must not have).

Each user, once: uploads a small document on "its" web node, waits until it is indexed (asking
the other web node), asks a question on its node and reads the streamed answer from the other
node (server-sent events), checking the joined text is exactly the scripted answer. Timings are
reported as locust "requests" of type METRIC, so locust's statistics give their percentiles.

Input (environment): LOAD_CONFIG = JSON {"web": [url, url], "tokens": [...], "answer": str,
"timeout": seconds}. Output: one JSON object on stdout.
"""
from __future__ import annotations

import itertools
import json
import os
import sys
import time

from gevent import monkey

monkey.patch_all()

import gevent  # noqa: E402
from locust import HttpUser, constant, events, task  # noqa: E402
from locust.env import Environment  # noqa: E402

CONFIG = json.loads(os.environ["LOAD_CONFIG"])
_numbers = itertools.count()
finished: list[dict] = []


def metric(name: str, started: float, exception: Exception | None = None) -> None:
    events.request.fire(request_type="METRIC", name=name, response_time=(time.perf_counter() - started) * 1000,
                        response_length=0, exception=exception, context={})


class RagUser(HttpUser):
    wait_time = constant(0)
    host = CONFIG["web"][0]

    def on_start(self) -> None:
        self.number = next(_numbers)
        self.node = CONFIG["web"][self.number % 2]
        self.other = CONFIG["web"][(self.number + 1) % 2]
        self.client.headers["Authorization"] = f"Token {CONFIG['tokens'][self.number]}"

    done = False

    @task
    def once(self) -> None:
        if self.done:  # one scenario per user: it idles until the run ends (a stopped user would be replaced)
            gevent.sleep(1)
            return
        self.done = True
        outcome = {"user": self.number, "indexed": False, "exact": False, "problem": ""}
        try:
            self._scenario(outcome)
        except Exception as exc:  # counted, never hidden: the run reports it
            outcome["problem"] = f"{type(exc).__name__}: {exc}"
            metric("scenario", time.perf_counter(), exc)
        finally:
            finished.append(outcome)

    def _scenario(self, outcome: dict) -> None:
        text = "\n\n".join(f"Note {self.number}.{i}: the inspection interval of crane {self.number} is "
                           f"{7 + i} days, recorded by the load test." for i in range(8))
        started = time.perf_counter()
        with self.client.post(f"{self.node}/api/documents/", name="POST /api/documents/",
                              files={"file": (f"load-{self.number}.txt", text.encode(), "text/plain")},
                              catch_response=True) as response:
            if response.status_code != 201:
                response.failure(f"upload answered {response.status_code}")
                outcome["problem"] = f"upload answered {response.status_code}"
                return
            document_id = response.json()["id"]
        deadline = time.monotonic() + CONFIG["timeout"]
        while time.monotonic() < deadline:
            document = self.client.get(f"{self.other}/api/documents/{document_id}/",
                                       name="GET /api/documents/{id}/").json()
            status = document["status"]
            if status in ("indexed", "failed"):
                break
            gevent.sleep(0.25)
        if status != "indexed":
            metric("upload→indexed", started, RuntimeError(f"document ended {status}"))
            outcome["problem"] = f"document {status}: {document.get('index_error', '')}"
            return
        metric("upload→indexed", started)
        outcome["indexed"] = True

        conversation = self.client.post(f"{self.node}/api/conversations/", json={"title": "load"},
                                        name="POST /api/conversations/").json()
        self.client.post(f"{self.node}/api/conversations/{conversation['id']}/documents/",
                         json={"document_id": document_id}, name="POST /api/conversations/{id}/documents/")
        asked = time.perf_counter()
        posted = self.client.post(f"{self.node}/api/conversations/{conversation['id']}/messages/",
                                  json={"content": f"How often is crane {self.number} inspected?"},
                                  name="POST /api/conversations/{id}/messages/").json()
        message_id = posted["assistant_message"]["id"]
        stream = f"{self.other}/api/conversations/{conversation['id']}/messages/{message_id}/stream/"
        answer, first, final = "", False, None
        with self.client.get(stream, name="GET …/stream/ (SSE)", stream=True, timeout=CONFIG["timeout"],
                             catch_response=True) as response:
            for raw in response.iter_lines():
                line = raw.decode() if isinstance(raw, bytes) else raw
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if event["type"] == "token" and event["message_id"] == message_id:
                    if not first and event["delta"]:
                        metric("question→first token", asked)
                        first = True
                    if event["offset"] != len(answer):  # a gap or a repeat: exactly what must never happen
                        response.failure(f"token at offset {event['offset']}, {len(answer)} characters known")
                        outcome["problem"] = "gap or repeat"
                        return
                    answer += event["delta"]
                elif event["type"] == "message.status_updated" and event["message"]["status"] in ("done", "failed"):
                    final = event["message"]["status"]
                    if not answer and not first:
                        # Answered before the stream was opened: the stream starts with the final
                        # state, whose content is the whole answer (chat/sse.py).
                        answer = event["message"]["content"]
                        metric("question→first token", asked)
                        first = True
                    break
            if final != "done" or answer != CONFIG["answer"]:
                response.failure(f"answer {final}: {len(answer)} of {len(CONFIG['answer'])} characters")
                outcome["problem"] = f"answer {final}: {len(answer)} of {len(CONFIG['answer'])} characters"
                return
            response.success()
        outcome["exact"] = True


def main() -> int:
    users = len(CONFIG["tokens"])
    env = Environment(user_classes=[RagUser], events=events)
    runner = env.create_local_runner()
    started = time.perf_counter()
    runner.start(users, spawn_rate=users)
    deadline = time.monotonic() + CONFIG["timeout"] + 30
    while len(finished) < users and time.monotonic() < deadline:
        gevent.sleep(0.2)
    elapsed = time.perf_counter() - started
    runner.quit()
    stats = env.stats

    def timing(name: str) -> dict:
        entry = stats.get(name, "METRIC")
        if not entry.num_requests:
            return {"count": 0}
        return {"count": entry.num_requests, "p50_ms": round(entry.get_response_time_percentile(0.5)),
                "p95_ms": round(entry.get_response_time_percentile(0.95)), "max_ms": round(entry.max_response_time)}

    http = [e for (name, kind), e in stats.entries.items() if kind != "METRIC"]
    result = {
        "users": users, "finished": len(finished), "elapsed_s": round(elapsed, 2),
        "http_requests": sum(e.num_requests for e in http),
        "requests_per_s": round(sum(e.num_requests for e in http) / elapsed, 1),
        "errors": sum(e.num_failures for e in stats.entries.values()),
        "error_messages": sorted({str(e.error) for e in stats.errors.values()})[:10],
        "upload_to_indexed": timing("upload→indexed"),
        "question_to_first_token": timing("question→first token"),
        "answers_exact": sum(1 for o in finished if o["exact"]),
        "problems": sorted({o["problem"] for o in finished if o["problem"]})[:10],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
