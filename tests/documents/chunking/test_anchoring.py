"""Chunking a new version anchored on the previous version's chunks (documents/chunking/anchoring.py)."""
from __future__ import annotations

import random

import pytest

from documents.chunking.anchoring import PreviousChunks, chunk_layout_anchored, unchanged_runs
from documents.chunking import TextLayout, build_layout, chunk_layout
from documents.extraction.errors import TooManyChunksError
from documents.extraction.types import Block

WORDS = ("orchard pruning ladder quince blossom harvest cider frost graft rootstock pest mulch canopy spur "
         "bud thinning yield storage crate ledger invoice rota shift safety glove boot helmet").split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."


def page(rng: random.Random, paragraphs: int = 4) -> list[str]:
    return [" ".join(sentence(rng) for _ in range(rng.randint(3, 7))) for _ in range(paragraphs)]


def pages_layout(pages: list[list[str]], *, first_number: int = 1) -> TextLayout:
    return build_layout(Block(text=p, page_number=n, heading_path=(), kind="paragraph")
                        for n, paragraphs in enumerate(pages, first_number) for p in paragraphs)


def previous_of(layout: TextLayout, **params) -> tuple[list, PreviousChunks]:
    chunks = list(chunk_layout(layout, **params))
    return chunks, PreviousChunks(text=layout.text, spans=[(c.start, c.end) for c in chunks])


def pages_of(chunk) -> set[int]:
    return set(chunk.metadata.get("pages", [chunk.page_number]))


def as_tuples(chunks) -> list[tuple]:
    return [(c.index, c.start, c.end, c.content, c.page_number, c.heading_path, c.token_count, c.metadata,
             c.embed_text) for c in chunks]


