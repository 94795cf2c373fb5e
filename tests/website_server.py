"""A real HTTP server for the website source tests: Python's http.server on a temporary folder, in a thread
on 127.0.0.1 with a free port, behind HTTP basic auth (so wrong credentials are refused as by a real
intranet), with a robots.txt that keeps crawlers out of `/robots-test/private/`."""
from __future__ import annotations

import base64
import functools
import shutil
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

USER, PASSWORD = "web-reader", "web-secret-0123"
ROBOTS = "User-agent: *\nDisallow: /robots-test/private/\n"


class _Handler(SimpleHTTPRequestHandler):
    expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

    def _allowed(self) -> bool:
        if self.path == "/robots.txt" or self.headers.get("Authorization") == self.expected:
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="intranet"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def do_GET(self):
        if self._allowed():
            if self.server.delay and not self.path.endswith((".xml", "/", "robots.txt")):
                time.sleep(self.server.delay)  # a slow intranet: a sync takes long enough to be killed midway
            super().do_GET()

    def do_HEAD(self):
        if self._allowed():
            super().do_HEAD()

    def log_message(self, format, *args):  # quiet: the test output is not the access log
        pass


class WebsiteServer:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ragsite-website-"))
        (self.root / "robots.txt").write_text(ROBOTS)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(self.root)))
        self.httpd.daemon_threads = True
        self.httpd.delay = 0.0  # seconds each file's GET waits (tests/sources/test_worker.py)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="website-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> "WebsiteServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.root, ignore_errors=True)
