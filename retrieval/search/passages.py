"""A document tier's passages: the chunk rows of its fused candidates, adjacent passages joined into one
(retrieval/search/neighbours.py holds the pure rules; this module fetches and builds), and the segments.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, cast

from django.db import connection

from documents.models import Collection
from retrieval.contracts import RetrievalTrace, Segment
from retrieval.search import neighbours

EXCERPT_CHARS = 2000


@dataclass
class Passages:
    """The candidates kept after neighbour joining, their rows, the pairs joined and the pairs' joined texts."""

    fused: list
    rows: dict[int, dict]
    pairs: dict[int, int] = field(default_factory=dict)  # {leader chunk id: partner chunk id}
    texts: dict[int, str] = field(default_factory=dict)  # {leader chunk id: the two passages' joined text}


def chunk_rows(chunk_ids: list[int], *, distance_with: tuple[int, str] | None = None,
               whole: Iterable[int] = ()) -> dict[int, dict]:
    """The passages' fields, by chunk id; with `distance_with` (model id, query vector literal) also each
    one's cosine distance under that model ("distance", None without a vector of it); the chunks in `whole`
    also with their whole text ("content": neighbour joining needs more than the excerpt)."""
    if not chunk_ids:
        return {}
    distance, params = "NULL::float8", []
    if distance_with is not None:
        distance = ("(SELECT e.embedding <=> %s::vector FROM retrieval_chunkembedding e "
                    "WHERE e.chunk_id = c.id AND e.model_id = %s)")
        params = [distance_with[1], int(distance_with[0])]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT c.id, c.document_id, d.original_filename, d.title, c.chunk_index, c.page_number, c.heading_path,
                   c.start_offset, c.end_offset, left(c.content, %s), {distance}, d.collection_id, d.version,
                   c.metadata->>'page_label', CASE WHEN c.id = ANY(%s) THEN c.content END
            FROM documents_chunk c JOIN documents_document d ON d.id = c.document_id
            WHERE c.id = ANY(%s)
            """,
            [EXCERPT_CHARS, *params, list(whole), chunk_ids],
        )
        return {
            r[0]: {"document_id": r[1], "document_name": r[2], "document_title": r[3], "chunk_index": r[4],
                   "page_number": r[5], "heading_path": list(r[6] or []), "start_offset": r[7], "end_offset": r[8],
                   "excerpt": r[9], "distance": None if r[10] is None else float(r[10]), "collection_id": r[11],
                   "document_version": r[12], "page_label": r[13] or None, **({"content": r[14]} if r[14] is not None else {})}
            for r in cursor.fetchall()
        }


def passages_read(fused: list, *, pool: int, distances: dict[int, float], distance_with: tuple[int, str] | None,
                  trace: RetrievalTrace, tier: int) -> Passages:
    """The candidates paired with their neighbours and cut to `pool`, their rows (the pairs' whole texts
    with them: no statement of their own) and the pairs' joined texts; fills `distances` from the rows.
    Call inside the reader transaction."""
    fused, pairs = _pair_neighbours(fused, pool, trace, tier)
    rows = chunk_rows([f.key for f in fused] + list(pairs.values()), distance_with=distance_with,
                      whole={*pairs, *pairs.values()})
    whole: dict[int, tuple[int, int, int, str]] = {}
    for key, row in rows.items():
        distance = row.pop("distance")
        if distance is not None:
            distances.setdefault(key, distance)
        if "content" in row:
            whole[key] = (row["chunk_index"], row["start_offset"], row["end_offset"], row.pop("content"))
    t0 = time.perf_counter()
    texts = neighbours.joined_texts(_same_document(pairs, rows), whole, limit=2 * EXCERPT_CHARS)
    if pairs:  # the pairing's time (neighbours_t<tier>) and the joined texts' read, together
        timing = f"neighbours_t{tier}"
        trace["timings_ms"][timing] = round(trace["timings_ms"].get(timing, 0.0)
                                            + (time.perf_counter() - t0) * 1000, 2)
    return Passages(fused, rows, pairs, texts)


def document_segments(passages: Passages, distances: dict[int, float], tier: int) -> list[Segment]:
    """The tier's segments in fused order, joined passages extended over their partners."""
    segments: list[Segment] = []
    for f in passages.fused:
        passage = passages.rows.get(f.key)
        if passage is None:
            continue
        vector_rank = next((r for n, r in f.ranks.items() if n.startswith("vector")), None)
        segments.append(cast(Segment, {  # the passage's fields come from chunk_rows' SQL
            "source_type": "document", "qa_id": None, "chunk_id": f.key, **passage,
            "score": round(f.score, 6), "distance": round(distances[f.key], 6) if f.key in distances else None,
            "vector_rank": vector_rank, "fts_rank": f.ranks.get("fts"), "tier": tier,
        }))
    return segments


