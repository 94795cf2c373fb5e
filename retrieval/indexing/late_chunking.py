"""Late chunking (Günther et al., "Late Chunking", arXiv 2409.04701): chunk vectors pooled from
the token vectors of the whole document, so every chunk vector carries its surroundings.

The `late` strategy, step by step:

1. **Chunks** are cut exactly as by the `tokens` strategy: same boundaries, offsets, pages,
   headings. Only their vectors differ.
2. **When.** Only with a server that says it can (`capabilities.token_embeddings`) and is an
   OpenAI-compatible text-embeddings-inference server (`/tokenize` + `/embed_all`), with a window
   (`capabilities.embedding_max_input_tokens`, else :data:`DEFAULT_WINDOW`) of at least
   :data:`MIN_WINDOW` tokens. Otherwise indexing uses `tokens` and records why on the document
   (:func:`late_unavailable_reason`).
3. **Windows.** The server tokenizes the document (in pieces of at most :data:`SEGMENT_CHARS`
   characters cut at whitespace, so no request grows with the document). A window is a run of
   ``length`` consecutive tokens: the server's window minus its special tokens and a small margin
   (a window's text is tokenized again on its own and may come out a token longer at its edges).
   Consecutive windows overlap by a quarter of a window; the last one is aligned with the end of
   the document, so all windows have the same length. A document that fits one window is one pass.
4. **Stitching.** Each window's text goes to `/embed_all`; its token offsets are shifted to
   document coordinates. Every token takes its vector from the window where it is most central:
   the cut between two windows lies halfway through their overlap (ties go to the later window).
   Not the average of its copies: a copy near a window's edge saw context on one side only, the
   central copy saw the most on both sides, and so every token counts exactly once.
5. **Pooling.** A chunk's vector is the mean of the *raw* token vectors whose span's midpoint lies
   in the chunk's ``[start_offset, end_offset)`` (a token straddling a boundary counts for the
   chunk holding most of it; overlapping chunks share the tokens of their overlap), then
   L2-normalised. Raw, not the unit rows the token client gives by default: mean-pooling models
   (e5, gte, jina v2) average the raw last-layer states and normalise after pooling, so this is
   the model's own pooling restricted to the chunk's span, and it stays comparable with the query
   vectors of `/v1/embeddings`. Normalising each token first would give every token the same weight
   whatever length the model gave it (and the pooled vector would drift from that space).
   Special tokens are left out: they belong to no chunk.
6. **Memory.** A window's token matrix is pooled and dropped before the next request; running
   sums exist only for chunks still open; a chunk is finished (normalised, stored) as soon as the
   windows have passed its end. Progress (`chunks_embedded`) and the time-limit check run per window.
7. A chunk no token falls in (not expected in practice) is embedded from its text the ordinary way.

Texts go to the server exactly as given, as `OpenAIEmbeddingClient` sends them to
`/v1/embeddings`: ragsite adds no "passage: "/"query: " prefix on either path, so query and chunk
vectors are made under the same convention. The vectors are stored under the server's pinned
embedding model, and questions are embedded through `/v1/embeddings` as usual.
"""
from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from django.utils.translation import gettext_noop

from core.reasons import in_english, reason

from retrieval.ai import AiServerError
from retrieval.ai.token_embeddings import TokenEmbeddingClient
from retrieval.ai.clients import token_embedder_for
from retrieval.models import AiServer, AiServerKind

logger = logging.getLogger(__name__)

DEFAULT_WINDOW = 512  # tokens, when the server does not say (BERT-sized models)
MIN_WINDOW = 32  # below this the margins and overlaps leave too little of a window
SEGMENT_CHARS = 20_000  # characters per /tokenize input when tokenizing the whole document
SEGMENTS_PER_REQUEST = 8
TOKENS_PER_REQUEST = 4096  # windows sent together to /embed_all (the answer is tokens x dim floats)


