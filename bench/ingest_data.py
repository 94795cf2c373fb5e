"""The ingest benchmarks' input: XQuAD articles as text, and generated PDFs of English prose.

Shared by `bench/ingest.py` (the ``xquad`` and ``pdf`` data sets) and `bench/ingest_versions.py`
(the versions of one generated PDF), so neither imports the other.
"""
from __future__ import annotations

import json
import random
import re
import textwrap
import time
import unicodedata
from pathlib import Path

from bench.common import XQUAD_EN

PDF_SEED = 20240601


def xquad_articles(path: Path = XQUAD_EN) -> list[tuple[str, str]]:
    """(title, text) per article: its paragraphs' contexts joined by blank lines."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return [(a["title"], "\n\n".join(p["context"].strip() for p in a["paragraphs"])) for a in data]


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_PUNCTUATION = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"',
                              "\u201d": '"', "\u2026": "...", "\u2032": "'", "\u2033": '"', "\u2212": "-"})


def _latin1(text: str) -> str:
    """What the generated PDF's WinAnsi Helvetica can show: typographic punctuation made plain,
    accents kept where Latin-1 has them, other letters reduced to their base letter."""
    text = text.translate(_PUNCTUATION)
    out = []
    for ch in text:
        try:
            ch.encode("latin-1")
            out.append(ch)
        except UnicodeEncodeError:
            base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
            out.append(base if base and base.isascii() else "?")
    return "".join(out)


def prose_sentences(path: Path = XQUAD_EN) -> list[str]:
    """English sentences for the generated PDF: XQuAD's, or a fixed synthetic set without it."""
    if path.exists():
        sentences = []
        for _title, text in xquad_articles(path):
            for paragraph in text.split("\n\n"):
                sentences.extend(s.strip() for s in _SENTENCE_SPLIT.split(paragraph) if len(s.split()) >= 4)
        return [_latin1(s) for s in sentences]
    rng = random.Random(PDF_SEED)
    words = ("the council report river north market season water energy people city law court trade "
             "school century system power design growth music science history army record paper").split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(8, 24))).capitalize() + "."
            for _ in range(2000)]


def pdf_pages(count: int, sentences: list[str], seed: int = PDF_SEED):
    """Lines of each page: 300-400 words in paragraphs of 3-6 sentences, and a page number."""
    rng = random.Random(seed)
    order = list(range(len(sentences)))
    rng.shuffle(order)
    pos = 0
    for page in range(1, count + 1):
        target = rng.randint(300, 400)
        words, lines, paragraph = 0, [], []
        paragraph_len = rng.randint(3, 6)
        while words < target:
            sentence = sentences[order[pos]]
            pos += 1
            if pos == len(order):
                rng.shuffle(order)
                pos = 0
            paragraph.append(sentence)
            words += len(sentence.split())
            if len(paragraph) >= paragraph_len or words >= target:
                lines.extend(textwrap.wrap(" ".join(paragraph), 95))
                lines.append("")
                paragraph, paragraph_len = [], rng.randint(3, 6)
        lines.append(f"- {page} -")
        yield lines


def write_pdf(path: Path, pages: int, squad: Path = XQUAD_EN) -> dict:
    from tests.pdfgen import text_pdf_chunks

    t0 = time.monotonic()
    words = 0

    def counted():
        nonlocal words
        for lines in pdf_pages(pages, prose_sentences(squad)):
            words += sum(len(line.split()) for line in lines[:-1])
            yield lines

    with open(path, "wb") as out:
        for block in text_pdf_chunks(counted()):
            out.write(block)
    return {"words": words, "bytes": path.stat().st_size, "generate_s": round(time.monotonic() - t0, 2)}
