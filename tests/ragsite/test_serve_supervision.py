"""`manage.py serve` (what `make run` runs) supervises its processes: a killed worker is restarted with
back-off while the web server keeps answering, and nothing uploaded around the kill is lost (issue #29:
`kill -9` of the indexing worker made serve stop everything and exit)."""
from __future__ import annotations

import json
import os
import re
import signal
import time
import urllib.error
import urllib.request

import pytest

from documents.models import Document
from retrieval.models import AiServer, RetrievalSettings
from tests.processes import ManagedProcess, wait_for
from tests.seaweed import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def _get(url: str) -> int | None:
    """The status of a GET, None when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def _upload(base: str, token: str, name: str, text: str) -> int:
    boundary = "ragsite-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n{text}\r\n--{boundary}--\r\n").encode()
    request = urllib.request.Request(f"{base}/api/documents/", data=body, method="POST", headers={
        "Authorization": f"Token {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 201
        return json.loads(response.read())["id"]


def _pids(serve: ManagedProcess, name: str) -> list[int]:
    return [int(p) for p in re.findall(rf"Started the {name} process \(pid (\d+)\)", serve.log())]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not open(f"/proc/{pid}/stat").read().split(") ")[1].startswith("Z")


def test_a_killed_worker_is_restarted_and_nothing_is_lost(user, fake_ai, database_url):
    from identity.tokens import token_create

    server = AiServer.objects.create(name="fake", kind="openai", base_url=fake_ai.url,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server)
    token = token_create(user=user, name="test").key
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = ManagedProcess(["manage.py", "serve", "--port", str(port)], database_url=database_url, name="serve",
                           env={"INDEX_LEASE_SECONDS": "5", "INDEX_RECOVERY_INTERVAL": "2"})
    serve.start()
    try:
        wait_for(lambda: _get(f"{base}/healthz") == 200, timeout=180, what="serve healthy", process=serve)
        [worker] = _pids(serve, "worker")
        [web] = _pids(serve, "web")
        [chat] = _pids(serve, "chat worker")
        text = "\n\n".join(f"Paragraph {i}: the supervised worker indexes this." for i in range(30))
        before = _upload(base, token, "before.txt", text)
        os.kill(worker, signal.SIGKILL)
        killed_at = time.monotonic()
        after = _upload(base, token, "after.txt", text + "\n\nUploaded while the worker was dead.")
        answered = []
        while len(_pids(serve, "worker")) < 2:
            assert time.monotonic() - killed_at < 120, f"worker not restarted within 120 s:\n{serve.log()[-3000:]}"
            answered.append(_get(f"{base}/healthz"))
            time.sleep(0.2)
        restarted_after = time.monotonic() - killed_at
        assert answered and None not in answered, answered  # the web server answered all along
        new_worker = _pids(serve, "worker")[1]
        assert _alive(new_worker) and not _alive(worker)
        assert _alive(web) and _alive(chat), "the other processes were left running"
        assert f"The worker process (pid {worker}) exited" in serve.log()
        assert _get(f"{base}/healthz") is not None

        def indexed():
            statuses = dict(Document.objects.filter(pk__in=[before, after]).values_list("pk", "status"))
            assert "failed" not in statuses.values(), Document.objects.filter(pk__in=[before, after]).values()
            return set(statuses.values()) == {"indexed"}

        wait_for(indexed, timeout=120, what="both documents indexed", process=serve)
        print(f"worker restarted {restarted_after:.1f} s after kill -9")
    finally:
        serve.stop(timeout=30)
    # SIGTERM stopped everything cleanly: the command said so, and no process of it is left.
    assert serve.proc.returncode == 0, serve.log()[-3000:]
    assert "ragsite stopped." in serve.log()
    for pid in _pids(serve, "worker") + _pids(serve, "web") + _pids(serve, "chat worker"):
        assert not _alive(pid), pid


@pytest.mark.django_db(transaction=False)
def test_restarts_back_off_doubling_to_the_ceiling_and_reset_after_a_stable_run(monkeypatch):
    """A process that keeps dying at once is restarted after 1, 2, 4 … s up to 30 s (here scaled down),
    and from the first delay again once it had stayed up STABLE_AFTER."""
    import io
    import sys

    from django.core.management.base import OutputWrapper

    from ragsite.management.commands import serve as serve_module

    monkeypatch.setattr(serve_module, "BACKOFF_FIRST", 0.1)
    monkeypatch.setattr(serve_module, "BACKOFF_MAX", 0.4)
    monkeypatch.setattr(serve_module, "STABLE_AFTER", 3600)
    command = serve_module.Command()
    log = io.StringIO()
    command.stderr = OutputWrapper(log)
    child = serve_module.Child("crasher", [sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ),
                               delay=0.1)
    command._start(child)

    def waits() -> list[str]:
        return re.findall(r"exited with code 3; restarting it in ([\d.]+) s", log.getvalue())

    deadline = time.monotonic() + 300  # a last resort: the waits asserted are 0.1-0.4 s
    while len(waits()) < 5 and time.monotonic() < deadline:
        command._supervise([child], lambda: False)
        time.sleep(0.02)
    assert waits()[:5] == ["0.1", "0.2", "0.4", "0.4", "0.4"], log.getvalue()
    monkeypatch.setattr(serve_module, "STABLE_AFTER", 0)  # every run now counts as a long one
    while len(waits()) < 7 and time.monotonic() < deadline:
        command._supervise([child], lambda: False)
        time.sleep(0.02)
    assert waits()[5:7] == ["0.1", "0.1"], log.getvalue()
    assert len(re.findall(r"Started the crasher process", log.getvalue())) >= 6
    command._stop_children([child])