def window_tokens(server: AiServer) -> int:
    """The server's window in tokens (`embedding_max_input_tokens`, else DEFAULT_WINDOW)."""
    value = (server.capabilities or {}).get("embedding_max_input_tokens")
    try:
        return int(value) if value else DEFAULT_WINDOW
    except (TypeError, ValueError):
        return DEFAULT_WINDOW


def late_unavailable_why(server: AiServer) -> dict | None:
    """Why `late` cannot be used with this server, as a reason for the document (core.reasons); None when it can."""
    if server.kind == AiServerKind.BUILTIN or not server.can("token_embeddings"):
        return reason("chunking.no_token_embeddings", gettext_noop(
            "Late chunking needs token embeddings; the server '%(name)s' does not offer them, so the 'tokens' "
            "strategy was used."), name=server.name)
    if server.kind != AiServerKind.OPENAI:
        return reason("chunking.not_tei", gettext_noop(
            "Late chunking needs token embeddings from a text-embeddings-inference server (/embed_all); the server "
            "'%(name)s' is an %(kind)s server, so the 'tokens' strategy was used."),
            name=server.name, kind=str(server.get_kind_display()))
    window = window_tokens(server)
    if window < MIN_WINDOW:
        return reason("chunking.window_too_small", gettext_noop(
            "Late chunking needs a window of at least %(minimum)s tokens; the server '%(name)s' takes %(window)s, so "
            "the 'tokens' strategy was used."), minimum=MIN_WINDOW, name=server.name, window=window)
    return None


def late_unavailable_reason(server: AiServer) -> str | None:
    """Why `late` cannot be used with this server, as an English sentence; None when it can."""
    why = late_unavailable_why(server)
    return in_english(why) if why else None


# --- windows: pure arithmetic ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    first: int  # index of its first document token
    stop: int  # one past its last document token
    start_char: int  # its text is document[start_char:end_char]
    end_char: int
    own_from: int  # tokens starting in [own_from, own_to) take their vector from this window
    own_to: int


def window_spans(n_tokens: int, *, length: int, overlap: int) -> list[tuple[int, int]]:
    """Token ranges [first, stop) of the windows over n_tokens tokens; the last ends at n_tokens."""
    if n_tokens <= 0:
        return []
    length = max(1, length)
    step = max(1, length - max(0, overlap))
    spans = []
    first = 0
    while first + length < n_tokens:
        spans.append((first, first + length))
        first += step
    spans.append((max(0, n_tokens - length), n_tokens))
    return spans


