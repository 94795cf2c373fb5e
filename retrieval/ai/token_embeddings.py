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
  they have no place in the text); ``normalize=False`` keeps the raw hidden
  states instead (what late chunking averages, see ``retrieval.indexing.late_chunking``);
* ``offsets`` – ``[(start, stop), ...]``, character offsets into the text
  (Python string indices), one per row.

Offsets: TEI builds on the Rust ``tokenizers`` crate, whose offsets are UTF-8
*byte* positions unless asked for characters, and TEI versions differ in what
``/tokenize`` reports. For a text that is not pure ASCII the client therefore
looks at the last token: if it ends at the text's length in bytes (or beyond
its length in characters) the offsets are bytes and are converted to
characters. Pure ASCII text is the same either way.

If ``embed_all`` truncated the input (longer than the model's window) it
returns fewer vectors than ``/tokenize`` has tokens. TEI truncates before it
adds the special tokens, so the last vector belongs to the closing special
token, not to the token at that position: it is dropped, and only the tokens
that really got a vector are returned (``TokenVectors.truncated`` says it
happened). Dimension checks as for ordinary embeddings
(:class:`DimensionMismatch` when ``cfg.embedding_dim`` is set and differs).
Only ``kind="openai"`` (TEI) servers are supported.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .base import AiServerError, DimensionMismatch, ServerConfig, require_base_url, server_label
from .embeddings import dimension_mismatch
from .http import HttpClientOwner, bad_response, parse_json, request_with_retry

WHAT = "embedding"

TokenEmbedding = tuple[np.ndarray, list[tuple[int, int]]]


@dataclass
class TokenVectors:
    """One text's token vectors with their character offsets."""

    vectors: np.ndarray  # (t, dim) float32
    offsets: list[tuple[int, int]]
    truncated: bool  # the server returned vectors for only the first tokens


@dataclass
class Tokens:
    """One text's tokens as the server's tokenizer sees them."""

    offsets: list[tuple[int, int]]  # character offsets of the non-special tokens
    special: int  # special tokens the server adds ([CLS], </s>, ...)


class TokenEmbeddingClient(HttpClientOwner):
    def __init__(self, cfg: ServerConfig, *, batch_size: int = 16, normalize: bool = True):
        if (cfg.kind or "").lower() != "openai":
            raise AiServerError(f"{server_label(cfg, WHAT)} cannot return per-token embeddings: "
                                f"only a text-embeddings-inference (TEI) server can.",
                                transient=False)
        self.cfg = cfg
        self.root = require_base_url(cfg, WHAT)
        self.batch_size = max(1, int(batch_size))
        self.normalize = normalize
        self._dim = cfg.embedding_dim

    def _post(self, path: str, body: dict) -> Any:
        resp = request_with_retry(self.http, "POST", self.root + path, json=body, cfg=self.cfg,
                                  what=WHAT)
        return parse_json(resp, self.cfg, WHAT)

    def embed(self, texts: Sequence[str]) -> list[TokenEmbedding]:
        """``[(vectors (t, dim), offsets), ...]`` in input order."""
        return [(r.vectors, r.offsets) for r in self.embed_detailed(texts)]

    def embed_detailed(self, texts: Sequence[str]) -> list[TokenVectors]:
        """Like :meth:`embed`, and says for each text whether the server truncated it."""
        texts = [str(t) for t in texts]
        out: list[TokenVectors | None] = [None] * len(texts)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        for i, t in enumerate(texts):
            if not t.strip():
                out[i] = TokenVectors(np.empty((0, self._dim or 0), dtype=np.float32), [], False)
        for start in range(0, len(todo), self.batch_size):
            idxs = todo[start:start + self.batch_size]
            batch = [texts[i] for i in idxs]
            for i, res in zip(idxs, self._embed_batch(batch)):
                out[i] = res
        return out  # type: ignore[return-value]

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """The server's tokens of each (non-blank) text: character offsets and the special-token count."""
        texts = [str(t) for t in texts]
        if not texts:
            return []
        toks = self._post("/tokenize", {"inputs": texts, "add_special_tokens": True})
        if not isinstance(toks, list) or len(toks) != len(texts):
            raise bad_response(self.cfg, WHAT, "/tokenize did not return one token list per text.")
        out = []
        for tokens, text in zip(toks, texts):
            offsets = self._offsets(tokens, text)
            out.append(Tokens([o for o in offsets if o is not None], sum(o is None for o in offsets)))
        return out

    def _embed_batch(self, texts: list[str]) -> list[TokenVectors]:
        toks = self._post("/tokenize", {"inputs": texts, "add_special_tokens": True})
        vecs = self._post("/embed_all", {"inputs": texts, "truncate": True})
        if not isinstance(toks, list) or len(toks) != len(texts):
            raise bad_response(self.cfg, WHAT, "/tokenize did not return one token list per text.")
        if not isinstance(vecs, list) or len(vecs) != len(texts):
            raise bad_response(self.cfg, WHAT, "/embed_all did not return one result per text.")
        return [self._align(t, v, text) for t, v, text in zip(toks, vecs, texts)]

    def _offsets(self, tokens: Any, text: str) -> list[tuple[int, int] | None]:
        """Character offsets per token (None for a special token), converted from bytes if need be."""
        if not isinstance(tokens, list):
            raise bad_response(self.cfg, WHAT, "token lists are not lists.")
        raw: list[tuple[int, int] | None] = []
        for tok in tokens:
            if not isinstance(tok, dict):
                raise bad_response(self.cfg, WHAT, "a token is not an object.")
            start, stop = tok.get("start"), tok.get("stop")
            if tok.get("special") or start is None or stop is None:
                raw.append(None)
                continue
            if not (isinstance(start, int) and isinstance(stop, int) and 0 <= start <= stop):
                raise bad_response(self.cfg, WHAT, f"token offsets {start!r}..{stop!r} are not valid.")
            raw.append((start, stop))
        last = max((o[1] for o in raw if o is not None), default=0)
        limit = len(text)
        if not text.isascii():
            nbytes = len(text.encode("utf-8"))
            core = text.rstrip()
            if last > len(text) or (last != len(core) and last == len(core.encode("utf-8"))):
                raw, limit = _bytes_to_chars(raw, text), nbytes
        if last > limit:
            raise bad_response(self.cfg, WHAT, f"token offsets up to {last} are outside the text "
                                               f"({len(text)} characters).")
        return raw

    def _align(self, tokens: Any, vectors: Any, text: str) -> TokenVectors:
        offsets = self._offsets(tokens, text)
        if not isinstance(vectors, list):
            raise bad_response(self.cfg, WHAT, "token lists are not lists.")
        if len(vectors) > len(offsets):
            raise bad_response(self.cfg, WHAT, f"{len(vectors)} token vectors for "
                                               f"{len(offsets)} tokens.")
        truncated = len(vectors) < len(offsets)
        if truncated and offsets and offsets[-1] is None:
            # TEI cuts the tokens, then adds the specials: the last vector is the closing special's.
            vectors = vectors[:-1]
        rows: list[np.ndarray] = []
        kept: list[tuple[int, int]] = []
        for offset, vec in zip(offsets, vectors):
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
            if offset is None:
                continue
            rows.append(arr)
            kept.append(offset)
        if not rows:
            return TokenVectors(np.empty((0, self._dim or 0), dtype=np.float32), [], truncated)
        mat = np.vstack(rows)
        if not np.all(np.isfinite(mat)):
            raise bad_response(self.cfg, WHAT, "token vectors contain NaN or infinite values.")
        if not self.normalize:
            return TokenVectors(mat.astype(np.float32, copy=False), kept, truncated)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return TokenVectors((mat / norms).astype(np.float32), kept, truncated)


def _bytes_to_chars(offsets: list[tuple[int, int] | None], text: str) -> list[tuple[int, int] | None]:
    """UTF-8 byte offsets → character offsets (a position inside a character widens to the whole character)."""
    ends = [0]
    for ch in text:
        ends.append(ends[-1] + len(ch.encode("utf-8")))
    out: list[tuple[int, int] | None] = []
    for o in offsets:
        if o is None:
            out.append(None)
        else:
            start = bisect_right(ends, o[0]) - 1
            out.append((start, max(start, bisect_left(ends, o[1]))))
    return out


def token_embedding_client(cfg: ServerConfig) -> TokenEmbeddingClient:
    return TokenEmbeddingClient(cfg)


def token_embeddings(cfg: ServerConfig, text: str) -> TokenEmbedding:
    """One text → ``(vectors (t, dim) float32 unit rows, [(start, stop), ...])``."""
    with TokenEmbeddingClient(cfg) as c:
        return c.embed([text])[0]


__all__ = ["TokenEmbeddingClient", "TokenVectors", "Tokens", "token_embedding_client",
           "token_embeddings", "DimensionMismatch"]
