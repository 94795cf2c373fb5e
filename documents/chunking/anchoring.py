"""Chunk a new version of a document anchored on its previous version's chunks.

The normal chunker (`documents.chunking.cutter`) packs sentences up to the size limit and starts each
chunk with the previous one's tail, so an edit that changes a page's length moves the boundaries
of every following chunk until one happens to end on the same sentence as before — each of them a
new text, a new embedding. For a new version this module keeps every previous chunk whose text is
still there, unchanged, and chunks only the text between kept chunks afresh (with the same cutter,
size and overlap), so an edit re-embeds the chunks it touches and at most one or two around them.

* **Alignment.** Both texts are split into sentence/line units and aligned (`unchanged_runs`); a previous
  chunk is kept when it lies inside one unchanged run (so its text is identical and its place is
  unambiguous, even when the same sentence occurs elsewhere) and does not cross a section start of
  the new layout. Its offsets, page numbers, heading path and table header are computed again from
  the NEW layout (`Chunker.make_chunk`): citations and the viewer's highlights use them.
* **Gaps.** The text between two kept chunks is cut by the normal chunker's loop, limited to the
  gap and to its sections; the first new chunk overlaps the kept chunk before it as usual, the last
  one ends where the next kept chunk starts.

Only new versions use it (the indexing pipeline decides, `retrieval.indexing.pipeline._build`): a
first index or a re-index chunks exactly as `chunk_layout` does, so fresh documents' retrieval is
unchanged. The result obeys the chunker's contract: every chunk is an exact slice of the new text,
at most ``size`` tokens/characters, never across a section start, and the chunks cover the text.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from documents.chunking import boundaries as cb
from documents.chunking.cutter import CUTTERS, DEFAULT_SIZES, Chunker, chunk_layout
from documents.chunking.layout import ChunkDraft, TextLayout
from documents.extraction.errors import TOO_MANY_CHUNKS, TooManyChunksError
from documents.chunking.tokens import DEFAULT_ENCODING, get_encoding

# A unit ends after a line break or a sentence terminator, with the whitespace that follows.
_UNIT_END_RE = re.compile(r"\n\s*|(?<=[.!?…。！？])\s+")
# Beyond this many units per text (a few thousand pages) chunk a version the normal way.
MAX_UNITS = 400_000


@dataclass(frozen=True, slots=True)
class PreviousChunks:
    """The previous version's text and its chunks' (start, end) offsets into it, in chunk order."""
    text: str
    spans: list[tuple[int, int]]


def _units(text: str) -> list[int]:
    """The end offsets of the text's units (the last one is len(text))."""
    ends = [m.end() for m in _UNIT_END_RE.finditer(text)]
    if not ends or ends[-1] != len(text):
        ends.append(len(text))
    return ends


def unchanged_runs(old: str, new: str) -> list[tuple[int, int, int]] | None:
    """(old start, old end, new start) of the runs of text both versions share, in order; None when the
    texts are too large to align.

    A patience alignment of the units (linear but for a sort): units that occur exactly once in each
    text are the anchors, the longest chain of them in the same order in both is kept, and each
    anchor grows into the run of equal units around it — so repeated units (table rows, running
    headers) join the run of their unique neighbours, and nothing is quadratic (difflib is, with many
    repeated units: minutes for a long document with tables).
    """
    if old == new:
        return [(0, len(old), 0)]
    old_ends, new_ends = _units(old), _units(new)
    if len(old_ends) > MAX_UNITS or len(new_ends) > MAX_UNITS:
        return None
    a = [old[s:e] for s, e in zip([0] + old_ends[:-1], old_ends)]
    b = [new[s:e] for s, e in zip([0] + new_ends[:-1], new_ends)]
    a_starts, b_starts = [0] + old_ends, [0] + new_ends
    runs: list[tuple[int, int, int]] = []
    ai = bj = 0  # the units before these are in a run already
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    if prefix:
        runs.append((0, prefix, 0))
        ai = bj = prefix
    for i, j in _anchors(a, b):
        if i < ai or j < bj:
            continue  # inside the run of an earlier anchor
        si, sj = i, j
        while si > ai and sj > bj and a[si - 1] == b[sj - 1]:
            si, sj = si - 1, sj - 1
        ei, ej = i + 1, j + 1
        while ei < len(a) and ej < len(b) and a[ei] == b[ej]:
            ei, ej = ei + 1, ej + 1
        runs.append((si, ei, sj))
        ai, bj = ei, ej
    suffix = 0
    while suffix < min(len(a) - ai, len(b) - bj) and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    if suffix:
        runs.append((len(a) - suffix, len(a), len(b) - suffix))
    return [(a_starts[i1], a_starts[i2], b_starts[j1]) for i1, i2, j1 in runs]


