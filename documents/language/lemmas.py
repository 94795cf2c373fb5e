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

A lemma does not join words derived from one another ("skartace" and "skartační", "pojištění" and
"pojištěný"): a Czech word is therefore indexed (and asked) as its lemma *and* the lemma's stem by
Dolamic and Savoy's aggressive stemmer (documents/language/czech_stem.py), two terms when they
differ ("sokola" -> "sokol soko"). The stem alone (ANALYSIS_VERSION 4, never released) won on
bench/sets/czech_retrieval (hybrid hit@1 0.794; lemma and stem 0.786; lemma 0.778) but lost where a
question is not analysed as Czech (given to Slovak or Slovene, undecided, or an English question
naming a Czech person): its words as typed met the lemmas ("sokol", "Prochazkova") but not the stems
("soko", "prochaz"). With both terms the long-document set's hybrid document hit@5 is 0.982 again
(stem alone 0.973) and the Czech articles' full text on questions typed without diacritics 0.842
(stem alone 0.763); docs/retrieval.md, "A Czech stemmer after the lemmas". The other languages keep
their lemmas alone: the stemmer is made for Czech.

A language's dictionary is read on first use (Czech: ~0.3 s and ~50 MB per process; Polish ~5 s).
"""
from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache

from documents.language.czech_stem import czech_stem

# ISO 639-1 -> simplemma's code (Croatian, Bosnian and Serbian share one Serbo-Croatian dictionary;
# Serbian is not here: PostgreSQL has its own stemmer for it).
LEMMA_LANGUAGES = {"cs": "cs", "sk": "sk", "pl": "pl", "uk": "uk", "hr": "hbs", "bs": "hbs", "sl": "sl", "bg": "bg"}
# Typing without diacritics is a habit of the Latin-script ones; in Cyrillic "й" and "ї" are letters
# of their own, not "и" and "і" with a mark.
FOLDED_LANGUAGES = frozenset({"cs", "sk", "pl", "hr", "bs", "sl"})
# Languages whose words are also indexed as their lemma's stem, by a stemmer made for the language.
STEMMERS: dict[str, Callable[[str], str]] = {"cs": czech_stem}


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
    """The terms one word is indexed (and asked) as: its lemma and, in Czech, also the lemma's stem
    when it differs ("sokola" -> "sokol soko"), in Latin script without diacritics."""
    lemma = lemma_of(word, language)
    terms = [lemma]
    stemmer = STEMMERS.get(language)
    if stemmer is not None and (stem := stemmer(lemma)) != lemma:
        terms.append(stem)
    if language in FOLDED_LANGUAGES:
        terms = [fold(term) for term in terms]
    return " ".join(terms)


def lemmatised(language: str) -> bool:
    """Whether words of `language` are lemmatised for full text."""
    return language in LEMMA_LANGUAGES
