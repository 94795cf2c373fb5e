"""Split extracted document text into overlapping chunks for embedding and search.

The document text is the blocks' texts joined by "\\n\\n" (`build_layout`).  Every
chunk is an exact slice of it (``layout.text[c.start:c.end] == c.content``).

Rules (see `chunk_layout`):

* a heading block starts a new *section*; chunks and their overlaps never cross a
  section start;
* a chunk holds at most ``size`` tokens ("tokens" strategy, counted with tiktoken)
  or ``size`` characters ("fixed" strategy), overlap included;
* cuts prefer paragraph breaks, then table-row breaks, then sentence ends, then
  whitespace; a "word" is only cut when it alone exceeds the limit, and then never
  inside a combining-character sequence;
* consecutive chunks of a section overlap by at most ``overlap`` tokens/characters;
* fenced code blocks that fit within the limit are never split;
* text is tokenized a bounded window at a time, so a 50 MB paragraph is fine.
"""

from __future__ import annotations

import bisect
import codecs
from collections.abc import Iterator

from documents.chunking import boundaries as cb
from documents.extraction.errors import TOO_MANY_CHUNKS, TooManyChunksError
from documents.chunking.layout import ChunkDraft, TextLayout, embed_text_for
from documents.chunking.tokens import DEFAULT_ENCODING, get_encoding

# The chunking strategies, named once (documents.models.ChunkingStrategy, the retrieval setting,
# indexing and the evaluation all take them from here). `late` cuts like `tokens`; only how its
# chunks are embedded differs (retrieval.indexing.late_chunking).
TOKENS, FIXED, LATE = "tokens", "fixed", "late"
STRATEGIES = (TOKENS, FIXED, LATE)
CUTTERS = (TOKENS, FIXED)  # how chunk_layout cuts text
DEFAULT_SIZES = {"tokens": (512, 64), "fixed": (1000, 200)}


def chunk_layout(
    layout: TextLayout,
    *,
    strategy: str = "tokens",
    size: int | None = None,
    overlap: int | None = None,
    encoding: str = DEFAULT_ENCODING,
    max_chunks: int | None = None,
) -> Iterator[ChunkDraft]:
    """Yield `ChunkDraft`s for ``layout`` lazily, in text order, indexed 0..n-1.

    ``size``/``overlap`` default to 512/64 tokens ("tokens") or 1000/200
    characters ("fixed").  Raises ValueError for bad parameters and
    `TooManyChunksError` (code ``too_many_chunks``) as soon as more than
    ``max_chunks`` chunks would be produced.
    """
    if strategy not in CUTTERS:
        raise ValueError(f"Unknown chunking strategy {strategy!r}; use one of {', '.join(CUTTERS)}.")
    default_size, default_overlap = DEFAULT_SIZES[strategy]
    size = default_size if size is None else size
    overlap = default_overlap if overlap is None else overlap
    if size < (8 if strategy == "tokens" else 1):
        raise ValueError(f"Chunk size {size} is too small.")
    if overlap < 0 or overlap >= size:
        raise ValueError(f"Overlap must be >= 0 and smaller than the chunk size ({size}); got {overlap}.")
    if max_chunks is not None and max_chunks < 0:
        raise ValueError("max_chunks must be >= 0.")
    return Chunker(layout, strategy, size, overlap, get_encoding(encoding), max_chunks).run()


