"""Dolamic and Savoy's Czech stemmers, for the words a lemma does not join with its derivations.

A lemmatiser joins the forms of one word ("cesty", "cestou" -> "cesta") but not words derived from
one another: "cestovní" and "cesta", "ubytování" and "ubytovat" stay different lemmas. The stemmers
of L. Dolamic and J. Savoy, "Indexing and stemming approaches for the Czech language", Information
Processing & Management 45(6), 2009, remove case endings and possessive suffixes (`light`) and, in
the `aggressive` one, also comparative, diminutive, augmentative and derivational suffixes, undoing
the palatalisation a suffix caused ("-ce" -> "-k", "-ště" -> "-sk"). This is the published
algorithm written anew as suffix tables (the authors' reference code is Java, BSD licence); the
suffix lists and minimum word lengths are theirs, unchanged.

A rule is (longer than, suffixes, cut, palatalise): a word longer than the first number that ends
with one of the suffixes loses `cut` characters, and then, when `palatalise` is set, its ending is
de-palatalised (`_palatalise`, which always drops one more character). In each step the first rule
that matches applies, and only one.
"""
from __future__ import annotations

from functools import lru_cache

Rule = tuple[int, tuple[str, ...], int, bool]

_CASE: tuple[Rule, ...] = (
    (7, ("atech",), 5, False),
    (6, ("ětem",), 3, True),
    (6, ("atům",), 4, False),
    (5, ("ech", "ich", "ích", "ého", "ěmi", "emi", "ému", "ete", "eti", "iho", "ího", "ími", "imu"), 2, True),
    (5, ("ách", "ata", "aty", "ých", "ama", "ami", "ové", "ovi", "ými"), 3, False),
    (4, ("em",), 1, True),
    (4, ("es", "ém", "ím"), 2, True),
    (4, ("ům", "at", "ám", "os", "us", "ým", "mi", "ou"), 2, False),
    (3, ("e", "i", "í", "ě"), 0, True),
    (3, ("u", "y", "ů", "a", "o", "á", "é", "ý"), 1, False),
)
_POSSESSIVE: tuple[Rule, ...] = (
    (5, ("ov", "ův"), 2, False),
    (5, ("in",), 1, True),
)
_COMPARATIVE: tuple[Rule, ...] = (
    (5, ("ejš", "ějš"), 2, True),
)
_DIMINUTIVE: tuple[Rule, ...] = (
    (7, ("oušek",), 5, False),
    (6, ("eček", "éček", "iček", "íček", "enek", "ének", "inek", "ínek"), 3, True),
    (6, ("áček", "aček", "oček", "uček", "anek", "onek", "unek", "ánek"), 4, False),
    (5, ("ečk", "éčk", "ičk", "íčk", "enk", "énk", "ink", "ínk"), 3, True),
    (5, ("áčk", "ačk", "očk", "učk", "ank", "onk", "unk", "átk", "ánk", "ušk"), 3, False),
    (4, ("ek", "ék", "ík", "ik"), 1, True),
    (4, ("ák", "ak", "ok", "uk"), 1, False),
    (3, ("k",), 1, False),
)
_AUGMENTATIVE: tuple[Rule, ...] = (
    (6, ("ajzn",), 4, False),
    (5, ("izn", "isk"), 2, True),
    (4, ("ák",), 2, False),
)
_DERIVATIONAL: tuple[Rule, ...] = (
    (8, ("obinec",), 6, False),
    (7, ("ionář",), 4, True),
    (7, ("ovisk", "ovstv", "ovišt", "ovník"), 5, False),
    (6, ("ásek", "loun", "nost", "teln", "ovec", "ovík", "ovtv", "ovin", "štin"), 4, False),
    (6, ("enic", "inec", "itel"), 3, True),
    (5, ("árn",), 3, False),
    (5, ("ěnk", "ián", "ist", "isk", "išt", "itb", "írn"), 2, True),
    (5, ("och", "ost", "ovn", "oun", "out", "ouš", "ušk", "kyn", "čan", "kář", "néř", "ník", "ctv", "stv"), 3, False),
    (4, ("áč", "ač", "án", "an", "ář", "as"), 2, False),
    (4, ("ec", "en", "ěn", "éř", "íř", "ic", "in", "ín", "it", "iv"), 1, True),
    (4, ("ob", "ot", "ov", "oň", "ul", "yn", "čk", "čn", "dl", "nk", "tv", "tk", "vk"), 2, False),
    (3, ("c", "č", "k", "l", "n", "t"), 1, False),
)
LIGHT_STEPS = (_CASE, _POSSESSIVE)
AGGRESSIVE_STEPS = (_CASE, _POSSESSIVE, _COMPARATIVE, _DIMINUTIVE, _AUGMENTATIVE, _DERIVATIONAL)

# A palatalised ending and what it was before the suffix softened it (the longer endings first).
_SOFTENED = (("čtě", "ck"), ("čti", "ck"), ("čtí", "ck"), ("ště", "sk"), ("šti", "sk"), ("ští", "sk"),
             ("ci", "k"), ("ce", "k"), ("či", "k"), ("če", "k"), ("zi", "h"), ("ze", "h"), ("ži", "h"), ("že", "h"))


def _palatalise(word: str) -> str:
    """`word` with a softened ending restored ("vědci" -> "vědk"), else without its last character."""
    for ending, hard in _SOFTENED:
        if word.endswith(ending):
            return word[:-len(ending)] + hard
    return word[:-1]


def _apply(word: str, rules: tuple[Rule, ...]) -> str:
    for longer_than, suffixes, cut, palatalise in rules:
        if len(word) > longer_than and word.endswith(suffixes):
            word = word[:len(word) - cut] if cut else word
            return _palatalise(word) if palatalise else word
    return word


@lru_cache(maxsize=200_000)
def czech_stem(word: str, *, aggressive: bool = True) -> str:
    """The stem of a lower-case Czech word (with its diacritics); other words come back as they are."""
    if not word.isalpha():
        return word
    for rules in AGGRESSIVE_STEPS if aggressive else LIGHT_STEPS:
        word = _apply(word, rules)
    return word
