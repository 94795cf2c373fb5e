"""Whether a question is the same question as an approved pair's, beyond embedding closeness (no Django).

Embedding closeness cannot tell "stravné nad 18 hodin" from "stravné pod 5 hodin". Before a pair
is the answer itself (`qa_direct`), the question and the pair's question must agree on what makes
questions differ:

- **numbers and dates**, normalised ("5,80" = "5.80", "10 000" = "10,000" = "10.000", "18 h" and
  "18 hodin" both carry 18; "24. 11. 2026" = "2026-11-24"), compared as sets;
- **negation**: whether each is negated ("ne-" verbs and adjectives, "bez", "žádný" in Czech;
  nicht, kein…, ohne; не, нет, без; not, no, without, n't);
- **rare content words**: a content word of the question (lower-cased, accent-folded, compared by
  its first five letters so that inflected forms match) missing from the pair's question is a
  disagreement when it is rare among all approved questions: in fewer than √N of the N questions
  (scale-free: with one pair every word unknown to it is rare; with hundreds, words like "kolik",
  "how" are common). Unknown words count as rare: a word no approved question uses is the surest
  sign of another question.

Across languages no direct answer is given (reason `cross_language`): the pair's answer is in
another language than the question, and content words cannot be compared; the pair still reaches
the user as a tier-1 source the model answers from in the user's language.

`direct_decision()` returns the verdict and its reason (`qa_direct_reason` in the retrieval trace
and the message metadata): agreed, too_far, cross_language, number_mismatch, negation_mismatch,
content_word_mismatch.

The same evidence, weaker, decides whether a pair within tier 1's bound belongs in a question's
context at all (`admission()`). Embedding closeness alone admitted pairs whose questions merely share
phrasing ("How many … do I get in …?") with a question on another subject, so each kind of evidence is
weighed against how close two *unrelated* questions come in the model's space (the calibration's
1st percentiles, `AdmissionBounds`):

- a pair in the **question's language** is admitted within the direct-answer distance; farther, when
  it shares a number with the question, or two content words (not function words), or one content
  word while closer than 99 % of unrelated questions of one language are;
- a pair in **another language** shares no words with the question, so distance decides alone: it
  is admitted when closer than 99 % of unrelated questions of two languages are.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

STEM_LENGTH = 5
MIN_WORD_LENGTH = 3

AGREED = "agreed"
TOO_FAR = "too_far"
CROSS_LANGUAGE = "cross_language"
NUMBER_MISMATCH = "number_mismatch"
NEGATION_MISMATCH = "negation_mismatch"
CONTENT_WORD_MISMATCH = "content_word_mismatch"
NO_BOUND = "no_bound"  # no direct-answer distance for the embedding model (calibration pending, or 0)

ADMITTED_CLOSE = "close"  # a pair within the direct-answer distance
ADMITTED_SHARED = "shared_words"  # a pair sharing a number, two content words, or one and close
ADMITTED_CROSS_LANGUAGE = "cross_language_close"  # a pair in another language, closer than unrelated ones come
REFUSED_NO_SHARED = "no_shared_word"  # within the bound by embedding closeness alone
REFUSED_ONE_WORD = "one_shared_word_far"  # one content word in common, as far as unrelated questions come
REFUSED_CROSS_LANGUAGE = "cross_language_far"  # another language, as far as unrelated questions come

_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DOTTED_DATE = re.compile(r"\b(\d{1,2})\.\s?(\d{1,2})\.(?:\s?(\d{4}))?(?!\d)")
# A number: digits in groups of three after a space, a dot or a comma (thousands), or with a decimal part.
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:[ \u00a0\u202f.,]\d{3})+(?![\d])(?:[.,]\d+)?|\d+(?:[.,]\d+)?")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")

_NEGATION_WORDS = {
    "cs": {"bez", "zadny", "zadna", "zadne", "zadneho", "zadnou", "nikdy", "nic", "nikdo"},
    "de": {"nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "ohne", "nie", "niemals", "nichts"},
    "ru": {"не", "нет", "без", "ни", "никогда", "ничего", "никакой", "никакие", "никаких"},
    "en": {"not", "no", "without", "never", "none", "nothing", "cannot"},
}
# Czech words starting with "ne" that are not negations (accent-folded, as prefixes): "nebo", "než",
# the superlative "nej-", "někdo"/"několik"/"něco" typed without diacritics, illness, Sunday, accident.
_CS_NOT_NEGATED = ("nebo", "nez", "nej", "nekd", "nekol", "neco", "nemoc", "nedel", "nehod", "netto", "neust")


def fold(text: str) -> str:
    """Lower-cased, without accents (Cyrillic й/ё fold to и/е, which is what people type anyway)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _canonical(number: str) -> str:
    digits = number.replace("\u00a0", " ").replace("\u202f", " ")
    grouped = re.fullmatch(r"\d{1,3}(?:([ .,])\d{3})+(?:([.,])(\d+))?", digits)
    if grouped and (grouped.group(2) is None or grouped.group(2) != grouped.group(1)):
        whole = re.sub(r"[ .,]", "", digits[:grouped.start(2)] if grouped.group(2) else digits)
        fraction = grouped.group(3) or ""
    else:
        whole, _, fraction = digits.replace(",", ".").partition(".")
    fraction = fraction.rstrip("0")
    whole = whole.lstrip("0") or "0"
    return f"{whole}.{fraction}" if fraction else whole


