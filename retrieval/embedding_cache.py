"""Content-addressed embeddings: a chunk's vector is stored once per (text, embedder, visibility scope).

A re-index, a new version of a document, or a re-chunk that produces an identical chunk finds
the vector here instead of calling the embedding server. The key is the SHA-256 of

    scope | embedder identity | normalised embed text

* **text**: what is sent to the embedder (heading path / table header + content), Unicode NFC,
  whitespace runs folded into one space, trimmed — a re-extraction that only moves line breaks
  still hits.
* **embedder identity**: the server kind and address, the model name and the dimension — two
  servers that serve a model of the same name (one quantised, say) never share vectors.
* **scope**: who can see the text — `u<owner id>` for a private document, `c<collection id>`
  for a shared one. The cache is deliberately *not* global: an uploader sees `reused_chunks`
  (and can time the indexing), so a global cache would tell them whether anybody else in the
  organisation holds a passage they guessed — a membership oracle that brute-forces the
  low-entropy fields of templated documents ("Salary: …"). Within a scope everyone who indexes
  already reads every document of it, so a hit reveals nothing.

Chunk vectors (retrieval_chunkembedding) carry their key in `content_hash`; a statement trigger
(migration 0014) deletes a cache row once no chunk vector with its key remains, so deleting a
document, a collection, a version or a model's old vectors removes what nothing else uses.
Late-chunked vectors depend on the whole document and are never cached (`content_hash` NULL).
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from typing import Callable, Sequence

import numpy as np

from retrieval.models import EmbeddingCache

WHITESPACE_RE = re.compile(r"\s+")
LOOKUP_BATCH = 2000


def normalise(text: str) -> str:
    """NFC, whitespace runs as one space, trimmed."""
    return WHITESPACE_RE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def cache_scope(*, owner_id: int, collection_id: int | None) -> str:
    """The visibility scope vectors are shared within: the collection, else the owner."""
    return f"c{int(collection_id)}" if collection_id is not None else f"u{int(owner_id)}"


def embedder_identity(*, kind: str, base_url: str, model: str, dim: int) -> str:
    """What makes two vectors of the same text interchangeable: the same server, model and dimension."""
    return f"{kind}|{base_url.rstrip('/')}|{model}|{int(dim)}"


def cache_key(*, scope: str, identity: str, text: str) -> str:
    """The hex SHA-256 key of one embed text."""
    return hashlib.sha256(f"{scope}\x1f{identity}\x1f{normalise(text)}".encode()).hexdigest()


def cache_lookup(keys: Sequence[str]) -> dict[str, np.ndarray]:
    """The cached vectors of the keys that have one."""
    found: dict[str, np.ndarray] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), LOOKUP_BATCH):
        rows = EmbeddingCache.objects.filter(content_hash__in=unique[start:start + LOOKUP_BATCH])
        for key, vector in rows.values_list("content_hash", "embedding"):
            found[key] = np.asarray(vector, dtype=np.float32)
    return found


def cache_store(*, model_id: int, keys: Sequence[str | None], vectors) -> None:
    """Remember the vectors under their keys (existing keys are kept). Call after their chunk vectors
    are written in the same transaction: the trigger removes keys no chunk vector holds."""
    rows: dict[str, object] = {}
    for key, vector in zip(keys, vectors):
        if key is not None and key not in rows:
            rows[key] = vector
    EmbeddingCache.objects.bulk_create(
        [EmbeddingCache(content_hash=key, model_id=model_id, embedding=vector) for key, vector in rows.items()],
        batch_size=1000, ignore_conflicts=True)


def embed_missing(client, texts: Sequence[str], batch_size: int, progress: Callable[..., None], *,
                  keys: Sequence[str], cached: dict[str, np.ndarray]) -> tuple[np.ndarray, int]:
    """Each text's vector: from `cached` by its key, else embedded in batches (a text repeated within
    the document once). `progress(force=..., chunks_embedded=n)` hears how many have a vector.
    Returns the vectors in order and how many texts the embedder computed."""
    found: dict[str, np.ndarray] = dict(cached)
    missing: dict[str, str] = {}  # key -> text, first occurrence
    for text, key in zip(texts, keys):
        if key not in found:
            missing.setdefault(key, text)
    uses = Counter(keys)
    embedded = sum(uses[key] for key in missing)
    done = len(texts) - embedded
    if done:
        progress(force=True, chunks_embedded=done)
    # Progress after every batch the embedder really computes: the built-in one splits a larger
    # request into its own batches (8), which at a few chunks per second are seconds apart.
    batch = max(1, min(batch_size, getattr(client, "batch_size", batch_size) or batch_size))
    todo = list(missing.items())
    for start in range(0, len(todo), batch):
        part = todo[start:start + batch]
        vectors = np.asarray(client.embed_passages([text for _, text in part]), dtype=np.float32)
        found.update(zip((key for key, _ in part), vectors))
        done += sum(uses[key] for key, _ in part)
        progress(force=start + batch >= len(todo), chunks_embedded=done)
    if not texts:
        return np.zeros((0, client.dim), dtype=np.float32), 0
    return np.stack([found[key] for key in keys]), embedded
