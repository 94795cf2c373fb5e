"""A real IMAP server for the source tests: Debian's Dovecot in the foreground with its own configuration,
a passwd-file user and Maildirs in a temporary folder, listening on 127.0.0.1 with a free port."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.processes import stop_server

USER, PASSWORD = "reader", "imap-secret-0123"
MAIL_USER = "nobody"  # the Unix account the Maildirs belong to (Dovecot refuses root)


class DovecotServer:
    def __init__(self) -> None:
        from tests.seaweed import free_port

        self.dir = Path(tempfile.mkdtemp(prefix="ragsite-dovecot-"))
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> "DovecotServer":
        dovecot = shutil.which("dovecot") or "/usr/sbin/dovecot"
        if not os.path.exists(dovecot):
            raise RuntimeError("dovecot is missing: install Debian's dovecot-imapd (the Makefile's TEST_PACKAGES)")
        d = self.dir
        for name in ("base", "state", "mail"):
            (d / name).mkdir()
        os.chmod(d, 0o755)
        shutil.chown(d / "mail", user=MAIL_USER)
        (d / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        self.conf = d / "dovecot.conf"
        self.conf.write_text(f"""protocols = imap
listen = 127.0.0.1
base_dir = {d}/base
state_dir = {d}/state
log_path = {d}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
mail_location = maildir:{d}/mail/%u
first_valid_uid = 1
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/users
}}
userdb {{
  driver = static
  args = uid={MAIL_USER} gid={MAIL_USER} home={d}/mail/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
""".replace(f"gid={MAIL_USER}", "gid=" + _group_of(MAIL_USER)))
        self._log = open(d / "dovecot.out", "wb")
        self.proc = subprocess.Popen([dovecot, "-F", "-c", str(self.conf)], stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dovecot exited:\n{self.log()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(100).startswith(b"* OK"):
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"dovecot did not start within {timeout}s:\n{self.log()[-3000:]}")

    def client(self):
        import imaplib

        conn = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        conn.login(USER, PASSWORD)
        return conn

    def log(self) -> str:
        text = ""
        for name in ("dovecot.out", "dovecot.log"):
            path = self.dir / name
            if path.exists():
                text += path.read_text(errors="replace")
        return text

    def stop(self) -> None:
        stop_server(self.proc, getattr(self, "_log", None), self.dir)


def _group_of(user: str) -> str:
    import grp
    import pwd

    return grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