def assert_valid(layout: TextLayout, chunks, size: int = 512) -> None:
    """The chunker's contract: exact slices in order, within the limit, covering every non-blank character."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    covered = bytearray(len(layout.text))
    for previous, chunk in zip([None, *chunks], chunks):
        assert layout.text[chunk.start:chunk.end] == chunk.content and chunk.content.strip() == chunk.content
        assert chunk.token_count <= size
        if previous is not None:
            assert (previous.start, previous.end) < (chunk.start, chunk.end)
        covered[chunk.start:chunk.end] = b"\1" * (chunk.end - chunk.start)
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(layout.text))


def page_of_offset(layout: TextLayout, offset: int) -> int:
    return next(number for number, start, end in layout.pages if start <= offset < end)


def test_the_same_text_gives_exactly_the_normal_chunks():
    rng = random.Random(1)
    layout = pages_layout([page(rng) for _ in range(30)])
    chunks, previous = previous_of(layout)
    anchored, kept = chunk_layout_anchored(layout, previous)
    assert kept == len(chunks) > 10
    assert as_tuples(anchored) == as_tuples(chunks)
    # Without a previous version it is the normal chunker.
    assert as_tuples(chunk_layout_anchored(layout, None)[0]) == as_tuples(chunks)


def test_changed_pages_keep_every_chunk_that_does_not_touch_them():
    rng = random.Random(2)
    pages = [page(rng) for _ in range(40)]
    v1 = pages_layout(pages)
    old, previous = previous_of(v1)
    changed = {6, 17, 29}
    # Other, longer text on those pages: every later offset moves.
    v2 = pages_layout([page(rng, paragraphs=6) if n in changed else p for n, p in enumerate(pages, 1)])
    anchored, kept = chunk_layout_anchored(v2, previous)
    assert_valid(v2, anchored)

    untouched = [c for c in old if not pages_of(c) & changed]
    touching = [c for c in old if pages_of(c) & changed]
    by_content = {c.content: c for c in anchored}
    assert kept == len(untouched)
    for chunk in untouched:  # kept, at its place in the NEW text, on the same page
        new = by_content[chunk.content]
        assert v2.text[new.start:new.end] == chunk.content
        assert new.page_number == chunk.page_number == page_of_offset(v2, new.start)
        assert new.metadata == chunk.metadata and new.embed_text == chunk.embed_text
    assert any(by_content[c.content].start != c.start for c in untouched)  # the offsets did move

    old_texts = {c.embed_text for c in old}
    fresh = [c for c in anchored if c.embed_text not in old_texts]
    assert 0 < len(fresh) <= len(touching) + len(changed)
    near = set().union(*(pages_of(c) for c in touching))
    assert all(pages_of(c) <= near for c in fresh)  # new chunks only where old ones touched a change
    # The normal chunker shifts the boundaries after each edit: many more chunks to embed.
    plain = list(chunk_layout(v2))
    assert sum(c.embed_text not in old_texts for c in plain) > 2 * len(fresh)


def test_an_inserted_page_moves_page_numbers_and_offsets_of_kept_chunks():
    rng = random.Random(3)
    pages = [page(rng) for _ in range(20)]
    v1 = pages_layout(pages)
    old, previous = previous_of(v1)
    v2 = pages_layout([page(rng)] + pages)  # a new first page: every old page is one later
    anchored, kept = chunk_layout_anchored(v2, previous)
    assert_valid(v2, anchored)
    assert kept >= len(old) - 1  # at most the chunk that ran into the old first page's start is cut anew
    by_content = {c.content: c for c in anchored}
    for chunk in old:
        if chunk.content in by_content:
            new = by_content[chunk.content]
            assert new.page_number == chunk.page_number + 1 == page_of_offset(v2, new.start)
            if "pages" in chunk.metadata:
                assert new.metadata["pages"] == [n + 1 for n in chunk.metadata["pages"]]
            assert new.start - chunk.start == len(v2.text) - len(v1.text)


def test_kept_chunks_take_the_new_heading_path():
    def layout(title: str, body: list[str]) -> TextLayout:
        path = (title, "Pruning")
        return build_layout([Block(text=title, page_number=None, heading_path=(title,), kind="heading"),
                             Block(text="Pruning", page_number=None, heading_path=path, kind="heading")]
                            + [Block(text=p, page_number=None, heading_path=path, kind="paragraph") for p in body])

    rng = random.Random(4)
    body = page(rng, paragraphs=24)
    old, previous = previous_of(layout("Handbook", body))
    anchored, kept = chunk_layout_anchored(layout("Staff handbook", body), previous)
    assert kept == len(old) - 1 and kept > 2  # all but the renamed title's own chunk
    assert [c.content for c in anchored] == ["Staff handbook"] + [c.content for c in old[1:]]
    # The same passages in a renamed chapter: what is embedded changes with it (the cache misses, rightly).
    assert all(c.heading_path == ("Staff handbook", "Pruning") for c in anchored[1:])
    assert all(c.embed_text.startswith("Staff handbook > Pruning\n") for c in anchored[1:])


def test_fixed_strategy_and_too_many_chunks():
    rng = random.Random(5)
    pages = [page(rng) for _ in range(10)]
    old, previous = previous_of(pages_layout(pages), strategy="fixed", size=400, overlap=80)
    v2 = pages_layout(pages[:4] + [page(rng)] + pages[5:])
    anchored, kept = chunk_layout_anchored(v2, previous, strategy="fixed", size=400, overlap=80)
    assert 0 < kept < len(old)
    assert all(len(c.content) <= 400 and v2.text[c.start:c.end] == c.content for c in anchored)
    with pytest.raises(TooManyChunksError):
        chunk_layout_anchored(v2, previous, strategy="fixed", size=400, overlap=80, max_chunks=len(anchored) - 1)


def _assert_runs_keep_all_but(old: str, new: str, removed: str) -> None:
    """Every run maps identical text, and together they cover all of `old` except `removed`."""
    runs = unchanged_runs(old, new)
    assert runs is not None
    for old_start, old_end, new_start in runs:
        assert old[old_start:old_end] == new[new_start:new_start + old_end - old_start]
    assert sum(e - s for s, e, _ in runs) == len(old) - len(removed)


def test_unchanged_runs_align_repeated_units_by_position():
    old = "Intro.\nRow A.\nRow A.\nMiddle one.\nRow A.\nEnd."
    new = "Intro.\nRow A.\nRow A.\nMiddle two changed.\nRow A.\nEnd."
    _assert_runs_keep_all_but(old, new, "Middle one.\n")


def test_unchanged_runs_with_hundreds_of_identical_rows():
    rows = ["| pear | 0 |\n"] * 300
    old = "Stock list.\n" + "".join(rows) + "Counted in May.\n" + "".join(rows) + "Signed."
    new = "Stock list.\n" + "".join(rows) + "Counted in June by two people.\n" + "".join(rows) + "Signed."
    _assert_runs_keep_all_but(old, new, "Counted in May.\n")


def test_an_inserted_section_is_chunked_on_its_own():
    def layout(chapters: list[tuple[str, list[str]]]) -> TextLayout:
        blocks = []
        for title, body in chapters:
            blocks.append(Block(text=title, page_number=None, heading_path=(title,), kind="heading"))
            blocks += [Block(text=p, page_number=None, heading_path=(title,), kind="paragraph") for p in body]
        return build_layout(blocks)

    rng = random.Random(6)
    chapters = [(f"Chapter {n}", page(rng, paragraphs=8)) for n in range(1, 7)]
    old, previous = previous_of(layout(chapters))
    inserted = ("Chapter 3a", page(rng, paragraphs=8))
    v2 = layout(chapters[:3] + [inserted] + chapters[3:])
    anchored, kept = chunk_layout_anchored(v2, previous)
    assert_valid(v2, anchored)
    assert kept == len(old)  # no old chunk crossed into the new chapter
    heading_starts = [s.start for s in v2.spans if s.kind == "heading"]
    assert not any(c.start < h < c.end for c in anchored for h in heading_starts)
    fresh = [c for c in anchored if c.heading_path == ("Chapter 3a",)]
    assert len(anchored) == len(old) + len(fresh)
    # The new chapter is cut just as the normal chunker cuts it.
    assert [c.content for c in fresh] == [c.content for c in chunk_layout(v2) if c.heading_path == ("Chapter 3a",)]