def plan_windows(starts: np.ndarray, stops: np.ndarray, *, length: int, overlap: int) -> list[Window]:
    """Windows over the document's tokens (their character starts and stops, in order)."""
    spans = window_spans(len(starts), length=length, overlap=overlap)
    # Token index where window k+1 takes over from window k: halfway through their overlap.
    cuts = [(spans[k + 1][0] + spans[k][1]) // 2 for k in range(len(spans) - 1)]
    windows = []
    for k, (first, stop) in enumerate(spans):
        own_from = 0 if k == 0 else int(starts[cuts[k - 1]])
        own_to = sys.maxsize if k == len(spans) - 1 else int(starts[cuts[k]])
        windows.append(Window(first, stop, int(starts[first]), int(stops[first:stop].max()), own_from, own_to))
    return windows


# --- pooling: sums per open chunk -------------------------------------------------------------


class SpanPooler:
    """Mean of raw token vectors per chunk span, accumulated window by window, then normalised.

    A token [s, e) belongs to chunk [a, b) when its midpoint does: 2a <= s + e < 2b.
    """

    def __init__(self, spans: Sequence[tuple[int, int]]):
        self.lo2 = np.asarray([2 * a for a, _ in spans], dtype=np.int64)
        self.hi2 = np.asarray([2 * b for _, b in spans], dtype=np.int64)
        self.n = len(spans)
        self.counts = np.zeros(self.n, dtype=np.int64)
        self.finished = np.zeros(self.n, dtype=bool)
        self.sums: dict[int, np.ndarray] = {}  # open chunks only
        self.vectors: np.ndarray | None = None  # (n, dim) float32, allocated with the first tokens
        self.empty: list[int] = []

    def add(self, vectors: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> None:
        """Add token vectors (t, dim) with their character spans in document coordinates."""
        if not len(vectors):
            return
        if self.vectors is None:
            self.vectors = np.zeros((self.n, vectors.shape[1]), dtype=np.float32)
        mid2 = starts.astype(np.int64) + stops.astype(np.int64)
        if np.any(mid2[1:] < mid2[:-1]):
            order = np.argsort(mid2, kind="stable")
            mid2, vectors = mid2[order], vectors[order]
        touched = np.nonzero(~self.finished & (self.hi2 > mid2[0]) & (self.lo2 <= mid2[-1]))[0]
        for j in touched:
            lo = int(np.searchsorted(mid2, self.lo2[j], side="left"))
            hi = int(np.searchsorted(mid2, self.hi2[j], side="left"))
            if hi > lo:
                part = vectors[lo:hi].sum(axis=0, dtype=np.float64)
                if j in self.sums:
                    self.sums[j] += part
                else:
                    self.sums[j] = part
                self.counts[j] += hi - lo

    def finish_before(self, char_pos: int) -> int:
        """Finish the chunks that end at or before char_pos; return how many are finished in all."""
        ready = np.nonzero(~self.finished & (self.hi2 <= 2 * char_pos))[0]
        for j in ready:
            self._finish(int(j))
        return int(self.finished.sum())

    def finish_all(self) -> None:
        for j in np.nonzero(~self.finished)[0]:
            self._finish(int(j))

    def _finish(self, j: int) -> None:
        self.finished[j] = True
        total = self.sums.pop(j, None)
        norm = float(np.linalg.norm(total)) if total is not None else 0.0
        if self.vectors is None or norm == 0.0 or not np.isfinite(norm):
            self.empty.append(j)
            return
        self.vectors[j] = (total / norm).astype(np.float32)


# --- the pass over a document -------------------------------------------------------------------


@dataclass
class LateResult:
    vectors: np.ndarray | None  # (chunks, dim) float32, unit rows except the `empty` ones
    empty: list[int]  # chunks no token fell in: embed these from their text
    windows: int
    tokens: int


def _segments(text: str, size: int = SEGMENT_CHARS) -> Iterator[tuple[int, str]]:
    """(offset, piece) of the text in pieces of at most `size` characters, cut at whitespace."""
    pos, n = 0, len(text)
    while pos < n:
        end = min(n, pos + size)
        if end < n:
            cut = max(text.rfind(" ", pos, end), text.rfind("\n", pos, end))
            end = cut if cut > pos else end
        piece = text[pos:end].rstrip()  # ends on a token: the client's byte/char offset check relies on it
        if piece.strip():
            yield pos, piece
        pos = end


def _document_tokens(client: TokenEmbeddingClient, text: str, tick: Callable[[], None]
                     ) -> tuple[np.ndarray, np.ndarray, int]:
    """Character starts and stops of the document's tokens, and the special tokens per input."""
    starts: list[np.ndarray] = []
    stops: list[np.ndarray] = []
    special = 0
    batch: list[tuple[int, str]] = []

    def flush() -> None:
        nonlocal special
        for (offset, _), tokens in zip(batch, client.tokenize([piece for _, piece in batch])):
            special = max(special, tokens.special)
            if tokens.offsets:
                spans = np.asarray(tokens.offsets, dtype=np.int64) + offset
                starts.append(spans[:, 0])
                stops.append(spans[:, 1])
        batch.clear()
        tick()

    for segment in _segments(text):
        batch.append(segment)
        if len(batch) >= SEGMENTS_PER_REQUEST:
            flush()
    if batch:
        flush()
    if not starts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), special
    return np.concatenate(starts), np.concatenate(stops), special


def late_chunk_vectors(client: TokenEmbeddingClient, text: str, spans: Sequence[tuple[int, int]], *,
                       window: int, progress: Callable[[int], None]) -> LateResult:
    """Chunk vectors for `spans` (character ranges of `text`) by late chunking through `client`.

    `client` must return raw token vectors (``normalize=False``). `progress(chunks_finished)` is
    called after every tokenize request and every window (it may raise to stop the job).
    """
    starts, stops, special = _document_tokens(client, text, lambda: progress(0))
    margin = max(2, window // 64)
    length = max(1, window - special - margin)
    windows = plan_windows(starts, stops, length=length, overlap=length // 4)
    n_tokens = len(starts)
    del starts, stops
    pooler = SpanPooler(spans)
    per_request = max(1, min(client.batch_size, TOKENS_PER_REQUEST // max(1, window)))
    for first in range(0, len(windows), per_request):
        group = windows[first:first + per_request]
        results = client.embed_detailed([text[w.start_char:w.end_char] for w in group])
        for w, result in zip(group, results):
            if result.truncated:
                raise AiServerError(
                    f"The embedding server '{client.cfg.name}' cut a window of {w.stop - w.first} tokens short: "
                    f"its window is smaller than the {window} tokens configured. Set the server's "
                    "'max input tokens' to the model's real window.", transient=False)
            if not result.offsets:
                progress(pooler.finish_before(min(w.own_to, len(text))))
                continue
            offsets = np.asarray(result.offsets, dtype=np.int64) + w.start_char
            own = (offsets[:, 0] >= w.own_from) & (offsets[:, 0] < w.own_to)
            pooler.add(result.vectors[own], offsets[own, 0], offsets[own, 1])
            progress(pooler.finish_before(min(w.own_to, len(text))))
        del results
    pooler.finish_all()
    progress(pooler.n)
    return LateResult(pooler.vectors, sorted(pooler.empty), len(windows), n_tokens)


def late_chunk_embed(server: AiServer, embedder, text: str, drafts: Sequence, *,
                     progress: Callable[[int], None]) -> tuple[np.ndarray, dict]:
    """Vectors for the chunk drafts of `text` by late chunking, and facts for the log.

    `embedder` is the server's ordinary embedding client: its model is the one the vectors are
    stored under, and it embeds the (rare) chunks no token fell in. Transient server errors are
    raised as they are (the indexing task retries later); permanent ones say that late chunking
    was being done and what to change.
    """
    window = window_tokens(server)
    client = token_embedder_for(server, normalize=False)
    try:
        with client:
            result = late_chunk_vectors(client, text, [(d.start, d.end) for d in drafts], window=window,
                                        progress=progress)
            dim = result.vectors.shape[1] if result.vectors is not None else None
            if dim is not None and client.cfg.embedding_dim is None and dim != embedder.dim:
                raise AiServerError(
                    f"The embedding server '{server.name}' returns token vectors of {dim} dimensions but "
                    f"embeddings of {embedder.dim}: its model projects its pooled vectors, so late chunking "
                    "cannot be used with it.", transient=False)
    except AiServerError as exc:
        if exc.transient:
            raise
        failure = AiServerError(f"Late chunking failed: {exc} Untick 'Token embeddings' on the server or "
                                "choose another chunking strategy.", transient=False, status=exc.status)
        failure.code = exc.code
        raise failure from exc
    vectors = result.vectors if result.vectors is not None else np.zeros((len(drafts), embedder.dim), np.float32)
    if result.empty:
        logger.warning("late chunking: chunks without tokens embedded from their text",
                       extra={"chunks": len(result.empty)})
        vectors[result.empty] = np.asarray(embedder.embed_passages([drafts[i].embed_text for i in result.empty]),
                                           dtype=np.float32)
    return vectors, {"late_windows": result.windows, "late_tokens": result.tokens,
                     "late_text_embedded": len(result.empty)}
