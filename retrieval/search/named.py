"""The documents a question names: "What is 3M's capital expenditure in FY2018?" names the filing whose
title or file name is "3M_2018_10K". Passages are ranked by what they say, and a statement page rarely
repeats the company's name, so another company's page with the same words can outrank it; the
question's own words say which document it is about.

A document is named when words of the question (or two or three adjacent words run together, as in
"AMERICANEXPRESS") are words of its title or file name and, weighed by how few of the candidate
documents share them, it is named more than any other. A candidate document shares a word when its
title or file name holds it or its candidate passages use it: "Securities and Exchange Commission" on
a cover page names nothing when every filing's passages speak of securities, while "Amazon" names the
filings whose passages alone say it. Stop words of the question's language never name anything; a
word every candidate document carries ("10K" in every file name) weighs nothing.
The named documents' passages then form one more list for the fusion, in the order the arms gave
them, so a passage of the named document climbs over another document's, while the order within a
document stays the arms' own. No document named (or more than a third of the candidates): no list.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import PurePath

from django.db import connection

from retrieval.search.fusion import rrf

WORD = re.compile(r"[^\W_]+")
GRAM = 3  # up to three adjacent words run together ("american express" → "americanexpress")


YEAR = re.compile(r"(?<!\d)\d{4}(?!\d)")


def words_of(text: str) -> list[str]:
    """The words of a text, in order, casefolded; a year written inside a word ("FY2017", "2023Q2") also
    stands as a word of its own."""
    words = []
    for word in WORD.findall(text.casefold()):
        words.append(word)
        if not word.isdigit():
            words.extend(YEAR.findall(word))
    return words


def identity_words(title: str, filename: str) -> set[str]:
    """The words that name a document: its title's and its file name's (without the extension)."""
    stem = PurePath(filename or "").stem
    return {w for w in words_of(f"{title or ''} {stem}") if len(w) > 1}


def question_grams(words: list[str]) -> set[str]:
    """Each word, and runs of two or three adjacent words written together."""
    grams = set(words)
    for n in range(2, GRAM + 1):
        grams.update("".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return grams


def content_words(query: str, config: str | None) -> list[str]:
    """The question's words in order, without its language's stop words (PostgreSQL's own list)."""
    words = words_of(query)
    if not words or not config or config == "simple":
        return words
    with connection.cursor() as cursor:
        cursor.execute("SELECT w FROM unnest(%s::text[]) WITH ORDINALITY AS t(w, n) "
                       "WHERE to_tsvector(%s::regconfig, w) <> ''::tsvector ORDER BY n", [words, config])
        kept = {row[0] for row in cursor.fetchall()}
    return [w for w in words if w in kept]


def named_documents(grams: set[str], identities: dict[int, set[str]],
                    texts: dict[int, set[str]] | None = None) -> tuple[set[int], list[str]]:
    """The documents the question names most (by the rarity of the shared words among the candidates:
    `identities`, their title and file-name words; `texts`, their candidate passages' words), and the
    words that named them; none when nothing is shared or the naming does not narrow."""
    total = len(identities)
    if total < 2 or not grams:
        return set(), []
    texts = texts or {}
    share = Counter(word for document_id, words in identities.items() for word in words & grams
                    | (texts.get(document_id, set()) & grams))
    scores: dict[int, float] = {}
    for document_id, own in identities.items():
        score = sum(math.log(total / share[w]) for w in own & grams)
        if score > 0:
            scores[document_id] = score
    if not scores:
        return set(), []
    best = max(scores.values())
    named = {d for d, s in scores.items() if s >= best - 1e-9}
    if len(named) * 3 > total:
        return set(), []
    return named, sorted({w for d in named for w in identities[d] & grams if share[w] < total})


def named_list(query: str, config: str | None, lists: dict[str, list[int]]) -> tuple[list[int], list[str]]:
    """The candidate passages of the documents the question names, in the arms' fused order; and the
    naming words (for the trace). Empty when the question names no one document among the candidates."""
    order = [f.key for f in rrf(lists)]
    if not order:
        return [], []
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.id, c.document_id, d.title, d.original_filename FROM documents_chunk c "
                       "JOIN documents_document d ON d.id = c.document_id WHERE c.id = ANY(%s)", [order])
        rows = cursor.fetchall()
    document_of = {chunk_id: document_id for chunk_id, document_id, _, _ in rows}
    identities = {document_id: identity_words(title, filename) for _, document_id, title, filename in rows}
    grams = question_grams(content_words(query, config))
    shared = sorted({w for words in identities.values() for w in words & grams})
    if not shared:
        return [], []
    texts: dict[int, set[str]] = {}
    with connection.cursor() as cursor:  # which candidate documents' passages use a naming word
        cursor.execute("SELECT DISTINCT c.document_id, w FROM documents_chunk c, unnest(%s::text[]) AS w "
                       "WHERE c.id = ANY(%s) AND c.search_vector @@ plainto_tsquery(c.text_config::regconfig, w)",
                       [shared, order])
        for document_id, word in cursor.fetchall():
            texts.setdefault(document_id, set()).add(word)
    named, words = named_documents(grams, identities, texts)
    if not named:
        return [], []
    return [c for c in order if document_of.get(c) in named], words
