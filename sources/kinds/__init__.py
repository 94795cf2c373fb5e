"""One connector per kind of source, each through a maintained client library: list what is there
(with the source's own change marker) and fetch one file. `connector_for(source)` opens the right one."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO, Iterator, Protocol

from django.utils.translation import gettext_noop

from core.errors import ApplicationError
from core.reasons import in_english, reason


@dataclass(frozen=True)
class Entry:
    """One file at the source: its path (the key within the source), its change marker, its size."""

    path: str
    marker: str
    size: int | None = None
    # How to fetch it when the path alone does not say (a URL, a message UID…).
    handle: str = ""

    @property
    def filename(self) -> str:
        return PurePosixPath(self.path).name or "index.html"


class SourceError(ApplicationError):
    """The whole run fails: nothing is changed. `reason` is a core.reasons reason."""

    code = "source_error"

    def __init__(self, why: dict):
        self.reason = why
        super().__init__(in_english(why), code=why["code"])


class FileError(ApplicationError):
    """One file fails; the run goes on."""

    code = "source_file_error"

    def __init__(self, why: dict):
        self.reason = why
        super().__init__(in_english(why), code=why["code"])


def unreachable(location: str, detail: str) -> SourceError:
    return SourceError(reason("sync.unreachable", gettext_noop("The source %(location)s cannot be reached: %(detail)s"),
                              location=location, detail=detail[:300]))


def denied(location: str) -> SourceError:
    return SourceError(reason("sync.denied", gettext_noop(
        "The source %(location)s refused the credentials: check the user name and the password or secret key."),
        location=location))


def not_found(location: str) -> SourceError:
    return SourceError(reason("sync.not_found", gettext_noop(
        "The folder, prefix or page %(location)s does not exist at the source."), location=location))


def too_large(size: int, limit: int) -> FileError:
    return FileError(reason("sync.too_large", gettext_noop(
        "The file is %(size)s bytes; this source takes files up to %(limit)s bytes."), size=size, limit=limit))


def fetch_failed(detail: str) -> FileError:
    return FileError(reason("sync.fetch_failed", gettext_noop("The file could not be read from the source: %(detail)s"),
                            detail=detail[:300]))


def copy_limited(chunks: Iterator[bytes], out: BinaryIO, limit: int) -> int:
    """Write `chunks` to `out`, refusing past `limit` bytes; returns the size."""
    size = 0
    for block in chunks:
        size += len(block)
        if size > limit:
            raise too_large(size, limit)
        out.write(block)
    return size


class Connector(Protocol):
    def list(self) -> Iterator[Entry]:
        """Every file at the source (raises SourceError when it cannot be reached or read)."""

    def fetch(self, entry: Entry, out: BinaryIO, limit: int) -> int:
        """Write the file's bytes to `out` (FileError past `limit` bytes or when it cannot be read)."""

    def close(self) -> None:
        ...


# kind → (module, class); a kind missing here cannot be chosen (sources.services checks).
CONNECTORS = {"s3": ("s3", "S3Connector"), "webdav": ("webdav", "WebDAVConnector"),
              "website": ("website", "WebsiteConnector"), "smb": ("smb", "SMBConnector"),
              "imap": ("imap", "IMAPConnector")}


def connector_for(source, *, secret: str) -> Connector:
    """The connector of the source's kind, with its password or secret key decrypted."""
    import importlib

    module, name = CONNECTORS[source.kind]
    opener = getattr(importlib.import_module(f"sources.kinds.{module}"), name)
    return opener(location=source.location, endpoint_url=source.endpoint_url, username=source.username,
                  secret=secret)