def _anchors(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """The (i, j) of units unique in both lists, the longest chain increasing in both (patience sort)."""
    count_a, count_b = Counter(a), Counter(b)
    where_b = {unit: j for j, unit in enumerate(b) if count_b[unit] == 1}
    pairs = [(i, where_b[unit]) for i, unit in enumerate(a) if count_a[unit] == 1 and unit in where_b]
    tails: list[int] = []  # tails[k]: the pair index ending the best chain of length k + 1
    back: list[int] = [-1] * len(pairs)
    for n, (_i, j) in enumerate(pairs):
        k = _bisect_tails(pairs, tails, j)
        back[n] = tails[k - 1] if k else -1
        if k == len(tails):
            tails.append(n)
        else:
            tails[k] = n
    chain: list[tuple[int, int]] = []
    n = tails[-1] if tails else -1
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    return chain[::-1]


def _bisect_tails(pairs: list[tuple[int, int]], tails: list[int], j: int) -> int:
    """The first chain length whose tail's j is >= j."""
    lo, hi = 0, len(tails)
    while lo < hi:
        mid = (lo + hi) // 2
        if pairs[tails[mid]][1] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


def kept_chunks(previous: PreviousChunks, layout: TextLayout) -> list[tuple[int, int]]:
    """The previous chunks that stay as they are: their (start, end) in the NEW text, in order."""
    runs = unchanged_runs(previous.text, layout.text)
    if not runs:
        return []
    run_starts = [r[0] for r in runs]
    section_starts = [s.start for s in layout.spans if s.kind == "heading"]
    kept: list[tuple[int, int]] = []
    for start, end in previous.spans:
        i = bisect.bisect_right(run_starts, start) - 1
        if i < 0 or end > runs[i][1] or end <= start:
            continue
        new_start = start - runs[i][0] + runs[i][2]
        new_end = new_start + (end - start)
        # A heading inside it would start a section there: the chunker never crosses one.
        h = bisect.bisect_right(section_starts, new_start)
        if h < len(section_starts) and section_starts[h] < new_end:
            continue
        if kept and (new_start < kept[-1][0] or new_end <= kept[-1][1]):
            continue  # keeps the chunks in text order (cannot happen with an alignment; cheap to be sure)
        kept.append((new_start, new_end))
    return kept


class _GapChunker(Chunker):
    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.section_list = list(self.sections())
        self.section_ends = [end for _start, end in self.section_list]

    def gap(self, lo: int, hi: int, before: tuple[int, int] | None) -> Iterator[tuple[int, int, int]]:
        """The chunks of the text in [lo, hi) as (start, end, token count), section by section; the
        first overlaps `before` (the kept chunk ending at `lo`) when it is in the same section."""
        text = self.text
        first = bisect.bisect_right(self.section_ends, lo)  # the first section ending after lo
        for sec_start, sec_end in self.section_list[first:]:
            if sec_start >= hi:
                break
            s0, s1 = max(sec_start, lo), min(sec_end, hi)
            fresh = cb.next_non_space(text, s0, s1)
            if fresh < 0:
                continue
            p = fresh
            if before is not None and s0 == lo and before[0] >= sec_start:
                tokens = self.enc.encode_ordinary(text[before[0]:before[1]]) if self.by_tokens else None
                q = self.overlap_start(before[0], before[1], tokens)
                p = q if q >= 0 else fresh
            while fresh >= 0:
                start, end, tokens = self.next_chunk(p, fresh, s1)
                yield start, end, len(tokens) if tokens is not None else self.count(start, end)
                fresh = cb.next_non_space(text, end, s1)
                if fresh < 0:
                    break
                q = self.overlap_start(start, end, tokens)
                p = q if q >= 0 else fresh


def chunk_layout_anchored(
    layout: TextLayout,
    previous: PreviousChunks | None,
    *,
    strategy: str = "tokens",
    size: int | None = None,
    overlap: int | None = None,
    encoding: str = DEFAULT_ENCODING,
    max_chunks: int | None = None,
) -> tuple[list[ChunkDraft], int | None]:
    """The new version's chunks (indexed 0..n-1, in text order) and how many were kept from `previous`.

    `previous` must have been chunked with the same strategy, size, overlap and encoding (the
    caller checks); the parameters and errors are those of `chunk_layout`. Without `previous`: the
    chunks of `chunk_layout` and None.
    """
    plain = chunk_layout(layout, strategy=strategy, size=size, overlap=overlap, encoding=encoding,
                         max_chunks=max_chunks)  # validates the parameters first
    if previous is None:
        return list(plain), None
    assert strategy in CUTTERS
    default_size, default_overlap = DEFAULT_SIZES[strategy]
    chunker = _GapChunker(layout, strategy, default_size if size is None else size,
                          default_overlap if overlap is None else overlap, get_encoding(encoding), max_chunks)
    kept = kept_chunks(previous, layout)
    pieces: list[tuple[int, int, int]] = []
    before: tuple[int, int] | None = None
    for anchor in [*kept, None]:
        lo = before[1] if before is not None else 0
        hi = anchor[0] if anchor is not None else len(layout.text)
        if hi > lo:
            pieces.extend(chunker.gap(lo, hi, before))
        if anchor is not None:
            pieces.append((anchor[0], anchor[1], chunker.count(anchor[0], anchor[1])))
        before = anchor
        if max_chunks is not None and len(pieces) > max_chunks:
            raise TooManyChunksError(TOO_MANY_CHUNKS, limit=max_chunks)
    pieces.sort()
    return [chunker.make_chunk(i, start, end, count) for i, (start, end, count) in enumerate(pieces)], len(kept)
