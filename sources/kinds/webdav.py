"""A WebDAV folder (Nextcloud, SharePoint, most document stores) through webdav4.

Location `https://dav.example.org/remote.php/dav/files/me/Regulations/`; the folder is walked one
PROPFIND (depth 1) per subfolder. The change marker is the ETag, modification time and size.
"""
from __future__ import annotations

from typing import BinaryIO, Iterator

import httpx

from sources.kinds import Entry, denied, fetch_failed, not_found, too_large, unreachable

MAX_FOLDERS = 10_000


class WebDAVConnector:
    def __init__(self, *, location: str, endpoint_url: str, username: str, secret: str):
        from webdav4.client import Client

        self.location = location if location.endswith("/") else location + "/"
        self.client = Client(self.location, auth=(username, secret) if username else None,
                             timeout=httpx.Timeout(30, connect=5), retry=False)

    def _source_error(self, exc: Exception):
        from webdav4.client import HTTPError, ResourceNotFound

        if isinstance(exc, ResourceNotFound):
            return not_found(self.location)
        if isinstance(exc, HTTPError) and exc.response is not None and exc.response.status_code in (401, 403):
            return denied(self.location)
        return unreachable(self.location, str(exc))

    def list(self) -> Iterator[Entry]:
        from webdav4.client import ClientError

        entries, folders, seen = [], [""], 0
        try:
            while folders and seen < MAX_FOLDERS:
                folder = folders.pop()
                seen += 1
                for info in self.client.ls(folder, detail=True):
                    name = info["name"].strip("/")
                    if info.get("type") == "directory":
                        if name and name != folder.strip("/"):
                            folders.append(name)
                        continue
                    modified = info.get("modified")
                    marker = f"{info.get('etag') or ''}|{modified.isoformat() if modified else ''}|{info.get('content_length')}"
                    entries.append(Entry(path=name, marker=marker, size=info.get("content_length")))
        except (ClientError, httpx.HTTPError, OSError) as exc:
            raise self._source_error(exc) from exc
        return iter(entries)

    def fetch(self, entry: Entry, out: BinaryIO, limit: int) -> int:
        from webdav4.client import ClientError

        limited = _Limited(out, limit)
        try:
            self.client.download_fileobj(entry.path, limited)
            return limited.size
        except (ClientError, httpx.HTTPError, OSError) as exc:
            raise fetch_failed(str(exc)) from exc

    def close(self) -> None:
        self.client.http.close()


class _Limited:
    """A file to write to that refuses past `limit` bytes (the download stops there)."""

    def __init__(self, out: BinaryIO, limit: int):
        self.out, self.limit, self.size = out, limit, 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise too_large(self.size, self.limit)
        return self.out.write(data)
