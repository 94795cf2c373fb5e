"""The text a full-text search vector is built from, for chunks and questions alike.

PostgreSQL's language configurations stem and drop their own stop words. For every other
language the configuration is `simple`, which only lower-cases: a Czech or Vietnamese question's
function words ("je", "v", "là", "của") would then match almost every passage. So for `simple`
text we drop the stop words of the text's language from the stopwords-iso collection (PyPI
`stopwordsiso`, 58 languages), and words of scripts without spaces are segmented first
(documents/language/segmentation.py). Words of the languages PostgreSQL has no stemmer for but a
lemmatiser has a dictionary for (Czech, Slovak, Polish, Ukrainian, Croatian, Slovenian, Bulgarian)
become their lemma without diacritics (documents/language/lemmas.py).
`search_input` is applied identically to a chunk (with the chunk's language) and to a question
(with the question's), so both sides keep, drop and lemmatise the same words.

`ANALYSIS_VERSION` changes whenever this analysis changes what a stored chunk's vector would be:
documents indexed under an older one are rebuilt by `manage.py rebuild_search_vectors --outdated`
(run by `make run`; documents/search_vectors.py).
"""
from __future__ import annotations

import re
from functools import lru_cache

from documents.language.lemmas import lemmatised, word_terms
from documents.language.segmentation import SEGMENTED_LANGUAGES, UNSEGMENTED_SCRIPTS, segment

# A word: letters and digits with their combining marks. Python's \w leaves out the vowel signs of
# Thai and the Indic scripts (categories Mn/Mc), which would cut "แม่น้ำ" or "हिन्दी" into pieces.
WORD_RE = re.compile("[\\w\u0300-\u036f\u0900-\u0963\u0966-\u0dff\u0e00-\u0e7f\u0e80-\u0eff"
                     "\u1000-\u109f\u1780-\u17ff\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")

# 1: segmentation and stop words; 2: lemmas for the languages of documents/language/lemmas.py;
# 3: number terms ("5,80" = "5.80", documents/language/numbers.py, added by documents/search_vectors.py);
# 4: Czech lemmas cut to their stem; 5: Czech words as their lemma and its stem (neither released: both
# lost to the lemmas alone, docs/retrieval.md); 6: the lemmas alone again, as 3 (a database analysed
# under 4 or 5 is moved back; one under 3 is rebuilt once to the same vectors).
ANALYSIS_VERSION = 6


@lru_cache(maxsize=None)
def stopwords_for(language: str) -> frozenset[str]:
    """stopwords-iso's single-word stop words of `language` (lower-case); empty when it has none."""
    import stopwordsiso

    if not language or not stopwordsiso.has_lang(language):
        return frozenset()
    # Multi-word entries ("bởi vì") can never equal one word; keep single words only.
    return frozenset(w.lower() for w in stopwordsiso.stopwords(language) if w and " " not in w.strip())


def analysis_of(language: str, config: str) -> str:
    """How the full-text arm analyses text of `language` under `config`, or "" when it cannot.

    "stemmed" (a PostgreSQL language configuration), "segmented" (Chinese, Japanese, Thai),
    "lemmatised" (`simple`, words as their lemmas, and stop words dropped: Czech, Polish, ...),
    "stop words" (`simple` with a stop-word list), "" for a language we can neither stem, segment
    nor strip of function words (e.g. Lao, Khmer, Burmese, or an unknown language).
    """
    if config != "simple":
        return "stemmed"
    if language in SEGMENTED_LANGUAGES:
        return "segmented"
    if language in UNSEGMENTED_SCRIPTS:
        return ""
    if lemmatised(language):
        return "lemmatised"
    return "stop words" if stopwords_for(language) else ""


def search_input(text: str, *, language: str, config: str) -> str:
    """The text to give `to_tsvector(config, ...)` for `text` in `language`."""
    text = segment(text, language=language)
    if config != "simple":
        return text
    stop = stopwords_for(language)
    if lemmatised(language):
        return WORD_RE.sub(lambda m: " " if m.group().lower() in stop else word_terms(m.group(), language), text)
    if not stop:
        return text
    # Separators are kept as they are (one space per dropped word keeps the text readable).
    return WORD_RE.sub(lambda m: " " if m.group().lower() in stop else m.group(), text)
