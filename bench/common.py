"""Shared helpers for the benchmarks in bench/.

* `BenchSite`: a throw-away ragsite — its own embedded PostgreSQL and data folder in a temporary
  directory (never the developer's `var/`), migrated, stopped and deleted on exit.
* `Child`: a Python child process (this repository, the bench site's database) that speaks
  one JSON object per line on stdin/stdout; its stderr (Django's JSON logs) goes to a file.
* small things: `log` (progress on stderr), `machine_info`, `peak_rss_mb`.
"""
from __future__ import annotations

import json
import os
import platform
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# ../shared/data beside the repository; a worktree of it in ../wt/NAME finds the same folder two levels up.
SHARED_DATA = next((p for p in (REPO.parent / "shared" / "data", REPO.parent.parent / "shared" / "data")
                    if p.is_dir()), REPO.parent / "shared" / "data")
XQUAD_EN = SHARED_DATA / "xquad" / "xquad.en.json"


def squad_file(path: Path | None) -> Path:
    """The SQuAD-format file a benchmark reads: `path`, else XQuAD English from ../shared/data.

    The full sets live beside the repository on the project's machines only (the test suite
    uses its own small copies in tests/data); say so plainly when neither is there.
    """
    chosen = path or XQUAD_EN
    if not chosen.is_file():
        hint = "" if path else (" (the default, ../shared/data beside the repository, exists on the project's "
                                "machines only; pass --squad FILE, e.g. tests/data/xquad/xquad.en.first-article.json)")
        raise SystemExit(f"XQuAD data not found: {chosen}{hint}")
    return chosen

# Variables a benchmark child must not inherit: the bench decides the database and data folder,
# and the embedder's thread count is left to OpenMP's default (one thread per core).
_CHILD_ENV_DROP = ("DATABASE_URL", "RAGSITE_DATA_DIR", "DJANGO_SETTINGS_MODULE", "OMP_NUM_THREADS",
                   "RAGSITE_EMBED_THREADS", "MEDIA_ROOT", "TEST_DATABASE_NAME")

_started = time.monotonic()


