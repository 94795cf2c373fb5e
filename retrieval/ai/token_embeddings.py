"""Per-token embeddings (late interaction / highlighting) from a TEI server.

TEI's ``POST {base}/embed_all {"inputs": [...], "truncate": true}`` returns,
for each input, one vector per token *including* the special tokens, but no
character offsets. The offsets come from ``POST {base}/tokenize {"inputs":
[...], "add_special_tokens": true}`` → ``[[{"id", "text", "special", "start",
"stop"}]]``, whose token list lines up one-to-one with ``embed_all``'s
vectors (same tokenizer, same special tokens).

The result for each text is ``(vectors, offsets)``:

* ``vectors`` – float32 array (t, dim), one **L2-normalised** row per
  non-special token (special tokens such as ``[CLS]``/``</s>`` are dropped:
  they have no place in the text);
* ``offsets`` – ``[(start, stop), ...]``, character offsets into the text
  (Python string indices, as TEI computes them), one per row.

If ``embed_all`` truncated the input (longer than the model's window) it
returns fewer vectors than ``/tokenize`` has tokens; only the tokens that got a
vector are returned. Dimension checks as for ordinary embeddings
(:class:`DimensionMismatch` when ``cfg.embedding_dim`` is set and differs).
Only ``kind="openai"`` (TEI) servers are supported.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import AiServerError, DimensionMismatch, ServerConfig, require_base_url, server_label
from .embeddings import dimension_mismatch
from .http import HttpClientOwner, bad_response, parse_json, request_with_retry

WHAT = "embedding"

TokenEmbedding = tuple[np.ndarray, list[tuple[int, int]]]


class TokenEmbeddingClient(HttpClientOwner):
    def __init__(self, cfg: ServerConfig, *, batch_size: int = 16):
        if (cfg.kind or "").lower() != "openai":
            raise AiServerError(f"{server_label(cfg, WHAT)} cannot return per-token embeddings: "
                                f"only a text-embeddings-inference (TEI) server can.",
                                transient=False)
        self.cfg = cfg
        self.root = require_base_url(cfg, WHAT)
        self.batch_size = max(1, int(batch_size))
        self._dim = cfg.embedding_dim

    def _post(self, path: str, body: dict) -> Any:
        resp = request_with_retry(self.http, "POST", self.root + path, json=body, cfg=self.cfg,
                                  what=WHAT)
        return parse_json(resp, self.cfg, WHAT)

    def embed(self, texts: Sequence[str]) -> list[TokenEmbedding]:
        """``[(vectors (t, dim), offsets), ...]`` in input order."""
        texts = [str(t) for t in texts]
        out: list[TokenEmbedding | None] = [None] * len(texts)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        for i, t in enumerate(texts):
            if not t.strip():
                out[i] = (np.empty((0, self._dim or 0), dtype=np.float32), [])
        for start in range(0, len(todo), self.batch_size):
            idxs = todo[start:start + self.batch_size]
            batch = [texts[i] for i in idxs]
            for i, res in zip(idxs, self._embed_batch(batch)):
                out[i] = res
        return out  # type: ignore[return-value]

    def _embed_batch(self, texts: list[str]) -> list[TokenEmbedding]:
        toks = self._post("/tokenize", {"inputs": texts, "add_special_tokens": True})
        vecs = self._post("/embed_all", {"inputs": texts, "truncate": True})
        if not isinstance(toks, list) or len(toks) != len(texts):
            raise bad_response(self.cfg, WHAT, "/tokenize did not return one token list per text.")
        if not isinstance(vecs, list) or len(vecs) != len(texts):
            raise bad_response(self.cfg, WHAT, "/embed_all did not return one result per text.")
        return [self._align(t, v, text) for t, v, text in zip(toks, vecs, texts)]

    def _align(self, tokens: Any, vectors: Any, text: str) -> TokenEmbedding:
        if not isinstance(tokens, list) or not isinstance(vectors, list):
            raise bad_response(self.cfg, WHAT, "token lists are not lists.")
        if len(vectors) > len(tokens):
            raise bad_response(self.cfg, WHAT, f"{len(vectors)} token vectors for "
                                               f"{len(tokens)} tokens.")
        rows: list[np.ndarray] = []
        offsets: list[tuple[int, int]] = []
        for tok, vec in zip(tokens, vectors):
            if not isinstance(tok, dict):
                raise bad_response(self.cfg, WHAT, "a token is not an object.")
            if not isinstance(vec, list):
                raise bad_response(self.cfg, WHAT, "a token vector is not a list.")
            try:
                arr = np.asarray(vec, dtype=np.float32)
            except (TypeError, ValueError):
                raise bad_response(self.cfg, WHAT, "a token vector is not numeric.") from None
            if arr.ndim != 1:
                raise bad_response(self.cfg, WHAT, "a token vector is not flat.")
            if self._dim is not None and arr.shape[0] != self._dim:
                raise dimension_mismatch(self.cfg, arr.shape[0], self._dim)
            if self._dim is None:
                self._dim = arr.shape[0]
            start, stop = tok.get("start"), tok.get("stop")
            if tok.get("special") or start is None or stop is None:
                continue
            if not (isinstance(start, int) and isinstance(stop, int)
                    and 0 <= start <= stop <= len(text)):
                raise bad_response(self.cfg, WHAT, f"token offsets {start!r}..{stop!r} are "
                                                   f"outside the text.")
            rows.append(arr)
            offsets.append((start, stop))
        if not rows:
            return np.empty((0, self._dim or 0), dtype=np.float32), []
        mat = np.vstack(rows)
        if not np.all(np.isfinite(mat)):
            raise bad_response(self.cfg, WHAT, "token vectors contain NaN or infinite values.")
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (mat / norms).astype(np.float32), offsets


def token_embedding_client(cfg: ServerConfig) -> TokenEmbeddingClient:
    return TokenEmbeddingClient(cfg)


def token_embeddings(cfg: ServerConfig, text: str) -> TokenEmbedding:
    """One text → ``(vectors (t, dim) float32 unit rows, [(start, stop), ...])``."""
    with TokenEmbeddingClient(cfg) as c:
        return c.embed([text])[0]


__all__ = ["TokenEmbeddingClient", "token_embedding_client", "token_embeddings",
           "DimensionMismatch"]
