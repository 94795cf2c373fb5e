"""Neighbour passages considered together: a fact cut by a chunk boundary (issue #31).

A sentence cut between chunks N and N+1, a definition in one and its condition in the next: when
both halves are among the passages a tier gives (its first k fused candidates, before any
reranking: the pool), the better-ranked one *leads* and takes the other along. The pair is one
passage — the text from the first chunk's start to the second's end (their overlap once), both
chunk ids recorded (`joined_chunk_ids`) — shown, cited and given to the model as one source at the
leader's place. The partner leaves its own place and the next candidate moves up: a pair takes one
slot of the top k, so joining never gives a long document more slots than it had.

Only candidates the arms found are joined (the permission-filtered lists), and only chunks of the
same document and the same section (heading path): a neighbour is read by exactly the readers of the
passage it joins, and a heading starts a new chunk (documents/chunking/cutter.py), so a boundary
between sections cuts no sentence. A passage joins
at most one neighbour (no chains), so a passage is at most two chunks long.

`pair_neighbours`, `reorder` and `joined_texts` are pure (ids, positions, texts); the retriever fetches and builds.
What was measured and what lost: docs/retrieval.md "Neighbour passages".
"""
from __future__ import annotations

from typing import Iterable, Mapping

from django.db import connection

# Shipped, "join_shown": pair two adjacent passages of one document that are both among the first k
# (the pool); the freed place goes to the next candidate. Measured against it (bench/neighbours.py,
# docs/retrieval.md "Neighbour passages"): "join", any two adjacent fused candidates (as good on the
# long-document set, but 6.6 of 8 passages joined: nearly twice the text for the model); "join_scored",
# a pair ranked by its two fused scores' sum (lost 0.16 evidence hit@1: long documents' pairs
# outranked the single right passage); "off", every chunk alone (the behaviour before).
# Module-level so the bench can compare them.
MODE = "join_shown"
MODES = ("off", "join", "join_scored", "join_shown")


def pair_neighbours(order: list[int], positions: Mapping[int, tuple], *, mode: str | None = None,
                    shown: int | None = None) -> dict[int, int]:
    """{leader chunk id: partner chunk id} for candidates `order` (best first), given each one's
    (document id, chunk index[, section]).

    Walking best first, a candidate not yet taken pairs with the better-ranked of its two
    neighbours (index - 1 and + 1 in the same document, in the same section when given) that is also
    a candidate and not yet taken.
    "join_shown" pairs only within the first `shown` candidates (two passages already shown become
    one); "off" pairs nothing. `mode` defaults to MODE.
    """
    mode = MODE if mode is None else mode
    if mode == "off":
        return {}
    pool = order[:shown] if mode == "join_shown" and shown else order
    rank = {key: i for i, key in enumerate(pool)}
    at = {positions[key][:2]: key for key in pool if key in positions}
    taken: set[int] = set()
    pairs: dict[int, int] = {}
    for key in pool:
        if key in taken or key not in positions:
            continue
        document_id, index = positions[key][:2]
        near = [at[(document_id, i)] for i in (index - 1, index + 1)
                if (document_id, i) in at and at[(document_id, i)] not in taken
                and positions[at[(document_id, i)]][2:] == positions[key][2:]]
        if not near:
            continue
        partner = min(near, key=rank.__getitem__)
        pairs[key] = partner
        taken.update((key, partner))
    return pairs


def reorder(order: list[int], scores: Mapping[int, float], pairs: Mapping[int, int], *,
            mode: str | None = None) -> list[int]:
    """The candidates after joining: partners leave their own place; "join_scored" ranks a pair by the
    sum of its two fused scores (its better part plus the other's evidence), the others keep their order."""
    partners = set(pairs.values())
    kept = [key for key in order if key not in partners]
    if (MODE if mode is None else mode) != "join_scored":
        return kept
    position = {key: i for i, key in enumerate(kept)}

    def score(key: int) -> float:
        return scores[key] + (scores[pairs[key]] if key in pairs else 0.0)

    return sorted(kept, key=lambda key: (-score(key), position[key]))


def in_index_order(pair: Iterable[tuple[int, int]]) -> list[int]:
    """Chunk ids of (chunk index, chunk id) pairs, in the document's order."""
    return [key for _, key in sorted(pair)]


def joined_texts(pairs: Mapping[int, int], chunks: Mapping[int, tuple[int, int, int, str]], *,
                 limit: int) -> dict[int, str]:
    """{leader chunk id: the pair's text in the document's order, their overlap once}, at most `limit`
    characters, from `chunks` ({chunk id: (chunk index, start offset, end offset, whole text)}: the retriever
    reads them with the passages' fields, in the reader transaction — the reader role sees chunks, not the
    documents' whole text)."""
    texts = {}
    for lead, partner in pairs.items():
        if lead in chunks and partner in chunks:
            (_, _, end, first), (_, start, _, second) = sorted([chunks[lead], chunks[partner]])
            texts[lead] = (first + second[end - start:] if start <= end else f"{first}\n{second}")[:limit]
    return texts


# --- reading positions (inside the caller's reader transaction: row-level security applies) ---


def chunk_positions(chunk_ids: list[int]) -> dict[int, tuple[int, int, tuple[str, ...]]]:
    """{chunk id: (document id, chunk index, heading path)} of the candidates."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, document_id, chunk_index, heading_path FROM documents_chunk WHERE id = ANY(%s)",
                       [chunk_ids])
        return {key: (document_id, index, tuple(path or ())) for key, document_id, index, path in cursor.fetchall()}
