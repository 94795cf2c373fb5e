"""A real SMB file share for the source tests: Debian's Samba `smbd` in the foreground, with its own
smb.conf, state and passdb in a temporary folder, on 127.0.0.1 with a free port (no nmbd, no winbind)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.processes import stop_server

SHARE = "docs"
USER, PASSWORD = "nobody", "smb-secret-0123"  # an account Samba maps to an existing Unix user


class SambaServer:
    def __init__(self) -> None:
        from tests.seaweed import free_port

        self.dir = Path(tempfile.mkdtemp(prefix="ragsite-samba-"))
        self.share = self.dir / "share"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> "SambaServer":
        smbd = shutil.which("smbd") or "/usr/sbin/smbd"
        pdbedit = shutil.which("pdbedit") or "/usr/bin/pdbedit"
        if not os.path.exists(smbd):
            raise RuntimeError("smbd is missing: install Debian's samba (the Makefile's TEST_PACKAGES)")
        for name in ("run", "lock", "state", "cache", "private", "ncalrpc", "share"):
            (self.dir / name).mkdir()
        d = self.dir
        self.conf = d / "smb.conf"
        self.conf.write_text(f"""[global]
  server role = standalone server
  smb ports = {self.port}
  interfaces = 127.0.0.1
  bind interfaces only = yes
  pid directory = {d}/run
  lock directory = {d}/lock
  state directory = {d}/state
  cache directory = {d}/cache
  private dir = {d}/private
  ncalrpc dir = {d}/ncalrpc
  log file = {d}/log.smbd
  passdb backend = tdbsam:{d}/private/passdb.tdb
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
  server min protocol = SMB2_10
  map to guest = never
[{SHARE}]
  path = {self.share}
  read only = no
  valid users = {USER}
  force user = {os.geteuid() == 0 and 'root' or os.getlogin()}
""")
        subprocess.run([pdbedit, "-s", str(self.conf), "-a", "-u", USER, "-t"], input=f"{PASSWORD}\n{PASSWORD}\n",
                       text=True, check=True, capture_output=True)
        self._log = open(d / "smbd.out", "wb")
        self.proc = subprocess.Popen([smbd, "--foreground", "--no-process-group", "-s", str(self.conf)],
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"smbd exited:\n{self.log()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"smbd did not start within {timeout}s:\n{self.log()[-3000:]}")

    def log(self) -> str:
        text = ""
        for name in ("smbd.out", "log.smbd"):
            path = self.dir / name
            if path.exists():
                text += path.read_text(errors="replace")
        return text

    def stop(self) -> None:
        stop_server(self.proc, getattr(self, "_log", None), self.dir)
