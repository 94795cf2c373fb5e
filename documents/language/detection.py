"""Which language a text is in, and the PostgreSQL text-search configuration that matches it.

The one place ragsite tells languages: documents (indexing), questions (the full-text arm) and
the language of an answer without a model (chat.extractive, at the bottom).

Identification is py3langid's (documents/language/identification.py; 140 languages, model in the wheel):
documents are told from a sample of their text, each chunk on its own when it clearly differs
from its document (a mixed document), and questions on their own. Languages PostgreSQL has no
stemmer for (Czech, Vietnamese, Chinese, ...) and unclear texts get the `simple` configuration,
which only lower-cases; documents/language/search_text.py adds segmentation and stop words for them.
"""
from __future__ import annotations

import re

from documents.language.identification import identify

_WORD_RE = re.compile(r"\w+", re.UNICODE)

# ISO 639-1 code -> PostgreSQL text search configuration (all built into PostgreSQL 18).
TEXT_CONFIGS = {
    "en": "english", "de": "german", "es": "spanish", "fr": "french", "it": "italian",
    "pt": "portuguese", "nl": "dutch", "ru": "russian", "sv": "swedish", "da": "danish",
    "no": "norwegian", "fi": "finnish", "tr": "turkish", "hu": "hungarian", "ro": "romanian",
    "ca": "catalan", "id": "indonesian", "el": "greek", "ar": "arabic",
}
SAMPLE_CHARS = 50_000
# Probability below which a text's language is "not told". Measured on XQuAD's questions
# (bench/language_id.py): wrong answers cluster below it, right ones rarely fall there.
DOCUMENT_MIN_PROBABILITY = 0.5
QUESTION_MIN_PROBABILITY = 0.3
# A chunk takes a language other than its document's only when it is this sure and long enough.
CHUNK_MIN_PROBABILITY = 0.95
CHUNK_MIN_CHARS = 200


BLOCK_CHARS = 1_000


def detect_language(text: str) -> str:
    """ISO 639-1 code of the language most of the text is in, or "" when it cannot be told.

    The sample is identified in blocks of about a thousand characters, each voting with its
    length: identified as one piece, a mostly English text with a few Chinese paragraphs came out
    Chinese (three bytes a character, and many more distinct n-grams than repeated English).
    """
    votes: dict[str, int] = {}
    for block in _blocks(text[:SAMPLE_CHARS]):
        language, probability = identify(block)
        if language and probability >= DOCUMENT_MIN_PROBABILITY:
            votes[language] = votes.get(language, 0) + len(block)
    return max(votes, key=votes.__getitem__) if votes else ""


def _blocks(text: str) -> list[str]:
    """Paragraphs joined up to about BLOCK_CHARS each (a longer paragraph is cut)."""
    blocks, current = [], ""
    for paragraph in text.split("\n"):
        paragraph = paragraph.strip()
        while len(paragraph) > BLOCK_CHARS:
            blocks.append(paragraph[:BLOCK_CHARS])
            paragraph = paragraph[BLOCK_CHARS:]
        if current and len(current) + len(paragraph) > BLOCK_CHARS:
            blocks.append(current)
            current = ""
        current = f"{current} {paragraph}".strip()
    if current:
        blocks.append(current)
    return blocks


def detect_question_language(text: str) -> str:
    """ISO 639-1 code of a short question's language, or "" when it cannot be told.

    Accuracy and cost on XQuAD's questions: bench/language_id.py (README, Evaluation).
    """
    language, probability = identify(text.strip())
    return language if probability >= QUESTION_MIN_PROBABILITY else ""


def detect_chunk_language(text: str, *, document_language: str) -> str:
    """A chunk's language: its own when it is clearly another than its document's, else the document's."""
    if len(text) < CHUNK_MIN_CHARS:
        return document_language
    language, probability = identify(text[:SAMPLE_CHARS])
    return language if language and probability >= CHUNK_MIN_PROBABILITY else document_language


def text_config_for(language: str) -> str:
    """The PostgreSQL text search configuration for an ISO 639-1 code; `simple` when unknown."""
    return TEXT_CONFIGS.get((language or "").lower()[:2], "simple")


# --- the answer's language and the words a question matcher skips (chat.extractive) ------------
# A wider list than the stop words above: it adds pronouns, modal verbs and question words, which
# weigh little when a sentence is matched to a question. Telling a document's or question's
# language is py3langid's (above); this short list picks the language of the extractive answer's
# note among the few it is written in, and weighs words when a sentence is matched to a question.
COMMON_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "a an the is are was were be been being am of in on at to for from by with and or but not no "
        "what when where who whom whose which why how do does did done it its this that these those "
        "there here i you he she we they me my your our their his her as if than then so can could "
        "will would should shall may might must have has had about into over any all some".split()
    ),
    "de": frozenset(
        "der die das den dem des ein eine einer eines einem einen ist sind war waren wird werden wurde "
        "wurden sein und oder aber nicht kein keine was wann wo wer wie warum welche welcher welches "
        "mit von zu zum zur im in an am auf für aus bei nach über unter es ich du er sie wir ihr man "
        "sich dass als auch noch nur so kann können muss müssen hat haben gibt".split()
    ),
    "es": frozenset(
        "el la los las un una unos unas es son fue fueron era ser está están y o pero no que qué "
        "cuándo cuando dónde donde quién quien cómo como por porqué cuál cual de del al en con para "
        "se su sus lo le les mi tu yo este esta esto eso hay puede pueden muy más".split()
    ),
    "fr": frozenset(
        "le la les l un une des du de d est sont était étaient être et ou mais ne pas que qu quoi "
        "quand où qui comment pourquoi quel quelle quels quelles en dans avec pour par sur au aux "
        "ce cet cette ces il elle ils elles on je tu nous vous se sa son ses leur y a plus peut".split()
    ),
    "ru": frozenset(
        "и в во не что как когда где кто почему какой какая какие на с со по для это этот эта эти "
        "был была было были быть есть из к ко у о об от же ли или но а я ты он она мы вы они его "
        "её их то так бы за до при".split()
    ),
    "cs": frozenset(
        "a i v ve na se je jsou byl byla bylo byli být jak kdy kde kdo co proč který která které "
        "s z ze do pro o k ke to ten ta že ale nebo ne jsem jste má mají by od po při za jeho její "
        "jejich".split()
    ),
}
_ALL_COMMON_WORDS = frozenset().union(*COMMON_WORDS.values())
ANSWER_LANGUAGES = ("en", "de", "es", "fr", "ru", "cs")


def words(text: str) -> list[str]:
    """Lower-cased unicode word tokens."""
    return _WORD_RE.findall((text or "").lower())


def is_common_word(word: str) -> bool:
    """A lower-cased word of COMMON_WORDS in any language."""
    return word in _ALL_COMMON_WORDS


def answer_language(text: str, *, hint: str | None = None) -> str:
    """The language to answer a question in, among ANSWER_LANGUAGES (`hint` wins when one of them); default en."""
    if hint:
        code = hint.strip().lower().replace("_", "-").split("-")[0]
        if code in ANSWER_LANGUAGES:
            return code
    tokens = words(text)
    best, best_hits = "en", 0
    for code in ANSWER_LANGUAGES:
        hits = sum(1 for t in tokens if t in COMMON_WORDS[code])
        if hits > best_hits:
            best, best_hits = code, hits
    if best_hits == 0 and any("\u0400" <= ch <= "\u04ff" for ch in text or ""):
        return "ru"
    return best
