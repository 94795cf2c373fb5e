"""An IMAP mailbox folder through the standard library's imaplib: each message becomes a document (its
.eml: the text of the message) and so does each attachment.

Location `imap://server[:port]/Folder` (`imaps://` for TLS). A message's key is its Message-ID (else the
folder's UIDVALIDITY and its UID): the message is `KEY/message.eml`, an attachment `KEY/<its file name>`.
The change marker is the UIDVALIDITY, UID and size from one FETCH of the folder's envelopes, so an
unchanged message is not downloaded; a message appended again (a new UID) is downloaded and compared
by its hash.
"""
from __future__ import annotations

import email
import email.policy
import imaplib
import re
import socket
from typing import BinaryIO, Iterator
from urllib.parse import unquote, urlsplit

from sources.kinds import Entry, copy_limited, denied, fetch_failed, not_found, unreachable

FETCH_LINE = re.compile(rb"UID (\d+) RFC822\.SIZE (\d+)")
FILENAME = re.compile(rb'"(?:FILENAME|NAME)" "((?:[^"\\]|\\.)*)"', re.IGNORECASE)
MESSAGE_ID = re.compile(rb"Message-ID:\s*<?([^>\r\n]+)>?", re.IGNORECASE)
UNSAFE = re.compile(r"[^A-Za-z0-9@._+-]")


def message_key(message_id: str, fallback: str) -> str:
    key = UNSAFE.sub("_", message_id.strip().strip("<>"))[:200]
    return key or fallback


class IMAPConnector:
    def __init__(self, *, location: str, endpoint_url: str, username: str, secret: str):
        parts = urlsplit(location)
        self.location = location
        self.tls = parts.scheme == "imaps"
        self.host, self.port = parts.hostname or "", parts.port or (993 if self.tls else 143)
        self.folder = unquote(parts.path.strip("/")) or "INBOX"
        self.username, self.secret = username, secret
        self.conn: imaplib.IMAP4 | None = None

    def _connect(self) -> imaplib.IMAP4:
        if self.conn is not None:
            return self.conn
        try:
            conn = (imaplib.IMAP4_SSL if self.tls else imaplib.IMAP4)(self.host, self.port, timeout=15)
        except (OSError, imaplib.IMAP4.error) as exc:
            raise unreachable(self.location, str(exc)) from exc
        try:
            conn.login(self.username, self.secret)
        except imaplib.IMAP4.error as exc:
            conn.shutdown()
            raise denied(self.location) from exc
        status, _ = conn.select(_quote(self.folder), readonly=True)
        if status != "OK":
            conn.logout()
            raise not_found(self.location)
        self.conn = conn
        return conn

    def list(self) -> Iterator[Entry]:
        conn = self._connect()
        try:
            status, data = conn.status(_quote(self.folder), "(UIDVALIDITY MESSAGES)")
            validity = re.search(rb"UIDVALIDITY (\d+)", data[0] or b"")
            uidvalidity = validity.group(1).decode() if validity else "0"
            if b"MESSAGES 0" in (data[0] or b""):
                return iter([])
            status, rows = conn.uid("FETCH", "1:*", "(UID RFC822.SIZE BODYSTRUCTURE "
                                                  "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
        except (OSError, imaplib.IMAP4.error) as exc:
            raise unreachable(self.location, str(exc)) from exc
        entries: dict[str, Entry] = {}
        for row in rows or []:
            if not isinstance(row, tuple):
                continue
            head, header = row
            found = FETCH_LINE.search(head)
            if not found:
                continue
            uid, size = found.group(1).decode(), int(found.group(2))
            mid = MESSAGE_ID.search(header or b"")
            key = message_key(mid.group(1).decode(errors="replace") if mid else "", f"{uidvalidity}-{uid}")
            marker = f"{uidvalidity}:{uid}|{size}"
            entries[f"{key}/message.eml"] = Entry(path=f"{key}/message.eml", marker=marker, size=size,
                                                  handle=f"{uid}:")
            for name in FILENAME.findall(head):
                filename = _filename(name)
                if filename:
                    entries[f"{key}/{filename}"] = Entry(path=f"{key}/{filename}", marker=marker, handle=f"{uid}:{filename}")
        return iter(entries.values())

    def fetch(self, entry: Entry, out: BinaryIO, limit: int) -> int:
        conn = self._connect()
        uid, _, filename = entry.handle.partition(":")
        try:
            status, rows = conn.uid("FETCH", uid, "(BODY.PEEK[])")
        except (OSError, imaplib.IMAP4.error) as exc:
            raise fetch_failed(str(exc)) from exc
        raw = next((row[1] for row in rows or [] if isinstance(row, tuple)), None)
        if status != "OK" or not isinstance(raw, bytes):
            raise fetch_failed(f"message {uid} is gone")
        if not filename:
            return copy_limited(iter([raw]), out, limit)
        message = email.message_from_bytes(raw, policy=email.policy.default)
        for part in message.iter_attachments():
            if _filename((part.get_filename() or "").encode()) == filename:
                payload = part.get_payload(decode=True)
                return copy_limited(iter([payload if isinstance(payload, bytes) else b""]), out, limit)
        raise fetch_failed(f"attachment {filename} is gone")

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.logout()
            except (OSError, imaplib.IMAP4.error, socket.error):
                pass
            self.conn = None


def _quote(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _filename(raw: bytes) -> str:
    name = raw.decode(errors="replace").replace('\\"', '"').replace("\\\\", "\\")
    return UNSAFE.sub("_", name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1])[:200]
