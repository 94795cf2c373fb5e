"""Which language a text is in, and the PostgreSQL text-search configuration that matches it.

Identification is py3langid's (documents/language_id.py; 140 languages, model in the wheel):
documents are told from a sample of their text, each chunk on its own when it clearly differs
from its document (a mixed document), and questions on their own. Languages PostgreSQL has no
stemmer for (Czech, Vietnamese, Chinese, ...) and unclear texts get the `simple` configuration,
which only lower-cases; documents/search_text.py adds segmentation and stop words for them.
"""
from __future__ import annotations

from documents.language_id import identify

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
