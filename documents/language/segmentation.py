"""Words of scripts written without spaces (Chinese, Japanese, Thai), for full-text search.

PostgreSQL's parser splits on spaces and punctuation, so a Chinese or Thai sentence becomes one
"word" and the full-text arm matches nothing but noise. Before indexing and before querying,
each run of such a script is cut into words by a maintained segmenter from PyPI and the words are
separated by spaces; the rest of the text is left as it is. The same function serves chunks and
questions, so both sides are cut alike. Only the search vector's input changes: a chunk's content
and offsets stay an exact slice of its document.

- Chinese: rjieba (jieba-rs; its dictionary is compiled into the wheel).
- Japanese (a run holding kana, or any run of a Japanese text): SudachiPy with sudachidict-small.
- Thai: PyThaiNLP's `newmm` with the word list shipped in its wheel. PyThaiNLP downloads corpora
  on demand and creates ~/pythainlp-data on import; `PYTHAINLP_OFFLINE` and `PYTHAINLP_READ_ONLY`
  are set before it is imported, so it can do neither (newmm needs nothing beyond the wheel).

Each segmenter is imported on first use and kept for the process (load times: bench/language_id.py).
Lao, Khmer and Burmese have no segmenter here: their runs stay whole, and the fusion rule
(retrieval/search/fusion_rule.py) does not trust the full-text arm for them.
"""
from __future__ import annotations

import os
import re
import threading
from functools import lru_cache

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_THAI = "\u0e00-\u0e7f"
_RUN_RE = re.compile(f"[{_THAI}]+|[{_HAN}{_KANA}\u30fc]+")
_KANA_RE = re.compile(f"[{_KANA}]")
SEGMENTED_LANGUAGES = ("zh", "ja", "th")
UNSEGMENTED_SCRIPTS = {"lo": "Lao", "km": "Khmer", "my": "Burmese"}

_lock = threading.Lock()


def needs_segmentation(text: str) -> bool:
    """Whether `text` holds any run of a script written without spaces that we segment."""
    return _RUN_RE.search(text) is not None


def word_spans(text: str, *, language: str = "") -> list[tuple[int, int]]:
    """(start, end) of each word inside the runs of Chinese, Japanese and Thai script in `text`.

    Offsets index `text` itself; spans are ordered and never overlap. Text outside such runs has
    no spans (PostgreSQL's parser splits it).
    """
    spans: list[tuple[int, int]] = []
    for run in _RUN_RE.finditer(text):
        chunk, base = run.group(), run.start()
        if "\u0e00" <= chunk[0] <= "\u0e7f":
            pieces = _thai_words(chunk)
        elif language == "ja" or _KANA_RE.search(chunk):
            pieces = _japanese_words(chunk)
        else:
            pieces = _chinese_words(chunk)
        spans.extend((base + start, base + end) for start, end in pieces if chunk[start:end].strip())
    return spans


def segment(text: str, *, language: str = "") -> str:
    """`text` with its Chinese, Japanese and Thai words separated by spaces; other text unchanged."""
    if not needs_segmentation(text):
        return text
    parts, last = [], 0
    for start, end in word_spans(text, language=language):
        parts.append(text[last:start])
        parts.append(" " + text[start:end] + " ")
        last = end
    parts.append(text[last:])
    return "".join(parts)


# --- the segmenters, each loaded once per process ------------------------------------------------


@lru_cache(maxsize=1)
def _jieba():
    import rjieba

    return rjieba


def _chinese_words(run: str) -> list[tuple[int, int]]:
    # rjieba's offsets count characters; search mode off (each character belongs to one word)
    return [(start, end) for _word, start, end in _jieba().tokenize(run)]


@lru_cache(maxsize=1)
def _sudachi():
    from sudachipy import Dictionary, SplitMode

    return Dictionary(dict="small").tokenizer(mode=SplitMode.C)


def _japanese_words(run: str) -> list[tuple[int, int]]:
    tokenizer = _sudachi()
    with _lock:  # a Sudachi tokenizer is not safe to share between threads
        return [(m.begin(), m.end()) for m in tokenizer.tokenize(run)]


@lru_cache(maxsize=1)
def _thai():
    os.environ.setdefault("PYTHAINLP_OFFLINE", "1")
    os.environ.setdefault("PYTHAINLP_READ_ONLY", "1")
    from pythainlp.tokenize import word_tokenize

    return word_tokenize


def _thai_words(run: str) -> list[tuple[int, int]]:
    spans, position = [], 0
    for word in _thai()(run, engine="newmm", keep_whitespace=True):
        spans.append((position, position + len(word)))
        position += len(word)
    if position != len(run):  # newmm keeps every character; never trust offsets that do not add up
        raise ValueError("Thai segmentation lost characters")
    return spans
