"""`manage.py serve` (what `make run` runs) supervises the embedded PostgreSQL too: after a kill -9 of its
postmaster (as the OOM killer would) the database is started again with no hand, /healthz answers 200
again, and a document that was being indexed is indexed afterwards. The test runs serve on an embedded
server of its own (its own data folder, never the session's database or var/pgdata) and kills only that."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from core import pg
from tests.processes import ROOT, ManagedProcess, wait_for
from tests.seaweed import free_port

pytestmark = pytest.mark.slow


def _get(url: str, token: str | None = None) -> tuple[int | None, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    except (OSError, ValueError):
        return None, {}


def _upload(base: str, token: str, name: str, text: str) -> int:
    boundary = "ragsite-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n{text}\r\n--{boundary}--\r\n").encode()
    request = urllib.request.Request(f"{base}/api/documents/", data=body, method="POST", headers={
        "Authorization": f"Token {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        return json.loads(response.read())["id"]


def _manage(env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_serve_restarts_a_killed_postgres_and_loses_no_document(fake_ai):
    # Beside the session's own data folder (pytest's tmp_path can be pruned by other pytest sessions).
    data_dir = Path(os.environ["RAGSITE_DATA_DIR"]).parent / "serve-database"
    pgdata = data_dir / "pgdata"
    assert pgdata != Path(os.environ.get("RAGSITE_TEST_PGDATA", "/nonexistent"))
    env = {**os.environ, "DATABASE_URL": "", "RAGSITE_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1",
           "EMBEDDING_SERVER_URL": fake_ai.url, "EMBEDDING_MODEL": "fake-embed", "EMBEDDING_DIM": "384",
           "INDEX_LEASE_SECONDS": "5", "INDEX_RECOVERY_INTERVAL": "2"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = ManagedProcess(["manage.py", "serve", "--port", str(port)], database_url="", name="serve-db",
                           env={k: v for k, v in env.items() if k not in os.environ or os.environ[k] != v})
    try:
        _manage(env, "migrate", "--no-input", "-v", "0")  # what `make run` does first (make migrate)
        _manage(env, "createcachetable")
        token = _manage(env, "shell", "-c", (
            "from django.contrib.auth import get_user_model; from identity.tokens import token_create; "
            "u = get_user_model().objects.create_user('ana', password='x-Long-Passw0rd'); "
            "print('TOKEN', token_create(user=u, name='t').key)")).split("TOKEN ")[1].strip()
        serve.start()
        wait_for(lambda: _get(f"{base}/healthz")[0] == 200, timeout=180, what="serve healthy", process=serve)
        # The first embedding request stalls: the document is mid-indexing when the database dies.
        fake_ai.fail_next("/v1/embeddings", {"delay_first_byte": 8})
        text = "\n\n".join(f"Paragraph {i}: the floodgate manual survives a database crash." for i in range(40))
        document = _upload(base, token, "floodgate.txt", text)
        wait_for(lambda: _get(f"{base}/api/documents/{document}/", token)[1].get("status") == "processing",
                 timeout=120, what="the document being indexed", process=serve)
        postmaster = pg.embedded_running(pgdata)
        assert postmaster, "serve's embedded PostgreSQL is not running"
        os.kill(postmaster, signal.SIGKILL)
        killed_at = time.monotonic()
        wait_for(lambda: _get(f"{base}/healthz")[0] == 503, timeout=60, what="the outage seen", process=serve)
        wait_for(lambda: _get(f"{base}/healthz")[0] == 200, timeout=90, what="healthy again", process=serve)
        healthy_after = time.monotonic() - killed_at
        # /healthz can answer while serve's own start of the database is still returning: its line follows.
        wait_for(lambda: re.search(r"Started the embedded PostgreSQL again \(pid \d+\)", serve.log()), timeout=60,
                 what="serve saying it started the database again", process=serve)
        log = serve.log()
        # The outage is logged once per interval by each process, not a line per failed loop or request.
        outage = log[log.index(f"The embedded PostgreSQL (pid {postmaster}) stopped"):]
        loud = [line for line in outage.splitlines() if line.startswith("{")
                and json.loads(line)["level"] in ("WARNING", "ERROR", "CRITICAL")]
        assert len(loud) <= 30, "\n".join(loud)
        assert f"The embedded PostgreSQL (pid {postmaster}) stopped" in log, log[-3000:]
        assert re.search(r"Started the embedded PostgreSQL again \(pid \d+\)", log), log[-3000:]
        assert pg.embedded_running(pgdata) not in (None, postmaster)

        def indexed() -> bool:
            status = _get(f"{base}/api/documents/{document}/", token)[1].get("status")
            assert status != "failed", _get(f"{base}/api/documents/{document}/", token)
            return status == "indexed"

        wait_for(indexed, timeout=180, interval=1, what="the interrupted document indexed", process=serve)
        print(f"/healthz 200 again {healthy_after:.1f} s after kill -9 of the postmaster")
    finally:
        serve.stop(timeout=30)
        pg.stop_embedded(pgdata)
        shutil.rmtree(data_dir, ignore_errors=True)