def numbers_in(text: str) -> set[str]:
    """The numbers and dates of `text`, normalised: {"5.8", "10000", "date:2026-11-24", "date:11-24"}."""
    found: set[str] = set()

    def date(match: re.Match, year: str | None, month: str, day: str) -> str:
        found.add(f"date:{int(year):04d}-{int(month):02d}-{int(day):02d}" if year else f"date:{int(month):02d}-{int(day):02d}")
        return " "

    text = _ISO_DATE.sub(lambda m: date(m, m.group(1), m.group(2), m.group(3)), text)
    text = _DOTTED_DATE.sub(lambda m: date(m, m.group(3), m.group(2), m.group(1))
                            if 1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(1)) <= 31 else m.group(0), text)
    found.update(_canonical(m.group(0)) for m in _NUMBER.finditer(text))
    return found


def words(text: str) -> list[str]:
    """The words of `text`, lower-cased, accents kept (negation needs "ně" apart from "ne")."""
    return [w.lower() for w in _WORD.findall(text)]


def is_negated(text: str, language: str) -> bool:
    """Whether `text` carries a negation in `language` (any of the four when the language is unknown)."""
    languages = [language] if language in _NEGATION_WORDS else list(_NEGATION_WORDS)
    for word in words(text):
        folded = fold(word)
        for lang in languages:
            if folded in _NEGATION_WORDS[lang] or word in _NEGATION_WORDS[lang]:
                return True
            if lang == "en" and word.endswith("n't"):
                return True
            # Czech negates verbs and adjectives with "ne-": není, nemám, neproplacené (not "ně-": někdo).
            if (lang == "cs" and word.startswith("ne") and len(folded) >= 4
                    and not folded.startswith(_CS_NOT_NEGATED)):
                return True
    return False


def stems(text: str) -> set[str]:
    """The content words of `text` by their first STEM_LENGTH letters (folded; short words left out)."""
    return {fold(w)[:STEM_LENGTH] for w in words(text) if len(fold(w)) >= MIN_WORD_LENGTH}


@dataclass(frozen=True)
class Vocabulary:
    """How many approved questions use each stem: the rarity of a word among them."""

    questions: int
    frequency: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, questions: Iterable[str]) -> "Vocabulary":
        counts: Counter = Counter()
        n = 0
        for question in questions:
            n += 1
            counts.update(stems(question))
        return cls(n, counts)

    def is_rare(self, stem: str) -> bool:
        """Used by fewer than √N of the N approved questions (every unknown word is rare)."""
        return self.frequency.get(stem, 0) < max(1.0, math.sqrt(self.questions))

    def idf(self, stem: str) -> float:
        return math.log((self.questions + 1) / (self.frequency.get(stem, 0) + 1)) + 1.0


