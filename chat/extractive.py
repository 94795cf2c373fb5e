"""An answer without a language model: the most relevant sentences of the retrieved passages.

Used when no chat server is configured.  The output is plain text in the same
shape a model is asked to produce -- short paragraphs, each ending with the tag
of the passage it comes from (``… sentence. [S2]``) -- so
:func:`chat.citations.parse_answer` turns it into cited sections.  The first
paragraph is a note (no citation) saying that no model is configured.

Scoring is deliberately simple and language-neutral: a sentence scores the sum
of the weights of the distinct question words it contains (lower-cased ``\\w+``
tokens; common words of documents.language.detection weigh 0.25, other words 1,
a shared prefix of >= 4 letters counts half, e.g. "opened"/"opening").  Ties are
broken by passage rank, then by position in the passage.
"""
from __future__ import annotations

import re
from typing import Sequence

from chat.prompts import TaggedSegment, sanitize_passage
from documents.language import answer_language, is_common_word, words
from retrieval.contracts import Segment

__all__ = [
    "extractive_answer",
    "split_sentences",
    "NO_LLM_NOTE",
    "NOTHING_FOUND",
    "MESSAGES",
]

MESSAGES: dict[str, tuple[str, str]] = {
    "en": (
        "No language model is configured, so here are the most relevant passages from your documents:",
        "I could not find anything about this in your documents.",
    ),
    "de": (
        "Es ist kein Sprachmodell eingerichtet, daher hier die relevantesten Stellen aus Ihren Dokumenten:",
        "Ich konnte dazu nichts in Ihren Dokumenten finden.",
    ),
    "es": (
        "No hay ningún modelo de lenguaje configurado; estos son los pasajes más relevantes de sus documentos:",
        "No encontré nada sobre esto en sus documentos.",
    ),
    "fr": (
        "Aucun modèle de langage n'est configuré ; voici les passages les plus pertinents de vos documents :",
        "Je n'ai rien trouvé à ce sujet dans vos documents.",
    ),
    "ru": (
        "Языковая модель не настроена, поэтому вот наиболее подходящие фрагменты из ваших документов:",
        "Я не нашёл ничего об этом в ваших документах.",
    ),
    "cs": (
        "Není nastaven žádný jazykový model, proto zde jsou nejrelevantnější pasáže z vašich dokumentů:",
        "K tomuto jsem ve vašich dokumentech nic nenašel.",
    ),
}
NO_LLM_NOTE, NOTHING_FOUND = MESSAGES["en"]


# Words after which a "." does not end a sentence (lower case, without the dot).  Tokens with an
# inner dot (e.g., i.e., z.B., т.е.) and single letters (initials) are handled generically.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs no nos fig figs approx ca cf inc ltd co corp dept est mt gen col "
    "lt sgt rev vol vols pp ed eds al resp jan feb mar apr jun jul aug sep sept oct nov dec "
    "bzw vgl ggf evtl inkl zzgl nr str abs bspw sog hr dipl ing "
    "sra srta dra ud uds pág págs núm aprox "
    "mme mlle env av bd "
    "гг др пр см стр ул им тыс млн руб ст рис напр "
    "např tzv tj čl odst mgr doc př kap".split()
)

_TERM_RE = re.compile(
    r"(?:\.{3}|[.!?\u2026\u061f]+)[\"'\u201d\u2019\u00bb)\]]*(?=\s|$)"  # . ! ? … ؟ then space/end
    r"|[\u3002\uff01\uff1f]+[\"'\u201d\u2019\u300d\u300f\uff09)]*"  # 。！？ need no space
)
_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*+\u2022\u25aa\u2013]|\d{1,3}[.)]|#{1,6})\s+")
_FENCE_LINE_RE = re.compile(r"(?m)^[ \t]*(?:`{3,}|~{3,}).*$")
_LINE_END_PUNCT = tuple(".!?\u2026\u061f\u3002\uff01\uff1f:;")

MAX_SENTENCE_CHARS = 500
MAX_PASSAGES = 8
MAX_PASSAGE_CHARS = 20_000


