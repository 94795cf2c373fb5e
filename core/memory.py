"""glibc's allocator, told what a long-running worker needs (Linux with glibc; a no-op elsewhere).

glibc gives threads that allocate at once arenas of their own (an indexing worker's look-ahead
embedding thread, ONNX Runtime's threads), and memory freed in one arena serves only the threads
of that arena, so a process with several busy threads holds more memory than it uses.
`malloc_arenas_limit` caps the arenas.
"""
from __future__ import annotations

import ctypes
import functools
import logging
import sys

logger = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's malloc.h


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return None
    return libc


@functools.cache
def malloc_arenas_limit(arenas: int) -> bool:
    """Cap glibc's malloc arenas for this process (arenas already made stay); False where that cannot be done."""
    libc = _glibc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(M_ARENA_MAX, arenas))
    if not ok:
        logger.debug("mallopt(M_ARENA_MAX, %s) refused", arenas)
    return ok
