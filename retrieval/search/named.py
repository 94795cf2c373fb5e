"""The documents a question names: "What is 3M's capital expenditure in FY2018?" names the filing whose
title or file name is "3M_2018_10K". Passages are ranked by what they say, and a statement page rarely
repeats the company's name, so another company's page with the same words can outrank it; the
question's own words say which document it is about.

Words of the question (or two or three adjacent words run together, as in "AMERICANEXPRESS") that are
words of a candidate document's title or file name are a *name* when more of the candidate documents
carry the word in their name than merely use it in their passages: "Amazon" names the Amazon filings;
"theatre" names nothing in an encyclopedia where one article is called "National Theatre" and seven
others speak of theatres, and neither does "Securities" from a cover page's "Securities and Exchange
Commission" title when every filing speaks of securities. The documents a name points to are ranked
by all the question's words their names hold, weighed by how few candidates share them (so "FY2017"
tells the 2017 filing from the 2019 one); the best are named, unless they are more than a third of
the candidates. Stop words of the question's language never count, and each word is matched in the
passages as the full-text arm analyses it (a Czech word by its lemma).

A named document's passages count twice in the fused order (`NAMED_FACTOR`): among passages that
answer about as well, the named document's comes first, while the order within a document stays the
fusion's own. Measured in docs/retrieval.md (real documents).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import PurePath

from django.db import connection

from documents.language import text_config_for
from retrieval.search.arms import fts_query_text

WORD = re.compile(r"[^\W_]+")
GRAM = 3  # up to three adjacent words run together ("american express" → "americanexpress")
NAMED_FACTOR = 2.0  # a passage of the named document counts twice in the fused order


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


def content_words(query: str, config: str | None, language: str = "") -> list[str]:
    """The question's words in order, without its language's stop words (as the full-text arm drops them)."""
    words = words_of(query)
    if not words or not config:
        return words
    texts = [fts_query_text(w, config, language) for w in words]
    with connection.cursor() as cursor:
        cursor.execute("SELECT t.n FROM unnest(%s::text[]) WITH ORDINALITY AS t(q, n) "
                       "WHERE to_tsvector(%s::regconfig, t.q) <> ''::tsvector", [texts, config])
        kept = {row[0] for row in cursor.fetchall()}
    return [w for n, w in enumerate(words, start=1) if n in kept]


def named_documents(grams: set[str], identities: dict[int, set[str]],
                    texts: dict[int, set[str]] | None = None) -> tuple[set[int], list[str]]:
    """The documents the question names, and the words that name them; none when it names none.

    `identities`: each candidate document's title and file-name words; `texts`: the words its candidate
    passages use. A question word is a *name* when more candidate documents carry it in their name than
    merely use it in their passages ("Amazon" in the Amazon filings' names; not "theatre", which one
    article's title holds and seven other articles use). The documents named by a name are then ranked
    by every question word their names hold, weighed by how few candidates share it (a year tells the
    2017 filing from the 2019 one), and the best are named, unless they are more than a third of the
    candidates (then the naming does not narrow)."""
    total = len(identities)
    if total < 2 or not grams:
        return set(), []
    texts = texts or {}
    in_names = Counter(w for words in identities.values() for w in words & grams)
    in_texts_only = Counter(w for d, words in texts.items() for w in words & grams
                            if w not in identities.get(d, set()))
    names = {w for w, n in in_names.items() if n > in_texts_only[w]}
    share = {w: in_names[w] + in_texts_only[w] for w in in_names}
    scores = {d: sum(math.log(total / share[w]) for w in words & grams)
              for d, words in identities.items() if words & names}
    scores = {d: score for d, score in scores.items() if score > 0}
    if not scores:
        return set(), []
    best = max(scores.values())
    named = {d for d, score in scores.items() if score >= best - 1e-9}
    if len(named) * 3 > total:
        return set(), []
    return named, sorted({w for d in named for w in identities[d] & names})


def named_passages(query: str, language: str, lists: dict[str, list[int]]) -> tuple[set[int], list[str]]:
    """The candidate passages (of the arms' `lists`) of the documents the question names, and the naming
    words (for the trace). Empty when the question names no one document among the candidates."""
    order = sorted({chunk_id for ids in lists.values() for chunk_id in ids})
    if not order:
        return set(), []
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.id, c.document_id, c.text_config, d.title, d.original_filename FROM documents_chunk c "
                       "JOIN documents_document d ON d.id = c.document_id WHERE c.id = ANY(%s)", [order])
        rows = cursor.fetchall()
    document_of = {chunk_id: document_id for chunk_id, document_id, *_ in rows}
    identities = {document_id: identity_words(title, filename) for _, document_id, _, title, filename in rows}
    grams = question_grams(content_words(query, text_config_for(language) if language else None, language))
    shared = sorted({w for words in identities.values() for w in words & grams})
    if not shared:
        return set(), []
    # Which candidate documents' passages use a naming word, each word analysed as the full-text arm
    # analyses it for that passage's configuration (a Czech word by its lemma).
    configs = sorted({config for _, _, config, _, _ in rows})
    terms = [(config, w, fts_query_text(w, config, language)) for config in configs for w in shared]
    terms = [t for t in terms if t[2]]
    texts: dict[int, set[str]] = {}
    if terms:
        with connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT c.document_id, t.w FROM documents_chunk c "
                           "JOIN unnest(%s::text[], %s::text[], %s::text[]) AS t(config, w, q) ON t.config = c.text_config "
                           "WHERE c.id = ANY(%s) AND c.search_vector @@ plainto_tsquery(t.config::regconfig, t.q)",
                           [[t[0] for t in terms], [t[1] for t in terms], [t[2] for t in terms], order])
            for document_id, word in cursor.fetchall():
                texts.setdefault(document_id, set()).add(word)
    named, words = named_documents(grams, identities, texts)
    if not named:
        return set(), []
    return {c for c in order if document_of.get(c) in named}, words