@dataclass(frozen=True)
class Decision:
    """Whether the pair is the answer itself, and why (`reason`); `detail` says what differed."""

    direct: bool
    reason: str
    detail: dict = field(default_factory=dict)


def direct_decision(*, question: str, pair_question: str, distance: float, bound: float | None,
                    question_language: str, pair_language: str, vocabulary: Vocabulary) -> Decision:
    """Whether an approved pair at cosine `distance` may answer `question` directly (see the module)."""
    if not bound or bound <= 0:
        return Decision(False, NO_BOUND)
    if distance > bound:
        return Decision(False, TOO_FAR, {"distance": round(distance, 6), "bound": round(bound, 6)})
    if question_language and pair_language and question_language != pair_language:
        return Decision(False, CROSS_LANGUAGE, {"question_language": question_language, "pair_language": pair_language})
    asked, approved = numbers_in(question), numbers_in(pair_question)
    if asked != approved:
        return Decision(False, NUMBER_MISMATCH, {"question": sorted(asked), "pair": sorted(approved)})
    language = question_language or pair_language
    if is_negated(question, language) != is_negated(pair_question, language):
        return Decision(False, NEGATION_MISMATCH, {"question_negated": is_negated(question, language)})
    missing = sorted(s for s in stems(question) - stems(pair_question) if vocabulary.is_rare(s))
    if missing:
        return Decision(False, CONTENT_WORD_MISMATCH, {"words": missing})
    return Decision(True, AGREED)


def function_stems(function_words: Iterable[str]) -> frozenset[str]:
    """Function words as the stems `stems()` makes, to leave out of the shared words."""
    return frozenset(fold(w)[:STEM_LENGTH] for w in function_words if len(fold(w)) >= MIN_WORD_LENGTH)


@dataclass(frozen=True)
class AdmissionBounds:
    """The distances `admission()` weighs evidence against (cosine distances of one embedding model).

    `direct`: the direct-answer distance. `one_word`: the 1st percentile of distances between unrelated
    questions of one language; `cross_language`: of two languages (None until calibrated: one shared
    word then suffices, and a pair in another language needs the direct-answer distance)."""

    direct: float | None
    one_word: float | None = None
    cross_language: float | None = None


def admission(*, question: str, pair_text: str, distance: float, same_language: bool, bounds: AdmissionBounds,
              function_words: frozenset[str]) -> Decision:
    """Whether an approved pair already within tier 1's bound belongs in the context of `question` (see the
    module): `pair_text` is the pair's question and answer, `distance` the pair's cosine distance,
    `same_language` whether the two questions are in one language (or either's is unknown), `function_words`
    the stems never counted as shared."""
    if not same_language:
        limit = bounds.cross_language or bounds.direct
        far: dict = {"distance": round(distance, 6), "bound": limit}
        if limit and distance <= limit:
            return Decision(True, ADMITTED_CROSS_LANGUAGE, far)
        return Decision(False, REFUSED_CROSS_LANGUAGE, far)
    if bounds.direct and distance <= bounds.direct:
        return Decision(True, ADMITTED_CLOSE)
    shared = sorted((stems(question) & stems(pair_text)) - function_words)
    numbers = sorted(numbers_in(question) & numbers_in(pair_text))
    detail = {"words": shared, "numbers": numbers}
    if numbers or len(shared) >= 2 or (shared and (bounds.one_word is None or distance <= bounds.one_word)):
        return Decision(True, ADMITTED_SHARED, detail)
    return Decision(False, REFUSED_ONE_WORD if shared else REFUSED_NO_SHARED, detail)