# ---------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------


def _line_units(text: str) -> list[str]:
    """Lines of text as sentence-splitting units; a wrapped line (no end punctuation, next
    line starting in lower case) is joined to the next one.  List markers are dropped."""
    units: list[str] = []
    current = ""
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            if current:
                units.append(current)
                current = ""
            continue
        is_item = bool(_LIST_MARKER_RE.match(line))
        line = _LIST_MARKER_RE.sub("", line).strip()
        if not line:
            continue
        if current and not is_item and not current.endswith(_LINE_END_PUNCT) and line[:1].islower():
            current = current + " " + line
        else:
            if current:
                units.append(current)
            current = line
    if current:
        units.append(current)
    return units


def _is_boundary(unit: str, m: re.Match, start: int) -> bool:
    punct = m.group(0)
    if punct[0] in "\u3002\uff01\uff1f":
        return True
    following = unit[m.end() :].lstrip()
    if following[:1].islower():
        return False  # "approx. three", "Why? because" -- not a new sentence
    if punct.rstrip("\"'\u201d\u2019\u00bb)]") == ".":
        window_start = max(start, m.start() - 64)
        before = re.search(r"(\S+)$", unit[window_start : m.start()])
        token = before.group(1).lstrip("(\"'[\u00ab\u201c\u201e").lower() if before else ""
        if before and token.isdigit() and len(token) <= 3 and not unit[start : window_start + before.start()].strip():
            return False  # an enumerator: "1. First step"
        if "." in token:  # e.g. / i.e. / z.B. / т.е.
            return False
        if len(token) == 1 and token.isalpha():  # initials: "J. Smith"
            return False
        if token in _ABBREVIATIONS:
            return False
    return True


