"""Tests for documents.chunking (pure Python; no Django, no database)."""

from __future__ import annotations

import bisect
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from documents.chunking import boundaries as cb
from documents.chunking.cutter import chunk_layout
from documents.chunking.layout import BlockSpan, ChunkDraft, TextLayout, build_layout
from documents.extraction.errors import ExtractionError, TooManyChunksError
from documents.extraction.text import iter_markdown_blocks
from documents.extraction.types import Block
from documents.chunking.tokens import get_encoding

ENC = get_encoding("o200k_base")


def measure(text: str, strategy: str) -> int:
    return len(ENC.encode_ordinary(text)) if strategy == "tokens" else len(text)


def para(text: str, page: int | None = None, path: tuple[str, ...] = ()) -> Block:
    return Block(text, page, path, "paragraph")


def heading(text: str, path: tuple[str, ...]) -> Block:
    return Block(text, None, path, "heading")


def check_invariants(layout: TextLayout, chunks: list[ChunkDraft], strategy: str, size: int,
                     overlap: int) -> None:
    """Every property chunk_layout promises, checked against the layout."""
    text = layout.text
    heading_starts = [s.start for s in layout.spans if s.kind == "heading"]
    code_starts = {s.start: s for s in layout.spans if s.kind == "code"}

    def section(pos: int) -> int:
        return bisect.bisect_right(heading_starts, pos)

    assert [c.index for c in chunks] == list(range(len(chunks)))
    covered = 0
    for c in chunks:
        # exact slices, stripped, never whitespace-only
        assert c.content == text[c.start:c.end]
        assert c.start < c.end
        assert c.content.strip() == c.content
        # the limit
        assert c.token_count == len(ENC.encode_ordinary(c.content))
        assert measure(c.content, strategy) <= size
        # never across a heading start
        i = bisect.bisect_right(heading_starts, c.start)
        assert i == len(heading_starts) or heading_starts[i] >= c.end
        assert section(c.start) == section(c.end - 1)
        # coverage: what lies between covered text and this chunk is whitespace
        if c.start > covered:
            assert text[covered:c.start].strip() == ""
        covered = max(covered, c.end)
        assert c.embed_text.endswith(c.content)
    assert text[covered:].strip() == ""

    # overlap between consecutive chunks of one section
    for a, b in zip(chunks, chunks[1:]):
        assert b.start >= a.start and b.end > a.end  # progress, never backwards
        if section(a.start) != section(b.start):
            assert b.start >= a.end  # no overlap across a heading
            continue
        if b.start < a.end:
            assert overlap > 0
            assert measure(text[b.start:a.end], strategy) <= overlap
        elif overlap > 0:
            # No overlap is only allowed when even the last character cluster of `a` is
            # over the overlap budget, when that cluster followed by the next chunk's first
            # word would not fit in one chunk, when `b` is a code block kept whole, or when `a`
            # ends in a table (only whole rows overlap, and none fitted).
            last = cb.cluster_start(text, a.end - 1, a.start)
            in_table = any(s.kind == "table" and s.start <= a.end - 1 < s.end for s in layout.spans)
            sec_end = heading_starts[section(b.start)] if section(b.start) < len(heading_starts) \
                else len(text)
            ws = cb.next_space(text, b.start, sec_end)
            ws = sec_end if ws < 0 else ws
            assert (
                measure(text[last:a.end], strategy) > overlap
                or measure(text[last:ws], strategy) > size
                or b.start in code_starts
                or in_table
            ), (a, b)


def run(layout: TextLayout, **kw) -> list[ChunkDraft]:
    return list(chunk_layout(layout, **kw))


# --- tokens: offline tiktoken -----------------------------------------------------------

