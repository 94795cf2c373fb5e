"""Dictionary forms of words, for the full-text arm of languages PostgreSQL has no stemmer for.

PostgreSQL ships no Czech, Slovak, Polish, Ukrainian, Croatian, Slovenian or Bulgarian stemmer, so
their text is indexed under `simple`, where "dovolená", "dovolené" and "dovolenou" are three
unrelated words. simplemma (PyPI, MIT, data for all seven in the wheel, nothing downloaded)
maps each word to its lemma, and each word is indexed (and asked) as its lemma alone, in the
Latin-script languages without diacritics: staff type "dovolene" for "dovolené", and a word the
dictionary lacks is its own lemma, so it still meets itself typed either way. On
bench/sets/czech_retrieval (bench/hybrid_arms.py; docs/retrieval.md, "Full text per language") the
full-text arm's hit@1 went from 0.531 (`simple` + stop words) to 0.650 with lemmas; adding the
word's own form beside its lemma measured lower (0.642; with the forms without diacritics too,
0.626): an exact form counted twice outweighed the question's other words.

A lemma does not join words derived from one another ("skartace" and "skartační"). A Czech stemmer
after the lemma (Dolamic and Savoy's aggressive one; ANALYSIS_VERSION 4: the stem alone, 5: lemma and
stem, neither released) was measured and lost: it won 2-4 questions of 243 on
bench/sets/czech_retrieval but lost more on the long documents (hybrid evidence hit@1 0.839 -> 0.804)
and the Czech articles, where a question not analysed as Czech (given to Slovak or Slovene, undecided,
or an English question naming a Czech person) meets a lemma with its words as typed ("sokol",
"Prochazkova") but not a stem ("soko", "prochaz"); docs/retrieval.md, "A Czech stemmer after the
lemmas".

A language's dictionary is read on first use (Czech: ~0.3 s and ~50 MB per process; Polish ~5 s).
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache

# ISO 639-1 -> simplemma's code (Croatian, Bosnian and Serbian share one Serbo-Croatian dictionary;
# Serbian is not here: PostgreSQL has its own stemmer for it).
LEMMA_LANGUAGES = {"cs": "cs", "sk": "sk", "pl": "pl", "uk": "uk", "hr": "hbs", "bs": "hbs", "sl": "sl", "bg": "bg"}
# Typing without diacritics is a habit of the Latin-script ones; in Cyrillic "й" and "ї" are letters
# of their own, not "и" and "і" with a mark.
FOLDED_LANGUAGES = frozenset({"cs", "sk", "pl", "hr", "bs", "sl"})


def fold(word: str) -> str:
    """`word` without diacritics ("dovolená" -> "dovolena"); other scripts' letters stay as they are."""
    decomposed = unicodedata.normalize("NFD", word)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", folded)


@lru_cache(maxsize=200_000)
def lemma_of(word: str, language: str) -> str:
    """The lower-case dictionary form of `word` in `language` (the word itself when unknown)."""
    import simplemma

    code = LEMMA_LANGUAGES.get(language)
    lowered = word.lower()
    if code is None:
        return lowered
    return simplemma.lemmatize(lowered, lang=code).lower()


def word_terms(word: str, language: str) -> str:
    """The term one word is indexed (and asked) as: its lemma, in the Latin-script languages without diacritics."""
    lemma = lemma_of(word, language)
    return fold(lemma) if language in FOLDED_LANGUAGES else lemma


def lemmatised(language: str) -> bool:
    """Whether words of `language` are lemmatised for full text."""
    return language in LEMMA_LANGUAGES
