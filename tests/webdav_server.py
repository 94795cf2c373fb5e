"""A real WebDAV server for the source tests: WsgiDAV on cheroot (both from PyPI), in its own process on
127.0.0.1 with a free port, serving a temporary folder to one user with a password (basic auth)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.processes import stop_server

USER, PASSWORD = "dav-reader", "dav-secret-0123"


class WebDAVServer:
    def __init__(self) -> None:
        from tests.seaweed import free_port

        self.dir = Path(tempfile.mkdtemp(prefix="ragsite-webdav-"))
        self.root = self.dir / "root"
        self.root.mkdir()
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 30) -> "WebDAVServer":
        config = self.dir / "wsgidav.json"
        config.write_text(json.dumps({
            "host": "127.0.0.1", "port": self.port, "server": "cheroot",
            "provider_mapping": {"/": str(self.root)},
            "http_authenticator": {"accept_basic": True, "accept_digest": False, "default_to_digest": False},
            "simple_dc": {"user_mapping": {"*": {USER: {"password": PASSWORD}}}},
            "verbose": 1, "logging": {"enable_loggers": []},
        }))
        self._log = open(self.dir / "wsgidav.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "wsgidav.server.server_cli", "--config", str(config)],
                                     cwd=self.dir, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wsgidav exited:\n{self.log()[-3000:]}")
            try:
                if httpx.request("PROPFIND", self.url, auth=(USER, PASSWORD), headers={"Depth": "0"},
                                 timeout=2).status_code == 207:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"wsgidav did not start within {timeout}s:\n{self.log()[-3000:]}")

    def log(self) -> str:
        path = self.dir / "wsgidav.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        stop_server(self.proc, getattr(self, "_log", None), self.dir)