def test_get_encoding_works_offline_from_an_empty_cache_dir(tmp_path, monkeypatch):
    import hashlib
    import socket

    import tiktoken.registry

    from documents.chunking import tokens

    def no_network(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    cache = tmp_path / "tiktoken-cache"  # does not exist yet
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    for name in tokens.SUPPORTED_ENCODINGS:  # force tiktoken to load the files again
        monkeypatch.delitem(tiktoken.registry.ENCODINGS, name, raising=False)
    tokens.get_encoding.cache_clear()
    try:
        for name in ("o200k_base", "cl100k_base"):
            enc = tokens.get_encoding(name)
            assert enc.name == name
            sample = "Grüße, 世界! naïve café — 12345"
            assert enc.decode(enc.encode_ordinary(sample)) == sample
            cached = cache / tokens.cache_key(name)
            url, sha256 = tokens._ENCODINGS[name]
            assert tokens.cache_key(name) == hashlib.sha1(url.encode()).hexdigest()
            assert hashlib.sha256(cached.read_bytes()).hexdigest() == sha256
        assert os.environ["TIKTOKEN_CACHE_DIR"] == str(cache)
        assert tokens.get_encoding() is tokens.get_encoding("o200k_base")  # cached
        assert not list(cache.glob("*.tmp"))  # atomic copy left nothing behind
        # a damaged cache file is replaced
        target = cache / tokens.cache_key("o200k_base")
        target.write_bytes(b"garbage")
        tokens.ensure_cached("o200k_base", cache)
        assert hashlib.sha256(target.read_bytes()).hexdigest() == tokens._ENCODINGS["o200k_base"][1]
        with pytest.raises(ValueError):
            tokens.get_encoding("gpt2")
    finally:
        tokens.get_encoding.cache_clear()


def test_count_tokens():
    from documents.chunking.tokens import count_tokens

    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special tokens are plain text here


# --- build_layout -------------------------------------------------------------------------

def test_build_layout_joins_blocks_with_blank_lines_and_records_spans():
    blocks = [para("alpha", 1), para("  ", 1), para("beta\ngamma", 2), heading("# H", ("H",)), para("delta")]
    layout = build_layout(iter(blocks))  # a generator is fine
    assert layout.text == "alpha\n\nbeta\ngamma\n\n# H\n\ndelta"
    assert [(s.start, s.end, s.kind) for s in layout.spans] == [
        (0, 5, "paragraph"), (7, 17, "paragraph"), (19, 22, "heading"), (24, 29, "paragraph")]
    for s, b in zip(layout.spans, [blocks[0], blocks[2], blocks[3], blocks[4]]):
        assert layout.text[s.start:s.end] == b.text
    assert layout.pages == [(1, 0, 5), (2, 7, 17)]
    assert isinstance(layout.spans[0], BlockSpan)


def test_empty_layout_gives_no_chunks():
    assert run(build_layout([])) == []


# --- unit behaviour ------------------------------------------------------------------------

def test_small_document_is_one_chunk_with_heading_prefix():
    layout = build_layout([heading("Intro", ("Intro",)), para("Hello world.", path=("Intro",))])
    [c] = run(layout)
    assert (c.start, c.end, c.content) == (0, len(layout.text), "Intro\n\nHello world.")
    assert c.heading_path == ("Intro",)
    assert c.embed_text == "Intro\nIntro\n\nHello world."
    assert c.metadata["kind"] == "heading"


def test_token_limit_overlap_and_sentence_boundaries():
    sentences = [f"Sentence number {i} talks about topic {i % 7} in some detail." for i in range(200)]
    layout = build_layout([para(" ".join(sentences))])
    chunks = run(layout, size=64, overlap=16)
    check_invariants(layout, chunks, "tokens", 64, 16)
    assert len(chunks) > 10
    assert all(c.token_count <= 64 for c in chunks)
    # cuts land on sentence ends, and overlaps start on a word
    assert all(c.content.endswith(".") for c in chunks[:-1])
    assert all(b.start < a.end for a, b in zip(chunks, chunks[1:]))
    assert all(layout.text[c.start - 1] == " " for c in chunks[1:])


def test_paragraph_breaks_are_preferred_over_sentences():
    paras = [" ".join(f"Para {p} sentence {s}." for s in range(6)) for p in range(30)]
    layout = build_layout([para(t) for t in paras])
    chunks = run(layout, size=100, overlap=0)
    check_invariants(layout, chunks, "tokens", 100, 0)
    for c in chunks[:-1]:
        assert layout.text[c.end:c.end + 2] == "\n\n", repr(c.content[-30:])


def test_headings_always_start_new_chunks_and_overlap_stays_in_section():
    blocks = []
    for h in range(5):
        blocks.append(heading(f"## Section {h}", (f"Section {h}",)))
        blocks.append(para(" ".join(f"word{h}x{i}" for i in range(150)), path=(f"Section {h}",)))
    layout = build_layout(blocks)
    chunks = run(layout, size=50, overlap=10)
    check_invariants(layout, chunks, "tokens", 50, 10)
    firsts = [c for c in chunks if c.content.startswith("## Section")]
    assert len(firsts) == 5
    for c in chunks:
        sec = c.heading_path[0][-1]
        assert all(w.startswith(f"word{sec}x") for w in c.content.split() if w.startswith("word"))
        assert c.embed_text.startswith(f"Section {sec}\n")


def test_fixed_strategy_defaults_and_limits():
    text = " ".join(f"w{i}" for i in range(3000))
    layout = build_layout([para(text)])
    chunks = run(layout, strategy="fixed")  # 1000 characters, 200 overlap
    check_invariants(layout, chunks, "fixed", 1000, 200)
    assert max(len(c.content) for c in chunks) > 900
    overlaps = [a.end - b.start for a, b in zip(chunks, chunks[1:])]
    assert all(0 < o <= 200 for o in overlaps)
    assert min(overlaps) > 150  # close to the requested overlap, not a token gesture


def test_long_word_is_cut_at_character_boundaries_not_inside_combining_sequences():
    word = "e\u0301" * 400  # 'é' written as e + COMBINING ACUTE ACCENT
    layout = build_layout([para(f"start {word} end")])
    chunks = run(layout, strategy="fixed", size=101, overlap=10)
    check_invariants(layout, chunks, "fixed", 101, 10)
    for c in chunks:
        assert not cb.is_continuation(layout.text, c.start)
        assert c.end == len(layout.text) or not cb.is_continuation(layout.text, c.end)
    assert chunks[0].content == "start"  # the word does not fit, so it is not glued on


def test_code_block_kept_whole_when_it_fits():
    code = "```python\n" + "\n".join(f"x{i} = compute({i})  # step {i}" for i in range(12)) + "\n```"
    blocks = [para("Intro sentence number one. " * 30), Block(code, None, (), "code"),
              para("Outro text. " * 30)]
    layout = build_layout(blocks)
    for strategy, size, overlap in (("tokens", 200, 40), ("fixed", 600, 100)):
        chunks = run(layout, strategy=strategy, size=size, overlap=overlap)
        check_invariants(layout, chunks, strategy, size, overlap)
        span = layout.spans[1]
        assert sum(code in c.content for c in chunks) == 1
        # no cut inside the code block; a chunk may only *start* inside it as an overlap
        assert not any(span.start < c.end < span.end for c in chunks)
        for a, b in zip(chunks, chunks[1:]):
            if span.start < b.start < span.end:
                assert b.start < a.end


def test_big_code_block_is_split_when_it_cannot_fit():
    code = "```\n" + "\n".join(f"line_{i} = {i}" for i in range(300)) + "\n```"
    layout = build_layout([Block(code, None, (), "code")])
    chunks = run(layout, size=64, overlap=8)
    check_invariants(layout, chunks, "tokens", 64, 8)
    assert len(chunks) > 5
    assert all(c.content.endswith(tuple("0123456789`")) for c in chunks)  # cut at line ends


def test_table_rows_are_cut_at_row_boundaries_and_header_is_repeated():
    header = "Name | Qty | Price"
    rows = [header] + [f"item {i} | {i} | {i * 1.5:.2f}" for i in range(120)]
    blocks = [para("Price list follows."), Block("\n".join(rows), None, ("Prices",), "table", header)]
    layout = build_layout(blocks)
    chunks = run(layout, size=80, overlap=24)
    check_invariants(layout, chunks, "tokens", 80, 24)
    table_span = layout.spans[1]
    for c in chunks:
        if c.end > table_span.start + len(header) and c.start > table_span.start:
            assert c.metadata["table_header"] == header
            # The short line before the table is its caption, embedded with the header (issue #31).
            assert c.metadata["table_caption"] == "Price list follows."
            assert c.embed_text == f"Prices\nPrice list follows.\n{header}\n{c.content}"
            assert header not in c.content
            # whole rows only
            assert layout.text[c.start - 1] == "\n"
            assert c.end == len(layout.text) or layout.text[c.end] == "\n"
        else:
            assert "table_header" not in c.metadata
    assert sum("table_header" in c.metadata for c in chunks) >= 3


def test_pages_metadata():
    blocks = [para(" ".join(f"p{p}w{i}" for i in range(60)), page=p) for p in (1, 2, 3)]
    layout = build_layout(blocks)
    chunks = run(layout, strategy="fixed", size=700, overlap=50)
    check_invariants(layout, chunks, "fixed", 700, 50)
    for c in chunks:
        pages = sorted({int(w[1]) for w in c.content.split()})
        assert c.page_number == pages[0]
        if len(pages) > 1:
            assert c.metadata["pages"] == pages
        else:
            assert "pages" not in c.metadata


def test_max_chunks_raises_as_soon_as_exceeded():
    layout = build_layout([para(f"Paragraph {i} " + "text " * 40) for i in range(200)])
    produced = []
    with pytest.raises(ExtractionError) as info:
        for c in chunk_layout(layout, size=64, overlap=0, max_chunks=5):
            produced.append(c)
    assert info.value.code == "too_many_chunks"
    assert isinstance(info.value, TooManyChunksError)
    assert "more than 5 chunks" in info.value.message and "MAX_CHUNKS_PER_DOCUMENT" in info.value.message
    assert len(produced) == 5
    assert len(run(layout, size=64, overlap=0, max_chunks=10_000)) > 5


@pytest.mark.parametrize("kw", [dict(strategy="words"), dict(size=5), dict(size=100, overlap=100),
                                dict(overlap=-1), dict(strategy="fixed", size=0)])
def test_bad_parameters(kw):
    with pytest.raises(ValueError):
        chunk_layout(build_layout([para("x")]), **kw)


def test_special_token_text_is_plain_text():
    layout = build_layout([para("before <|endoftext|> after")])
    [c] = run(layout)
    assert c.token_count == len(ENC.encode_ordinary(c.content))


def test_chunking_5mb_is_fast_and_tokenizes_bounded_windows(monkeypatch):
    words = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
             "incididunt ut labore et dolore magna aliqua").split()
    text = " ".join(words[(i * 7) % len(words)] for i in range(900_000))  # ~5 MB, one paragraph
    layout = build_layout([para(text)])
    longest = [0]
    original = ENC.encode_ordinary

    def spy(s):
        longest[0] = max(longest[0], len(s))
        return original(s)

    monkeypatch.setattr(ENC, "encode_ordinary", spy)
    started = time.process_time()  # CPU time: what other work on the machine does not stretch
    chunks = run(layout)
    elapsed = time.process_time() - started
    assert elapsed < 8, elapsed
    assert 0 < longest[0] < 20_000  # never the whole 5 MB at once
    assert chunks[-1].end == len(text)
    assert all(c.token_count <= 512 for c in chunks)
    assert len(chunks) > 1500
    for c in chunks[::97]:
        assert text[c.start:c.end] == c.content


