"""Scoring a question against its gold, summaries per language and kind, comparisons, the chart (pure)."""
from __future__ import annotations

from xml.etree import ElementTree

from evaluation import charts, metrics


def segment(text="", *, doc_id=1, name="leave.txt", page=None, chunk=None, qa=None):
    return {"source_type": "qa" if qa else "document", "text": text, "document_id": doc_id, "document_name": name,
            "document_title": "", "page_number": page, "chunk_id": chunk, "qa_id": qa, "score": 0.5}


def test_a_passage_counts_whole_cut_by_a_chunk_boundary_or_over_small_chunks_but_not_by_shared_words():
    passage = "Full-time staff have twenty five days of leave a year and part-time staff have fewer days in proportion."
    assert metrics.passage_in(passage, "Intro. " + passage.upper() + " More.")
    assert metrics.passage_in(passage, "Intro. Full-time staff have twenty five days of leave a year and part-time")
    assert metrics.passage_in(passage, "and part-time staff have fewer days in proportion. Next rule: parking.")
    assert not metrics.passage_in(passage, "Full-time staff. Leave. Days. A year.")
    assert not metrics.passage_in(passage, "Parking is free for staff with a badge; part-time staff have fewer days"
                                           " of parking than anyone else on the site near the river.")


def test_rank_recall_and_key_facts_at_the_finest_gold_level():
    gold = {"gold_documents": ["leave"], "gold_passages": ["twenty five days", "carried over"],
            "key_facts": ["25"]}
    segments = [segment("Other text", doc_id=2, name="travel.txt"), segment("You get twenty five days (25)."),
                segment("Nothing is carried over.")]
    outcome = metrics.score(gold, segments, k=10)
    assert (outcome.rank, outcome.recall, outcome.fact_coverage) == (2, 1.0, 1.0)
    assert metrics.score(gold, segments, k=2).recall == 0.5
    assert metrics.score({"gold_documents": ["leave"]}, segments, k=10).rank == 2  # by file name without extension
    assert metrics.score({"gold_pages": [{"document": "leave.txt", "page": 3}]}, [segment(page=2), segment(page=3)],
                         k=5).rank == 2
    assert metrics.score({"gold_qa_ids": [7]}, [segment(qa=7)], k=5).rank == 1
    # a passage joined with its neighbour (retrieval/search/neighbours.py) holds both chunks
    joined = {**segment(chunk=11), "joined_chunk_ids": [11, 12]}
    assert metrics.score({"gold_chunk_ids": [12]}, [segment(chunk=10), joined], k=5).rank == 2
    assert metrics.score({"gold_documents": ["leave"]}, [], k=5).rank is None


def test_summaries_per_language_and_kind_and_the_comparison_names_what_changed():
    before = [{"question_id": 1, "question": "a", "language": "cs", "kind": "x", "rank": 1, "recall": 1.0},
              {"question_id": 2, "question": "b", "language": "en", "kind": "x", "rank": 2, "recall": 1.0},
              {"question_id": 3, "question": "c", "language": "en", "kind": "y", "rank": None, "recall": 0.0}]
    after = [dict(before[0]), dict(before[1], rank=None, recall=0.0), dict(before[2], rank=1, recall=1.0)]
    summary = metrics.summarise(before)
    assert summary["overall"] == {"n": 3, "hit@1": 0.3333, "hit@5": 0.6667, "mrr": 0.5, "recall": 0.6667}
    assert summary["by_language"]["en"]["n"] == 2 and summary["by_kind"]["y"]["recall"] == 0.0
    comparison = metrics.compare(before, after, margin=0.02)
    assert [c["question"] for c in comparison["worse"]] == ["b"]
    assert [c["question"] for c in comparison["better"]] == ["c"]
    assert comparison["delta"]["recall"] == 0.0 and not comparison["recall_dropped"]
    dropped = metrics.compare(before, [dict(r, rank=None, recall=0.0) for r in before[:2]] + [before[2]])
    assert dropped["recall_dropped"] and dropped["delta_by_language"]["cs"]["recall"] == -1.0


def test_the_chart_is_valid_svg_with_a_point_per_run_and_metric():
    svg = charts.runs_svg([{"label": "#1", "overall": {"recall": 0.5, "mrr": 0.4, "hit@1": 0.3}},
                           {"label": "#2 <b>", "overall": {"recall": 0.9, "mrr": 0.8, "hit@1": 0.7}}], title="Set & co")
    root = ElementTree.fromstring(svg)
    circles = root.findall("{http://www.w3.org/2000/svg}circle")
    assert len(circles) == 6 and len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 3