class Chunker:
    """Cuts one layout into chunk drafts (`chunk_layout` checks the parameters first; the anchored
    chunker of a new version subclasses it to cut only the changed gaps)."""

    def __init__(self, layout: TextLayout, strategy: str, size: int, overlap: int, enc, max_chunks):
        self.text = layout.text
        self.spans = layout.spans
        self.starts = [s.start for s in layout.spans]
        self.pages = layout.pages
        self.page_starts = [p[1] for p in layout.pages]
        self.ocr_pages = layout.ocr_pages
        self.by_tokens = strategy == "tokens"
        self.size = size
        self.overlap = overlap
        self.enc = enc
        self.max_chunks = max_chunks
        self._code_fits: dict[int, bool] = {}
        self.chars_per_token = 5.0  # running estimate, sizes the tokenizer window

    # -- measuring -----------------------------------------------------------------
    def count(self, start: int, end: int) -> int:
        return len(self.enc.encode_ordinary(self.text[start:end]))

    def fits(self, start: int, end: int) -> bool:
        if self.by_tokens:
            if (end - start) * 4 <= self.size:  # a code point is at most 4 bytes = 4 tokens
                return True
            if end - start > self.size * 64:
                return False
            return self.count(start, end) <= self.size
        return end - start <= self.size

    def _chars_for_bytes(self, window: str, nbytes: int, from_end: bool = False) -> int:
        data = window.encode("utf-8", "surrogatepass")
        if from_end:
            piece = data[len(data) - nbytes:].lstrip(bytes(range(0x80, 0xC0)))
            return len(piece.decode("utf-8", "surrogatepass"))
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        return len(decoder.decode(data[:nbytes], final=False))

    def limit_end(self, p: int, hard_end: int) -> int:
        """Roughly the furthest end such that text[p:end] fits (exactly for "fixed")."""
        if not self.by_tokens:
            return min(hard_end, p + self.size)
        span = int(self.size * min(8.0, self.chars_per_token * 1.25)) + 16
        while True:
            w_end = min(hard_end, p + span)
            window = self.text[p:w_end]
            tokens = self.enc.encode_ordinary(window)
            if len(tokens) > self.size:
                nbytes = len(self.enc.decode_bytes(tokens[: self.size]))
                return p + self._chars_for_bytes(window, nbytes)
            if w_end >= hard_end:
                return hard_end
            span *= 2

    # -- spans ---------------------------------------------------------------------
    def span_index(self, pos: int) -> int:
        return max(0, bisect.bisect_right(self.starts, pos) - 1)

    def code_fits(self, i: int) -> bool:
        if i not in self._code_fits:
            s = self.spans[i]
            self._code_fits[i] = self.fits(s.start, s.end)
        return self._code_fits[i]

    def sections(self) -> Iterator[tuple[int, int]]:
        start_index = 0
        for i in range(1, len(self.spans) + 1):
            if i == len(self.spans) or self.spans[i].kind == "heading":
                yield self.spans[start_index].start, self.spans[i - 1].end
                start_index = i

    # -- choosing cuts ---------------------------------------------------------------
    def choose_cut(self, p: int, fresh: int, hi: int) -> int:
        """Best cut position in (fresh, hi): a paragraph break or a table-row/code-line break in
        the second half of the window, else a sentence end there, else the last whitespace;
        -1 if there is none.  The chunk will be text[p:cut] (right-stripped)."""
        text = self.text
        half = max(fresh + 1, p + (hi - p) // 2)
        c = cb.last_paragraph_break(text, half, hi)
        if c > fresh:
            return c
        c = self.last_line_break(half, hi)
        if c > fresh:
            return c
        if self.spans[self.span_index(hi - 1)].kind == "table":
            c = self.last_line_break(fresh + 1, hi)  # a shorter chunk rather than half a row
            if c > fresh:
                return c
        c = cb.last_sentence_end(text, half, hi)
        if c > fresh:
            return c
        c = cb.last_space(text, fresh + 1, hi)
        return c if c > fresh else -1

    def last_line_break(self, lo: int, hi: int) -> int:
        """Last "\n" in [lo, hi) inside a table (a row boundary) or a code block."""
        best = -1
        for i in range(self.span_index(lo), self.span_index(hi) + 1):
            s = self.spans[i]
            if s.kind in ("table", "code") and s.start < hi and s.end > lo:
                best = max(best, self.text.rfind("\n", max(lo, s.start), min(hi, s.end)))
        return best

    def keep_code_whole(self, p: int, fresh: int, c: int) -> int:
        i = self.span_index(c)
        s = self.spans[i]
        if s.kind != "code" or not s.start < c < s.end:
            return c
        if self.fits(p, s.end):
            return s.end
        if s.start > fresh and self.code_fits(i):
            return s.start
        return c

    def first_word_end(self, fresh: int, sec_end: int) -> int:
        """End of the word starting at ``fresh`` (next whitespace or section end), or -1 when
        that is further away than any chunk could reach."""
        limit = min(sec_end, fresh + (self.size * 16 if self.by_tokens else self.size + 1))
        ws = cb.next_space(self.text, fresh + 1, limit)
        if ws < 0 and limit == sec_end:
            ws = sec_end
        return ws

    def retreat(self, p: int, fresh: int) -> int:
        """A later start for a chunk whose overlap (starting at ``p``) leaves no room: the last
        word of the overlap, then its last character cluster, then no overlap at all."""
        prev_end = self.trim_end(p, fresh)
        w = cb.last_word_start(self.text, p + 1, prev_end)
        if w > p:
            return w
        c = cb.cluster_start(self.text, prev_end - 1, p)
        if p < c < prev_end:
            return c
        return fresh

    def trim_end(self, p: int, c: int) -> int:
        while c > p and self.text[c - 1].isspace():
            c -= 1
        return c

    # -- overlap ---------------------------------------------------------------------
    def overlap_start(self, start: int, end: int, tokens: list[int] | None) -> int:
        """Start of the next chunk inside [start, end): a suffix of at most ``overlap``
        units, starting at a sentence or word start when possible; -1 for none."""
        text = self.text
        if self.overlap <= 0:
            return -1
        if self.by_tokens:
            assert tokens is not None  # by_tokens chunks always carry their tokens
            if len(tokens) <= self.overlap:
                q_min = start
            else:
                nbytes = len(self.enc.decode_bytes(tokens[-self.overlap:]))
                q_min = end - self._chars_for_bytes(text[start:end], nbytes, from_end=True)
        else:
            q_min = max(start, end - self.overlap)
        q_min = max(q_min, start)
        candidates = []
        if q_min == start:
            candidates.append(start)
        if self.spans[self.span_index(q_min)].kind == "table":
            # Only whole rows overlap: the tail of a row would read as a row of its own.
            line = text.find("\n", max(q_min - 1, start), end)
            while line >= 0:
                q = cb.next_non_space(text, line, end)
                if q < 0:
                    break
                if (self.count(q, end) if self.by_tokens else end - q) <= self.overlap:
                    return q
                line = text.find("\n", q, end)
            return -1
        if self.spans[self.span_index(q_min)].kind == "code":
            line = text.find("\n", max(q_min - 1, start), end)  # whole rows / lines first
            if line >= 0:
                candidates.append(cb.next_non_space(text, line, end))
        s = cb.first_sentence_start(text, q_min, end)
        if s >= 0 and (end - s) * 2 >= end - q_min:
            candidates.append(s)
        w = cb.first_word_start(text, q_min, end)
        if w >= 0:
            candidates.append(w)
        q = cb.forward_to_cluster_start(text, q_min, end)
        q = cb.next_non_space(text, q, end)
        if q >= 0:
            candidates.append(q)
        candidates.append(cb.cluster_start(text, end - 1, start))
        for q in candidates:
            for _ in range(8):
                if q < 0 or q >= end:
                    break
                if (self.count(q, end) if self.by_tokens else end - q) <= self.overlap:
                    return q
                nxt = cb.first_word_start(text, q + 1, end)
                if nxt < 0:
                    nxt = cb.next_non_space(text, cb.forward_to_cluster_start(text, q + 1, end), end)
                q = nxt
        return -1

    # -- main loop -------------------------------------------------------------------
    def run(self) -> Iterator[ChunkDraft]:
        index = 0
        text = self.text
        for sec_start, sec_end in self.sections():
            fresh = cb.next_non_space(text, sec_start, sec_end)
            p = fresh
            while fresh >= 0:
                start, end, tokens = self.next_chunk(p, fresh, sec_end)
                if self.max_chunks is not None and index >= self.max_chunks:
                    raise TooManyChunksError(TOO_MANY_CHUNKS, limit=self.max_chunks)
                yield self.make_chunk(index, start, end, len(tokens) if tokens is not None
                                      else self.count(start, end))
                index += 1
                fresh = cb.next_non_space(text, end, sec_end)
                if fresh < 0:
                    break
                q = self.overlap_start(start, end, tokens)
                p = q if q >= 0 else fresh

    def next_chunk(self, p: int, fresh: int, sec_end: int) -> tuple[int, int, list[int] | None]:
        """One chunk starting at ``p`` (the overlap) whose new text starts at ``fresh``."""
        text = self.text
        i = self.span_index(fresh)
        s = self.spans[i]
        if p < fresh and s.kind == "code" and s.start == fresh and self.code_fits(i) \
                and not self.fits(p, s.end):
            p = fresh  # a code block that fits alone but not after the overlap
        while True:
            hi = self.limit_end(p, sec_end)
            for _ in range(64):
                if hi >= sec_end:
                    c = sec_end
                else:
                    c = self.choose_cut(p, fresh, hi)
                    if c < 0:  # the first new word does not end before `hi`
                        ws = self.first_word_end(fresh, sec_end)
                        if ws > 0 and self.fits(p, ws):
                            c = ws
                        elif p < fresh and (hi <= fresh or (ws > 0 and self.fits(fresh, ws))):
                            break  # the overlap leaves no room for that word: shrink it
                        else:  # a "word" longer than a whole chunk: cut it
                            c = cb.back_to_cluster_start(text, max(hi, fresh + 1), fresh + 1)
                c = self.keep_code_whole(p, fresh, c)
                end = self.trim_end(p, c)
                if not self.by_tokens:
                    if end - p <= self.size:
                        return p, end, None
                    hi = p + self.size
                    continue
                tokens = self.enc.encode_ordinary(text[p:end])
                if len(tokens) <= self.size:
                    if len(tokens) >= self.size // 2:  # adapt the tokenizer window to the script
                        self.chars_per_token = max(0.5, (end - p) / len(tokens))
                    return p, end, tokens
                hi = end - max(1, (end - p) * (len(tokens) - self.size) // len(tokens))
            if p < fresh:
                p = self.retreat(p, fresh)
                continue
            # Unreachable in practice (a single character is at most 4 tokens and size >= 8):
            # emit one character cluster so that progress is guaranteed.
            end = cb.forward_to_cluster_start(text, fresh + 1, sec_end)
            return p, end, self.enc.encode_ordinary(text[p:end])

    def make_chunk(self, index: int, start: int, end: int, token_count: int) -> ChunkDraft:
        span = self.spans[self.span_index(start)]
        metadata: dict = {"kind": span.kind}
        if self.pages:
            first = max(0, bisect.bisect_right(self.page_starts, start) - 1)
            last = max(0, bisect.bisect_left(self.page_starts, end) - 1)
            numbers: list[int] = []
            for number, _s, _e in self.pages[first:last + 1]:
                if not numbers or numbers[-1] != number:
                    numbers.append(number)
            if len(numbers) > 1:
                metadata["pages"] = numbers
            ocr = [n for n in numbers if n in self.ocr_pages]
            if ocr:  # which of the chunk's pages were read by OCR, and how sure Tesseract was
                metadata["ocr"] = {"pages": ocr, "confidence": round(
                    sum(self.ocr_pages[n] for n in ocr) / len(ocr), 1)}
        table_header = None
        if span.kind == "table" and span.table_header and start > span.start \
                and end > span.start + len(span.table_header):
            table_header = span.table_header
            metadata["table_header"] = table_header
        if span.kind == "table" and span.table_caption and start >= span.start:
            metadata["table_caption"] = span.table_caption  # the title above is not in this chunk
        content = self.text[start:end]
        return ChunkDraft(
            index=index,
            content=content,
            start=start,
            end=end,
            page_number=span.page_number,
            heading_path=span.heading_path,
            token_count=token_count,
            metadata=metadata,
            embed_text=embed_text_for(content, span.heading_path, table_header,
                                      table_caption=metadata.get("table_caption")),
        )