def _pair_neighbours(fused: list, pool: int, trace: RetrievalTrace, tier: int) -> tuple[list, dict[int, int]]:
    """The fused candidates after neighbour joining (retrieval/search/neighbours.py), cut to `pool`, and
    {leader chunk id: partner chunk id} of the pairs among them. Call inside the reader transaction."""
    if neighbours.MODE == "off" or len(fused) < 2:
        return fused[:pool], {}
    t0 = time.perf_counter()
    order = [f.key for f in fused]
    # "join_shown" pairs only within the pool: the positions of the candidates below it are never looked at.
    looked_at = order[:pool] if neighbours.MODE == "join_shown" else order
    pairs = neighbours.pair_neighbours(order, neighbours.chunk_positions(looked_at), shown=pool)
    by_key = {f.key: f for f in fused}
    kept = [by_key[key] for key in neighbours.reorder(order, {f.key: f.score for f in fused}, pairs)][:pool]
    trace["timings_ms"][f"neighbours_t{tier}"] = round((time.perf_counter() - t0) * 1000, 2)
    return kept, {f.key: pairs[f.key] for f in kept if f.key in pairs}


def _same_document(pairs: dict[int, int], rows: dict[int, dict]) -> dict[int, int]:
    """The pairs whose two passages were read and belong to one document."""
    return {lead: partner for lead, partner in pairs.items() if lead in rows and partner in rows
            and rows[lead]["document_id"] == rows[partner]["document_id"]}


def join_neighbours(segments: list[Segment], passages: Passages) -> list[list[int]]:
    """Each leader's segment extended over its partner (offsets, pages, excerpt, both ids); the pairs joined."""
    pairs, rows, texts = passages.pairs, passages.rows, passages.texts
    scores = {f.key: f.score for f in passages.fused}
    joined = []
    for segment in segments:
        lead = segment["chunk_id"]
        if lead not in pairs or lead not in texts:
            continue
        partner = rows[pairs[lead]]
        ids = neighbours.in_index_order([(rows[lead]["chunk_index"], lead), (partner["chunk_index"], pairs[lead])])
        segment["joined_chunk_ids"] = ids
        segment["start_offset"] = min(segment["start_offset"], partner["start_offset"])
        segment["end_offset"] = max(segment["end_offset"], partner["end_offset"])
        segment["excerpt"] = texts[lead]
        if neighbours.MODE == "join_scored":
            segment["score"] = round(scores[lead] + scores.get(pairs[lead], 0.0), 6)
        joined.append(ids)
    return joined


def name_collections(segments: list[Segment]) -> None:
    """Add `collection` (the knowledge base's name, None for the user's own documents) for the chat's
    source labels ("from the knowledge base <name>"); read outside the reader role, one query."""
    ids = {s["collection_id"] for s in segments if s.get("collection_id")}
    names = dict(Collection.objects.filter(pk__in=ids).values_list("pk", "name")) if ids else {}
    for segment in segments:
        segment["collection"] = names.get(segment.get("collection_id"))
