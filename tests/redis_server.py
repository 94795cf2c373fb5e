"""A real Redis for the tests: Debian's redis-server (the Makefile installs it with the test
packages), started on 127.0.0.1 with a free port in a temporary folder, with no persistence,
and stopped afterwards."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.seaweed import free_port


class RedisServer:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ragsite-redis-"))
        self.port = free_port()
        self.also_bind: list[str] = []
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 120) -> "RedisServer":
        binary = shutil.which("redis-server")
        if not binary:
            raise RuntimeError("redis-server is missing: `make test` installs it (Debian package redis-server)")
        args = [binary, "--bind", " ".join(["127.0.0.1", *self.also_bind]), "--port", str(self.port), "--dir", str(self.dir),
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--protected-mode", "no" if self.also_bind else "yes",
                "--logfile", str(self.dir / "redis.log")]
        self.proc = subprocess.Popen(args, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited:\n{self.log()[-2000:]}")
            try:
                if self.client().ping():
                    return self
            except Exception:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"redis-server did not answer within {timeout}s:\n{self.log()[-2000:]}")

    def listen_also(self, *addresses: str) -> None:
        """Listen on these addresses too (besides 127.0.0.1), now and after restarts: the cluster
        test's nodes in their own network namespaces reach Redis on the bridge's address. Protected
        mode (no password: loopback clients only) is off meanwhile: the bridge is private to this
        machine's namespaces, reached by nothing else."""
        self.also_bind = list(addresses)
        client = self.client()
        client.config_set("bind", " ".join(["127.0.0.1", *self.also_bind]))
        client.config_set("protected-mode", "no" if self.also_bind else "yes")

    def url_on(self, host: str) -> str:
        return f"redis://{host}:{self.port}/0"

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5)

    def log(self) -> str:
        path = self.dir / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def restart(self, *, down: float = 0.0) -> None:
        """Stop the server, wait `down` seconds and start it again on the same port (empty: it keeps
        nothing on disk, like a Redis used only for queues and live events may)."""
        self.halt()
        time.sleep(down)
        self.start()

    def stop(self) -> None:
        self.halt()
        shutil.rmtree(self.dir, ignore_errors=True)

    def halt(self) -> None:
        """Stop the server, keeping its folder and port for `start()`."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