def log(message: str) -> None:
    """Progress for humans, on stderr (stdout is reserved for the JSON result)."""
    print(f"[{time.monotonic() - _started:7.1f}s] {message}", file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB: VmHWM, the high-water mark of its own memory.

    Not ru_maxrss: Linux carries a parent's high-water mark over fork + exec into the child's
    ru_maxrss, so a worker started by a bench that had just drawn 200 page images "peaked" at the
    bench's 870 MB before doing anything. ru_maxrss (KiB) only where /proc is missing.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def children_peak_sampler(interval: float = 0.05):
    """Start a thread sampling the peak RSS (VmHWM) of this process's live child processes; returns
    a function giving the largest seen, in MB. Sampled, because RUSAGE_CHILDREN's ru_maxrss counts
    the parent's own high-water mark (inherited over fork + exec) for every child. A child's last
    few milliseconds may be missed."""
    me = str(os.getpid())
    peak = [0]

    def scan() -> None:
        while True:
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        ppid = f.read().rsplit(")", 1)[1].split()[1]
                    if ppid != me:
                        continue
                    with open(f"/proc/{entry}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                peak[0] = max(peak[0], int(line.split()[1]))
                except (OSError, IndexError, ValueError):
                    continue
            time.sleep(interval)

    threading.Thread(target=scan, daemon=True, name="children-peak-rss").start()
    return lambda: round(peak[0] / 1024, 1)


def process_cpu_s() -> float:
    """CPU seconds (user + system, all threads) this process has used so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def machine_cpu_s() -> float:
    """Busy CPU seconds of the whole machine since boot, every core summed (from /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    except (OSError, ValueError):
        return float("nan")
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def contention(seconds: float, machine_busy_s: float, own_cpu_s: float) -> dict:
    """How busy the machine was during a timed phase, and how much of it was not us.

    `other_cores` is the average number of cores other processes (anything but the measured
    processes: other programs, but also PostgreSQL serving us) kept busy; on a 2-core machine
    anything above ~0.1 makes timings of CPU-bound work unreliable.
    """
    cpus = os.cpu_count() or 1
    other = max(0.0, machine_busy_s - own_cpu_s)
    return {
        "seconds": round(seconds, 3),
        "machine_busy_pct": round(100 * machine_busy_s / (seconds * cpus), 1) if seconds > 0 else None,
        "own_cpu_s": round(own_cpu_s, 3),
        "other_cpu_s": round(other, 3),
        "other_cores": round(other / seconds, 3) if seconds > 0 else None,
    }


def machine_info() -> dict:
    try:
        mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        mem_total = None
    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(mem_total / 1024 ** 3, 1) if mem_total else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "omp_num_threads": "default (one thread per core)",
    }


def _stop_on_sigterm() -> None:
    """SIGTERM (a caller's timeout, `kill`) ends this process as Ctrl-C would: the `with BenchSite`
    block unwinds and close() stops the embedded database and deletes the temporary folder."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return  # someone else's handler

    def _exit(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: close() may take a while
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)


class BenchSite:
    """A ragsite on a temporary embedded PostgreSQL (or on `database_url`), set up in this process.

    Use as a context manager. Environment variables are set before `django.setup()`, then the
    database is migrated and the cache table created. On exit the embedded server is stopped
    and, unless `keep`, the temporary folder is deleted.
    """

    def __init__(self, *, database_url: str | None = None, keep: bool = False, prefix: str = "ragsite-bench-"):
        self.database_url = database_url
        self.keep = keep
        self.prefix = prefix
        self.tmp: Path | None = None
        self.pgdata: Path | None = None
        self.env: dict[str, str] = {}

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "BenchSite":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        from core import pg

        self.tmp = Path(tempfile.mkdtemp(prefix=self.prefix))
        pg.mark_owner(self.tmp)  # killed before close(): the next test session stops its database
        _stop_on_sigterm()
        url = self.database_url
        if not url:
            self.pgdata = self.tmp / "pgdata"
            t0 = time.monotonic()
            socket_dir = pg.ensure_embedded(self.pgdata)
            pg.ensure_database(socket_dir, "ragsite")
            url = pg.embedded_url(socket_dir, "ragsite")
            log(f"embedded PostgreSQL started in {self.pgdata} ({time.monotonic() - t0:.1f} s)")
        self.env = {
            "DATABASE_URL": url,
            "RAGSITE_DATA_DIR": str(self.tmp / "data"),
            "TIKTOKEN_CACHE_DIR": str(self.tmp / "tiktoken"),
        }
        for name in _CHILD_ENV_DROP:
            os.environ.pop(name, None)
        os.environ.update(self.env)
        os.environ.setdefault("LOG_LEVEL", "WARNING")  # this process's logs; children log INFO to files
        os.environ["DJANGO_SETTINGS_MODULE"] = "ragsite.settings"
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))

        import django
        from django.core.management import call_command

        t0 = time.monotonic()
        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        call_command("createcachetable", verbosity=0)
        log(f"database migrated ({time.monotonic() - t0:.1f} s)")

    def close(self) -> None:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may not be set up yet
            pass
        if self.pgdata is not None:
            from core import pg

            pg.stop_embedded(self.pgdata)
            self.pgdata = None
        if self.tmp is not None:
            if self.keep:
                log(f"kept {self.tmp} (start its database with: python -m core.pg start --pgdata {self.tmp / 'pgdata'})")
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    # -- children -----------------------------------------------------------------------
    def child_env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _CHILD_ENV_DROP}
        env.update(self.env)
        env.update({"DJANGO_SETTINGS_MODULE": "ragsite.settings", "PYTHONPATH": str(REPO),
                    "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "INFO"})
        env.update(extra)
        return env


class ChildFailed(RuntimeError):
    pass


class Child:
    """A child Python process that exchanges JSON lines; stderr goes to `log_path`."""

    def __init__(self, args: list[str], *, env: dict[str, str], log_path: Path, name: str):
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, *args], cwd=REPO, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1)
        self._lines: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float | None = None) -> dict | None:
        """The next message; None when `timeout` passed without one. Raises if the child died."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            self.proc.wait()
            raise ChildFailed(f"{self.name} exited (code {self.proc.returncode}) unexpectedly:\n{self.log_tail()}")
        return json.loads(line)

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self, timeout: float = 30) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._log.close()
        return code


def child_protocol() -> tuple:
    """For a child: (send, messages) — send one JSON line on the real stdout, iterate stdin lines.

    Anything the child's code prints goes to stderr, so only protocol lines reach the parent.
    """
    out = sys.stdout
    sys.stdout = sys.stderr

    def send(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    def messages():
        for line in sys.stdin:
            if line.strip():
                yield json.loads(line)

    return send, messages()


def json_report(result: dict, json_out=None) -> None:
    """Print a benchmark's result as indented JSON and, with `--json-out PATH`, write the same text there."""
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if json_out:
        Path(json_out).write_text(text + "\n")
    print(text)
