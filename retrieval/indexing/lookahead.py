"""Embedding while extraction reads on: a long document's extract and embed stages overlapped.

While the extract stage reads a paged document (a PDF, OCR included), the chunks of the pages it
has read are cut and handed to one embedding thread through a bounded queue, so the embedder works
while the next pages are read. The pipeline's own stages stay what they were: once extraction
ends, the whole text is chunked as always and `embed` takes each chunk's vector from what the
thread computed *when its embedded text is exactly the same* (by the embeddings cache's key), else
embeds it. So the chunks and their vectors never depend on the look-ahead; a text it guessed wrong
only costs its embedding.

Bounded on every side: at most `depth` batches wait in the queue (the reader never blocks on it:
when it is full, the chunks are simply offered again later, or embedded by the embed stage); the
partial chunking runs at most at page boundaries and takes at most `BUDGET` of the time spent so far
(re-cutting a growing text costs more each time); and only chunks that end before the last page
read are offered (the cut of the text's tail may change once more text follows).

Nothing half-done: the thread only computes vectors in memory; it writes nothing, and `close()`
(always called, the job failing or not) stops it and waits for its batch in flight. An error in
the thread stops the look-ahead only: the embed stage then meets the server as before, and a
failure goes through retrieval.indexing.failure unchanged.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from documents.chunking import ChunkDraft, TextLayout, build_layout
from documents.extraction import Block
from retrieval.embedding_cache import cache_lookup
from retrieval.indexing.time_limit import shield

logger = logging.getLogger(__name__)

BUDGET = 0.1  # share of the elapsed time the partial chunking may take (None: cut at every page)
MIN_NEW_CHARS = 2000  # text read since the last cut before another cut is worth it
HOLD_BACK = 2  # the last drafts of a partial cut are never offered (they may be cut otherwise later)


# The partial layout, the page labels known so far and the document's own title -> its chunk drafts,
# cut and given their embedded text as the chunk stage would.
Cut = Callable[[TextLayout, dict, str], Sequence[ChunkDraft]]


class Lookahead:
    """One document's look-ahead embedder (see the module's docstring). Use as a context manager:
    `watch()` the extraction's blocks, then `vectors()`; leaving the block always stops the thread."""

    def __init__(self, client, *, cut: Cut, key: Callable[[str], str], batch: int, depth: int,
                 known: Callable[[list[str]], set[str]] | None = None):
        self._embed, self._cut, self._key = client.embed_passages, cut, key
        self._known = known or _cached_keys
        # The embed stage's batches: the settings' size, or the client's own smaller one (built-in: 8).
        self.batch = max(1, min(batch, getattr(client, "batch_size", None) or batch))
        self.budget = BUDGET
        self._labels: Callable[[], dict] = dict
        self._own_title = ""
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._seen: list[Block] = []
        self._handed: set[str] = set()
        self._done: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._started = time.monotonic()
        self._cut_s = 0.0
        self._chars = self._chars_at_cut = 0
        self.cuts = 0
        self._thread = threading.Thread(target=self._run, name="index-lookahead", daemon=True)
        self._thread.start()

    def __enter__(self) -> Lookahead:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the reader's side (the job's thread) ------------------------------------------------
    def watch(self, blocks: Iterable[Block], labels: Callable[[], dict], own_title: str) -> Iterator[Block]:
        """`blocks` passed through unchanged; at each new page, the chunks read so far may be offered.
        `labels()`: the page labels known so far (the extraction's `labels_so_far`); `own_title`: the
        document's title from its metadata, if any."""
        self._labels, self._own_title = labels, own_title
        page = None
        for block in blocks:
            if block.page_number is not None and page is not None and block.page_number != page:
                self._maybe_offer()
            if block.page_number is not None:
                page = block.page_number
            self._seen.append(block)
            self._chars += len(block.text)
            yield block

    def _maybe_offer(self) -> None:
        if self._stop.is_set() or self._error is not None or self._queue.full():
            return
        if self._chars - self._chars_at_cut < MIN_NEW_CHARS:
            return
        if self.budget is not None and self._cut_s > self.budget * (time.monotonic() - self._started):
            return
        t0 = time.monotonic()
        try:
            self._offer()
        except Exception:  # noqa: BLE001 - the chunk stage meets (and reports) the same problem
            logger.info("indexing look-ahead stopped", exc_info=True)
            self._stop.set()
        finally:
            self._cut_s += time.monotonic() - t0
            self._chars_at_cut = self._chars
            self.cuts += 1

    def _offer(self) -> None:
        layout = build_layout(self._seen)
        if len(layout.pages) < 2:
            return
        last_page_start = layout.pages[-1][1]
        drafts = list(self._cut(layout, self._labels(), self._own_title))[:-HOLD_BACK]
        fresh: dict[str, str] = {}  # key -> text; a text repeated in the document once
        for draft in drafts:
            if draft.end <= last_page_start:
                fresh.setdefault(self._key(draft.embed_text), draft.embed_text)
        for key in [k for k in fresh if k in self._handed]:
            del fresh[key]
        if not fresh:
            return
        known = self._known(list(fresh))
        self._handed.update(known)
        todo = [(k, t) for k, t in fresh.items() if k not in known]
        for start in range(0, len(todo) - self.batch + 1, self.batch):  # whole batches only
            part = todo[start:start + self.batch]
            try:
                self._queue.put_nowait(([k for k, _ in part], [t for _, t in part]))
            except queue.Full:
                return
            self._handed.update(k for k, _ in part)

    # -- the embedding thread -------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                item = self._queue.get()
                if item is None:
                    return
                keys, texts = item
                vectors = np.asarray(self._embed(texts), dtype=np.float32)
                with self._lock:
                    self._done.update(zip(keys, vectors))
        except BaseException as exc:  # noqa: BLE001 - the embed stage meets the server again and reports
            self._error = exc
            logger.info("indexing look-ahead stopped: %s", exc.__class__.__name__)
        finally:
            _close_db_connections()

    # -- the end ----------------------------------------------------------------------------
    def embedded(self) -> int:
        """How many texts the thread has embedded so far."""
        with self._lock:
            return len(self._done)

    def take(self, keys: Sequence[str], *, dim: int, tick: Callable[[int], None]) -> dict[str, np.ndarray]:
        """Let the thread finish the batches queued, then the vectors it computed for `keys`.
        `tick(n)` is called about every half second while it works (n: how many of `keys` it has done)."""
        wanted = set(keys)
        ended = False
        while self._thread.is_alive():
            if not ended:
                ended = self._put_end()
            self._thread.join(0.5)
            with self._lock:
                done = len(wanted.intersection(self._done))
            tick(done)
        with self._lock:
            return {k: v for k, v in self._done.items() if k in wanted and v.shape == (dim,)}

    def close(self) -> None:
        """Stop at once: the queued batches are dropped, the batch in flight is waited for."""
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._put_end()
        self._thread.join()

    def _put_end(self) -> bool:
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            return False
        return True

    @property
    def facts(self) -> dict:
        """For the job's timings: the partial cuts made, their seconds, the texts embedded ahead."""
        return {"lookahead_cuts": self.cuts, "lookahead_cut_s": round(self._cut_s, 3),
                "lookahead_embedded": self.embedded()}


def _cached_keys(keys: list[str]) -> set[str]:
    """The keys the embeddings cache has a vector for (a re-index finds its chunks there)."""
    with shield.hold():
        return set(cache_lookup(keys))


def _close_db_connections() -> None:
    """The thread's own database connections (an embedder may touch Django's cache): closed."""
    try:
        from django.db import connections

        connections.close_all()
    except Exception:  # noqa: BLE001 - no Django here, nothing to close
        pass