def split_sentences(text: str) -> list[str]:
    """Split text into sentences on . ! ? … 。 ！ ？ ؟ and line breaks, keeping abbreviations
    (e.g., Dr., z.B.), initials and decimals (3.5) inside their sentence."""
    sentences: list[str] = []
    for unit in _line_units((text or "").replace("\r\n", "\n").replace("\r", "\n")):
        start = 0
        for m in _TERM_RE.finditer(unit):
            if _is_boundary(unit, m, start):
                piece = unit[start : m.end()].strip()
                if piece:
                    sentences.append(piece)
                start = m.end()
        tail = unit[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _question_weights(question: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    for tok in words(question):
        weights[tok] = 0.25 if (is_common_word(tok) or len(tok) < 2) else 1.0
    return weights


def _score(sentence_tokens: set[str], weights: dict[str, float]) -> tuple[float, bool]:
    """(score, whether any content word matched)."""
    score = 0.0
    content = False
    for qt, w in weights.items():
        if qt in sentence_tokens:
            score += w
            content = content or w >= 1.0
        elif w >= 1.0 and len(qt) >= 4:
            for st in sentence_tokens:
                if len(st) >= 4 and _common_prefix(qt, st) >= max(4, min(len(qt), len(st)) - 3):
                    score += 0.5 * w
                    content = True
                    break
    return score, content


def _clean(text: str) -> str:
    text = _FENCE_LINE_RE.sub("", text)
    return sanitize_passage(text)


def _shorten(sentence: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "\u2026"


def _qa_answer(segment: Segment) -> str:
    answer = segment.get("answer")
    if not answer:
        excerpt = str(segment.get("excerpt") or "")
        m = re.search(r"(?:^|\n)\s*A:\s*(.*)\Z", excerpt, re.DOTALL)
        answer = m.group(1) if m else excerpt
    answer = _clean(str(answer)).strip()
    # One section: no blank lines inside.
    return re.sub(r"\n\s*\n+", "\n", answer)


def _qa_question(segment: Segment) -> str:
    question = segment.get("question")
    if question:
        return str(question)
    m = re.match(r"\s*Q:\s*(.*?)(?:\n\s*A:|\Z)", str(segment.get("excerpt") or ""), re.DOTALL)
    return m.group(1) if m else ""


def _is_qa(segment: Segment) -> bool:
    source_type = segment.get("source_type")
    if source_type:
        return source_type == "qa"
    return segment.get("qa_id") is not None and segment.get("chunk_id") is None


# ---------------------------------------------------------------------------
# The answer
# ---------------------------------------------------------------------------


def extractive_answer(
    question: str,
    tagged: Sequence[TaggedSegment],
    *,
    max_sentences: int = 4,
    max_qa: int = 2,
    language_hint: str | None = None,
) -> str:
    """A cited answer made of the passages' most relevant sentences.

    ``tagged``: the ranked segments with the tags the answer cites them by, as the prompt
    has them (:func:`chat.prompts.tag_segments`).  Approved Q&A segments come first, each
    answer whole as one cited paragraph (the top one always, up to ``max_qa`` of
    them, further ones only when they share a word with the question).  Then up to
    ``max_sentences`` document sentences, one paragraph per passage (sentences in
    passage order, " … " marking a gap), most relevant passage first.  The note and
    "nothing found" message follow the question's language (``language_hint`` wins).
    """
    note, nothing = MESSAGES[answer_language(question, hint=language_hint)]
    items = list(tagged)
    if not items:
        return nothing
    weights = _question_weights(question)
    paragraphs: list[str] = [note]

    qa_items = [t for t in items if _is_qa(t.segment)]
    doc_items = [t for t in items if not _is_qa(t.segment)]

    used_qa = 0
    for i, t in enumerate(qa_items):
        if used_qa >= max_qa:
            break
        answer = _qa_answer(t.segment)
        if not answer:
            continue
        if i > 0:
            text_tokens = set(words(_qa_question(t.segment) + " " + answer))
            if not _score(text_tokens, weights)[1]:
                continue
        paragraphs.append(f"{answer} [{t.tag}]")
        used_qa += 1

    # (score, passage rank, position, passage index, sentence)
    candidates: list[tuple[float, int, int, int, str]] = []
    short: list[tuple[float, int, int, int, str]] = []
    firsts: list[tuple[int, str]] = []
    for p_idx, t in enumerate(doc_items[:MAX_PASSAGES]):
        sentences = split_sentences(_clean(str(t.segment.get("excerpt") or "")[:MAX_PASSAGE_CHARS]))
        first_seen = False
        for pos, sentence in enumerate(sentences):
            toks = words(sentence)
            if not toks:
                continue
            if not first_seen and len(toks) >= 3:
                firsts.append((p_idx, sentence))
                first_seen = True
            score, content = _score(set(toks), weights)
            if not content:
                continue
            entry = (score, p_idx, pos, p_idx, sentence)
            (candidates if len(toks) >= 3 else short).append(entry)
    pool = candidates or short
    chosen: list[tuple[float, int, int, int, str]] = []
    if pool and max_sentences > 0:
        pool.sort(key=lambda c: (-c[0], c[1], c[2]))
        best = pool[0][0]
        chosen = [c for c in pool if c[0] >= best * 0.34][:max_sentences]
    elif max_sentences > 0:
        # Nothing matched word for word (e.g. another language): show the top passages' openings.
        chosen = [(0.0, p_idx, 0, p_idx, s) for p_idx, s in firsts[: min(max_sentences, 3)]]

    by_passage: dict[int, list[tuple[float, int, int, int, str]]] = {}
    for c in chosen:
        by_passage.setdefault(c[3], []).append(c)
    ordered = sorted(by_passage.items(), key=lambda kv: (-max(c[0] for c in kv[1]), kv[0]))
    for p_idx, group in ordered:
        group.sort(key=lambda c: c[2])
        text = ""
        prev_pos = None
        for c in group:
            sentence = _shorten(c[4])
            if prev_pos is None:
                text = sentence
            elif c[2] == prev_pos + 1:
                text += " " + sentence
            else:
                text += " \u2026 " + sentence
            prev_pos = c[2]
        paragraphs.append(f"{text} [{doc_items[p_idx].tag}]")

    if len(paragraphs) == 1:
        return nothing
    return "\n\n".join(paragraphs)
