"""Which language a text is in, and its words for full-text search (segmentation, stop words).

No Django, no `core`, no models (.importlinter's forbidden contract); mypy checks the folder whole.
"""
from documents.language.detection import (
    answer_language,
    detect_chunk_language,
    detect_language,
    detect_question_language,
    is_common_word,
    text_config_for,
    words,
)
from documents.language.numbers import number_terms, with_number_terms
from documents.language.search_text import WORD_RE, analysis_of, search_input

__all__ = [
    "WORD_RE", "analysis_of", "answer_language", "detect_chunk_language", "detect_language",
    "detect_question_language", "is_common_word", "number_terms", "search_input", "text_config_for",
    "with_number_terms", "words",
]