# --- property tests -----------------------------------------------------------------------

_PIECES = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12),
    st.from_regex(r"[a-z]{1,9}", fullmatch=True),
    st.sampled_from([" ", " ", "\n", "\n\n", ". ", "! ", "。", "؟ ", "e\u0301", "👍🏽", "🇫🇷",
                     "नमस्ते", "مرحبا", "Привет", "  \t", "日本語", "\u200d", "a\u0308\u0323"]),
)
_TEXT = st.lists(_PIECES, max_size=50).map("".join)


@st.composite
def layouts(draw, with_code: bool = True):
    blocks = []
    path: tuple[str, ...] = ()
    kinds = ["paragraph", "paragraph", "paragraph", "heading", "table"] + (["code"] if with_code else [])
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(kinds))
        body = draw(_TEXT)
        if kind == "heading":
            title = " ".join(body.split())[:40] or "Untitled"
            path = (title,)
            blocks.append(Block("# " + title, None, path, "heading"))
        elif kind == "table":
            rows = [r.strip() for r in body.split("\n") if r.strip()] or ["only"]
            rows = [" | ".join(r.split()) or r for r in rows]
            blocks.append(Block("\n".join(rows), None, path, "table", rows[0]))
        elif kind == "code":
            blocks.append(Block("```\n" + body + "\n```", None, path, "code"))
        else:
            blocks.append(Block(body, draw(st.sampled_from([None, 1, 2])), path, "paragraph"))
    return build_layout(blocks)


