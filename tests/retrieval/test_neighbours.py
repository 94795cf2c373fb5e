"""Neighbour passages considered together (retrieval/search/neighbours.py): a fact a chunk boundary cuts."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat.citations import make_citation
from documents.models import Chunk, DocumentText
from retrieval.models import RetrievalSettings
from retrieval.search import neighbours, retrieve
from retrieval.search.neighbours import pair_neighbours, reorder
from tests.retrieval.test_search import indexed

# --- pairing (pure) ----------------------------------------------------------------------------


def test_a_candidate_pairs_with_its_better_ranked_neighbour_of_the_same_document():
    # (document, index): 1 -> (7, 4); 2 -> (7, 5); 3 -> (7, 3); 4 -> (8, 5) another document, same index
    positions = {1: (7, 4), 2: (7, 5), 3: (7, 3), 4: (8, 5)}
    assert pair_neighbours([1, 4, 3, 2], positions, mode="join") == {1: 3}  # 3 ranks above 2
    assert pair_neighbours([1, 2, 3, 4], positions, mode="join") == {1: 2}
    # chunk 5 of document 8 is never chunk 4 of document 7's neighbour
    assert pair_neighbours([4, 1], {4: (8, 5), 1: (7, 4)}, mode="join") == {}
    assert pair_neighbours([1, 2], positions, mode="off") == {}
    # a section boundary cuts no sentence: chunks under different headings stay apart
    assert pair_neighbours([1, 2], {1: (7, 4, ("Ladders",)), 2: (7, 5, ("Scaffolding",))}, mode="join") == {}
    assert pair_neighbours([1, 2], {1: (7, 4, ("Scaffolding",)), 2: (7, 5, ("Scaffolding",))}, mode="join") == {1: 2}


def test_a_passage_joins_one_neighbour_only_and_partners_leave_their_place():
    positions = {1: (7, 1), 2: (7, 2), 3: (7, 3), 9: (5, 1)}
    pairs = pair_neighbours([2, 9, 1, 3], positions, mode="join")
    assert pairs == {2: 1}  # no chain 1-2-3: 3's only neighbour is taken
    assert reorder([2, 9, 1, 3], {2: 0.03, 9: 0.02, 1: 0.015, 3: 0.01}, pairs, mode="join") == [2, 9, 3]
    # scored: the pair by its two parts' sum, the others keep their order
    pairs = pair_neighbours([9, 2, 1], positions, mode="join_scored")
    assert reorder([9, 2, 1], {9: 0.03, 2: 0.02, 1: 0.015}, pairs, mode="join_scored") == [2, 9]
    # shown: only two passages both within the first `shown` are joined
    assert pair_neighbours([2, 9, 1], positions, mode="join_shown", shown=2) == {}
    assert pair_neighbours([2, 1, 9], positions, mode="join_shown", shown=2) == {2: 1}


# --- retrieve() on real PostgreSQL -----------------------------------------------------------

FILLER = ("The cafeteria serves soup on weekdays. Visitors sign the book at reception. "
          "Printers are on every floor. The library lends laptops for a week. ")
# One sentence longer than a chunk (40 tokens here), so the chunker has to cut it.
FACT = ("The alarm code for the north warehouse door is 7391, and it is changed by the facility manager "
        "on the first Monday of every quarter, after the night shift has signed the handover sheet at the "
        "gate, so that every guard on the evening rota receives the new code before it applies.")


@pytest.fixture
def small_chunks():
    RetrievalSettings.objects.filter(pk=1).update(chunk_size=40, chunk_overlap=0)


def split_fact(document) -> list[Chunk]:
    """The two adjacent chunks the fact was cut between (asserting it was cut)."""
    chunks = list(Chunk.objects.filter(document=document).order_by("chunk_index"))
    start = DocumentText.objects.get(document=document).text.index(FACT)
    end = start + len(FACT)
    assert not any(c.start_offset <= start and end <= c.end_offset for c in chunks), "the fact must be cut"
    holding = [c for c in chunks if c.start_offset < end and start < c.end_offset]
    assert len(holding) == 2 and holding[1].chunk_index == holding[0].chunk_index + 1
    return holding


def test_a_fact_cut_by_a_chunk_boundary_comes_back_whole_with_both_chunk_ids(user, other_user, fake_embedder,
                                                                            small_chunks):
    assert neighbours.MODE == "join_shown"  # shipped: both halves are among the passages given
    document = indexed(user, FILLER * 2 + FACT + " " + FILLER * 2, "security.txt")
    first, second = split_fact(document)
    # The same text in another user's document and in another document of the user's own
    stranger = indexed(other_user, FILLER * 2 + FACT + " " + FILLER * 2, "security.txt")
    indexed(user, FILLER * 3, "office.txt")

    with CaptureQueriesContext(connection) as queries:
        result = retrieve(user, "alarm code north warehouse door changed facility manager first Monday quarter")
    top = result.segments[0]
    assert top["document_id"] == document.pk
    assert top["joined_chunk_ids"] == [first.pk, second.pk]
    # The pair's whole texts come with the passages' fields: one statement reads chunk text, and no
    # segment carries a whole chunk beside its excerpt.
    assert len([q for q in queries.captured_queries if "content" in q["sql"] and "documents_chunk" in q["sql"]]) == 1
    assert not [s for s in result.segments if "content" in s]
    assert top["chunk_id"] in (first.pk, second.pk)
    assert " ".join(FACT.split()) in " ".join(top["excerpt"].split())  # the model sees the whole fact
    assert (top["start_offset"], top["end_offset"]) == (first.start_offset, second.end_offset)
    assert [first.pk, second.pk] in result.trace["tiers"][0]["neighbours_joined"]
    # the partner does not also take a place of its own
    listed = [s["chunk_id"] for s in result.segments]
    assert len(set(listed)) == len(listed) and not {first.pk, second.pk} - {top["chunk_id"]} & set(listed)
    # permissions unchanged: nothing of the other user's document, a neighbour only of the same document
    stranger_chunks = set(Chunk.objects.filter(document=stranger).values_list("pk", flat=True))
    for segment in result.segments:
        ids = segment.get("joined_chunk_ids", [segment["chunk_id"]])
        assert not set(ids) & stranger_chunks
        assert set(Chunk.objects.filter(pk__in=ids).values_list("document_id", flat=True)) == {segment["document_id"]}
    # the citation records chunk ids only, both of them
    citation = make_citation("S1", top)
    assert citation["joined_chunk_ids"] == [first.pk, second.pk] and "excerpt" not in citation


def test_without_joining_the_cut_fact_comes_back_as_half(user, fake_embedder, small_chunks, monkeypatch):
    """The behaviour before (mode "off"), for contrast: the first passage holds only part of the fact."""
    monkeypatch.setattr(neighbours, "MODE", "off")
    document = indexed(user, FILLER * 2 + FACT + " " + FILLER * 2, "security.txt")
    split_fact(document)
    result = retrieve(user, "alarm code north warehouse door changed facility manager first Monday quarter")
    assert "joined_chunk_ids" not in result.segments[0]
    assert " ".join(FACT.split()) not in " ".join(result.segments[0]["excerpt"].split())
    assert "neighbours_joined" not in result.trace["tiers"][0]
