"""An SMB/CIFS file share (Windows servers, Samba) through smbprotocol's smbclient.

Location `smb://server[:port]/share/folder`. The folder is walked with SMB directory listings (scandir); the
change marker is the modification time and size from the listing, so an unchanged file is not opened.
Each connector keeps its own connection cache: a wrong password is never hidden by someone else's session.
"""
from __future__ import annotations

from typing import BinaryIO, Iterator
from urllib.parse import unquote, urlsplit

from sources.kinds import Entry, copy_limited, denied, fetch_failed, not_found, unreachable

MAX_FOLDERS = 10_000


class SMBConnector:
    def __init__(self, *, location: str, endpoint_url: str, username: str, secret: str):
        parts = urlsplit(location)
        self.location = location
        self.server = parts.hostname or ""
        self.port = parts.port or 445
        segments = [unquote(s) for s in parts.path.split("/") if s]
        self.share = segments[0] if segments else ""
        self.folder = "\\".join(segments[1:])
        self.username, self.secret = username, secret
        self.cache: dict = {}
        self.session = False

    def _unc(self, path: str = "") -> str:
        parts = [p for p in (self.folder, path.replace("/", "\\")) if p]
        return f"\\\\{self.server}\\{self.share}" + ("\\" + "\\".join(parts) if parts else "")

    def _connect(self) -> None:
        import smbclient
        from smbprotocol.exceptions import LogonFailure, SMBException

        if self.session:
            return
        try:
            smbclient.register_session(self.server, username=self.username or None, password=self.secret or None,
                                       port=self.port, connection_timeout=10, connection_cache=self.cache)
        except LogonFailure as exc:
            raise denied(self.location) from exc
        except (SMBException, ValueError, OSError) as exc:
            raise unreachable(self.location, str(exc)) from exc
        self.session = True

    def list(self) -> Iterator[Entry]:
        import smbclient
        from smbprotocol.exceptions import AccessDenied, SMBException, SMBOSError

        self._connect()
        entries, folders, seen = [], [""], 0
        try:
            while folders and seen < MAX_FOLDERS:
                folder = folders.pop()
                seen += 1
                for item in smbclient.scandir(self._unc(folder), port=self.port, connection_cache=self.cache):
                    path = f"{folder}/{item.name}" if folder else item.name
                    if item.is_dir():
                        folders.append(path)
                        continue
                    info = item.smb_info
                    entries.append(Entry(path=path, marker=f"{info.last_write_time.isoformat()}|{info.end_of_file}",
                                         size=info.end_of_file))
        except SMBOSError as exc:
            if exc.errno == 2:
                raise not_found(self.location) from exc
            if exc.errno == 13:
                raise denied(self.location) from exc
            raise unreachable(self.location, str(exc)) from exc
        except AccessDenied as exc:
            raise denied(self.location) from exc
        except (SMBException, ValueError, OSError) as exc:
            raise unreachable(self.location, str(exc)) from exc
        return iter(entries)

    def fetch(self, entry: Entry, out: BinaryIO, limit: int) -> int:
        import smbclient
        from smbprotocol.exceptions import SMBException

        self._connect()
        try:
            with smbclient.open_file(self._unc(entry.path), mode="rb", port=self.port,
                                     connection_cache=self.cache) as handle:
                return copy_limited(iter(lambda: handle.read(1024 * 1024), b""), out, limit)
        except (SMBException, ValueError, OSError) as exc:
            raise fetch_failed(str(exc)) from exc

    def close(self) -> None:
        import smbclient

        smbclient.reset_connection_cache(connection_cache=self.cache)