# CHUNKING_EXAMPLES=5000 for a longer local run.
PROPS = settings(max_examples=int(os.environ.get("CHUNKING_EXAMPLES", "100")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(layout=layouts(), size=st.integers(8, 60), data=st.data())
def test_property_tokens(layout, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = run(layout, strategy="tokens", size=size, overlap=overlap)
    check_invariants(layout, chunks, "tokens", size, overlap)


@PROPS
@given(layout=layouts(), size=st.integers(1, 80), data=st.data())
def test_property_fixed(layout, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = run(layout, strategy="fixed", size=size, overlap=overlap)
    check_invariants(layout, chunks, "fixed", size, overlap)


@PROPS
@given(text=st.lists(st.one_of(_PIECES, st.sampled_from(["\n# Title\n", "\n## Sub\n", "\n```\ncode\n```\n",
                                                         "\nSetext\n===\n", "\n- item\n"])),
                     max_size=60).map("".join),
       size=st.integers(8, 40))
def test_property_markdown_pipeline(text, size):
    layout = build_layout(iter_markdown_blocks(text))
    chunks = run(layout, size=size, overlap=size // 4)
    check_invariants(layout, chunks, "tokens", size, size // 4)
    # every non-space character of the source survives, in order, into the layout text
    assert "".join(layout.text.split()) == "".join(text.split())


_SHORT_WORD = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cf", "Z", "Mn", "Mc", "Me")),
                      min_size=1, max_size=3).filter(lambda w: not any(ch.isspace() for ch in w))
_SHORT_TEXT = st.lists(st.tuples(_SHORT_WORD, st.sampled_from([" ", " ", "\n", "\n\n", ". "])),
                       min_size=1, max_size=60).map(lambda pairs: "".join(w + sep for w, sep in pairs))


@st.composite
def short_word_layouts(draw):
    blocks = []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            title = draw(_SHORT_WORD)
            blocks.append(Block("# " + title, None, (title,), "heading"))
        blocks.append(Block(draw(_SHORT_TEXT), None, (), "paragraph"))
    return build_layout(blocks)


@PROPS
@given(layout=short_word_layouts(), size=st.integers(12, 60))
def test_property_overlap_is_always_present_with_short_words(layout, size):
    """With words of at most 3 characters every chunk after the first of a section overlaps
    the previous one by 1..overlap characters."""
    overlap = size // 3
    chunks = run(layout, strategy="fixed", size=size, overlap=overlap)
    check_invariants(layout, chunks, "fixed", size, overlap)
    heading_starts = [s.start for s in layout.spans if s.kind == "heading"]
    for a, b in zip(chunks, chunks[1:]):
        if bisect.bisect_right(heading_starts, a.start) == bisect.bisect_right(heading_starts, b.start):
            assert 0 < a.end - b.start <= overlap
