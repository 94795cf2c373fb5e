"""Turn a model's answer into cited sections.

Pure Python (no Django): the caller passes the answer text and the tag map that
:func:`chat.prompts.build_messages` returned (``{"S1": segment, ...}``).

Citation syntax (text mode)
---------------------------
Citations are recognised **only by tag**, never by matching answer text against
passages.  A *tag group* is a bracket holding one or more tags:

* brackets ``[...]``, fullwidth ``［...］`` and lenticular ``【...】``;
* tags ``S<n>`` in any case (``S1``, ``s1``, ``S01``), optionally written
  ``Source 1``/``Source: S1``; several tags separated by ``,`` ``;`` ``/``
  ``and``/``&`` or spaces (``[S1, S2]``, ``[S1; S3]``), and short ranges
  ``[S1-S3]`` / ``[S1–S3]`` (at most 20 tags);
* adjacent groups such as ``[S1][S2]`` are simply two groups.

Deliberately *not* recognised: parentheses ``(S1)`` and bare numbers ``[1]`` --
both occur in ordinary prose and documents (``(S1) classification``, footnote
``[1]``), so treating them as citations could invent evidence.  Text inside
fenced code blocks and inline code spans is left untouched and never parsed.

Every recognised group is rewritten in canonical form (``[S1][S3]``) so the UI
needs to render a single syntax; tags that are not in the tag map are removed
from the text (no dangling markers) and counted in ``invalid_citations``.

Sections
--------
Sections are paragraphs (split on blank lines).  A fenced code block is one
section even if it contains blank lines; consecutive list items (a "loose" list
separated by blank lines) and indented continuation paragraphs form one
section; a paragraph made only of citations (``[S1][S2]`` or ``Sources: [S1]``)
is attached to the preceding section.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from retrieval.contracts import Segment

__all__ = [
    "ParsedAnswer",
    "parse_answer",
    "parse_json_answer",
    "parse_any",
    "make_citation",
    "snippet_preview",
    "strip_citation_tags",
    "normalize_tag",
    "segment_excerpt",
    "TAG_GROUP_RE",
    "tags_in_group",
]

SNIPPET_CHARS = 200
MAX_RANGE = 20
MAX_JSON_CHARS = 200_000
MAX_JSON_DEPTH = 32

# ---------------------------------------------------------------------------
# Tag syntax
# ---------------------------------------------------------------------------

_OPEN = "[\\[\uff3b\u3010]"  # [  ［  【
_CLOSE = "[\\]\uff3d\u3011]"  # ]  ］  】
_PREFIX = r"(?:sources?\s*:?\s*)?"
_TAG = r"(?:S\s?\d{1,4}|source\s*:?\s*\d{1,4})"
_ITEM = rf"{_PREFIX}{_TAG}(?:\s*[-\u2013\u2014]\s*{_PREFIX}{_TAG})?"
_SEP = r"(?:\s*[,;/&]\s*|\s+and\s+|\s+)"
TAG_GROUP_RE = re.compile(rf"{_OPEN}\s*{_ITEM}(?:{_SEP}{_ITEM})*\s*{_CLOSE}", re.IGNORECASE)
_ITEM_RE = re.compile(
    r"(?:sources?\s*:?\s*)?(?:s\s?|source\s*:?\s*)(\d{1,4})"
    r"(?:\s*[-\u2013\u2014]\s*(?:sources?\s*:?\s*)?(?:s\s?|source\s*:?\s*)(\d{1,4}))?",
    re.IGNORECASE,
)

# A paragraph that only lists sources, e.g. "[S1][S2]" or "Sources: [S1], [S3]."
_CITATION_ONLY_RE = re.compile(
    rf"^\s*(?:(?:sources?|references?|citations?|quellen?|fuentes?|источники?|zdroje?)\s*:?\s*)?"
    rf"(?:{TAG_GROUP_RE.pattern}[\s,;.]*)+$",
    re.IGNORECASE,
)

_FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_LIST_ITEM_RE = re.compile(r"^[ \t]{0,3}(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+\S")
_INLINE_CODE_RE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


def normalize_tag(value: Any) -> str | None:
    """Canonical ``S<n>`` for ``"S1"``, ``"s01"``, ``"[S1]"``, ``"1"``, ``1``; None if it is not a tag."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"S{value}" if value >= 0 else None
    if isinstance(value, float) and value.is_integer():
        return f"S{int(value)}"
    if not isinstance(value, str):
        return None
    m = re.fullmatch(
        r"\s*[\[\uff3b\u3010]?\s*(?:sources?\s*:?\s*)?(?:s\s?)?(\d{1,4})\s*[\]\uff3d\u3011]?\s*",
        value,
        re.IGNORECASE,
    )
    return f"S{int(m.group(1))}" if m else None


def _tags_in_group(group: str) -> list[str]:
    tags: list[str] = []
    for m in _ITEM_RE.finditer(group):
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else None
        if end is not None and start < end <= start + MAX_RANGE:
            tags.extend(f"S{n}" for n in range(start, end + 1))
        else:
            tags.append(f"S{start}")
            if end is not None:
                tags.append(f"S{end}")
    return tags


def tags_in_group(group: str) -> list[str]:
    """The tags one bracket group names, in order ("[S1-S3, S5]" → S1, S2, S3, S5)."""
    return _tags_in_group(group)


def strip_citation_tags(text: str) -> str:
    """Remove every citation group from ``text`` (used for conversation history)."""
    out = TAG_GROUP_RE.sub("", text or "")
    out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)
    out = re.sub(r"[ \t]{2,}", " ", out)
    return "\n".join(line.rstrip() for line in out.split("\n")).strip()


# ---------------------------------------------------------------------------
# Citations
# ---------------------------------------------------------------------------


def segment_excerpt(segment: Segment) -> str:
    """The passage text of a segment (Q&A segments: ``Q: …\\nA: …``)."""
    excerpt = segment.get("excerpt")
    if excerpt:
        return str(excerpt)
    question, answer = segment.get("question"), segment.get("answer")
    if question or answer:
        parts = []
        if question:
            parts.append(f"Q: {question}")
        if answer:
            parts.append(f"A: {answer}")
        return "\n".join(parts)
    return ""


def snippet_preview(text: str, limit: int = SNIPPET_CHARS) -> str:
    """First ~``limit`` characters of ``text`` (whitespace collapsed), cut at a word boundary with "…"."""
    flat = " ".join((text or "").split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit + 1]
    space = cut.rfind(" ")
    if space >= limit * 0.6:
        cut = cut[:space]
    else:
        cut = flat[:limit]
    return cut.rstrip(" ,;:.-\u2013\u2014") + "\u2026"


_SENTENCE_RE = re.compile(r"[^.!?\u3002\uff01\uff1f\n]+(?:[.!?\u3002\uff01\uff1f]+|\n|$)")
_WORD_RE = re.compile(r"\w{3,}")
MATCH_CHARS = 320


def _stems(text: str) -> set[str]:
    """Words of three letters or more, cut to five (Czech, German and Russian inflect their endings)."""
    return {w[:5] for w in _WORD_RE.findall(strip_citation_tags(text).casefold())}


def best_sentences(passage: str, claim: str) -> str:
    """The sentence of the passage sharing the most words with the claim that cites it (and the one after
    it when that shares nearly as many), whitespace collapsed; "" when no sentence shares a word."""
    sentences = [m.group().strip() for m in _SENTENCE_RE.finditer(passage or "") if m.group().strip()]
    wanted = _stems(claim)
    if not sentences or not wanted:
        return ""
    scores = [len(_stems(sentence) & wanted) for sentence in sentences]
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    if scores[best] == 0:
        return ""
    chosen = [best]
    if best + 1 < len(sentences) and scores[best + 1] * 2 >= scores[best] and scores[best + 1] > 0:
        chosen.append(best + 1)
    text = " ".join(" ".join(sentences[i].split()) for i in chosen)
    return snippet_preview(text, MATCH_CHARS)


def make_citation(tag: str, segment: Segment) -> dict:
    """The citation record stored with an answer for tag ``tag``."""
    source_type = segment.get("source_type") or ("qa" if segment.get("qa_id") is not None else "document")
    heading_path = segment.get("heading_path") or []
    # A passage joined with its neighbour (retrieval/search/neighbours.py) cites both chunks, by id only.
    joined = {"joined_chunk_ids": list(segment["joined_chunk_ids"])} if segment.get("joined_chunk_ids") else {}
    return {
        "source_id": tag,
        "source_type": source_type,
        "chunk_id": segment.get("chunk_id"),
        "qa_id": segment.get("qa_id"),
        "document_id": segment.get("document_id"),
        "document_name": segment.get("document_name"),
        "document_version": segment.get("document_version"),
        "chunk_index": segment.get("chunk_index"),
        "page_number": segment.get("page_number"),
        "page_label": segment.get("page_label"),
        "heading_path": list(heading_path),
        "start_offset": segment.get("start_offset"),
        "end_offset": segment.get("end_offset"),
        "snippet_preview": snippet_preview(segment_excerpt(segment)),
        **joined,
    }


@dataclass
class ParsedAnswer:
    """An answer split into sections, each with the sources it cites."""

    sections: list[dict] = field(default_factory=list)
    citations: list[dict] = field(default_factory=list)
    invalid_citations: int = 0
    invalid_tags: list[str] = field(default_factory=list)
    content: str = ""
    format: str = "text"  # "text" or "json": which parser produced it

    @property
    def source_ids(self) -> list[str]:
        return [c["source_id"] for c in self.citations]

    def to_dict(self) -> dict:
        return asdict(self)


class _Collector:
    """Validates tags against the tag map and accumulates counts and citations."""

    def __init__(self, tag_map: dict[str, Segment]):
        self.tag_map: dict[str, Segment] = {}
        for key, seg in (tag_map or {}).items():
            norm = normalize_tag(key)
            if norm is not None:
                self.tag_map[norm] = seg
        self.invalid = 0
        self.invalid_tags: list[str] = []
        self.citations: dict[str, dict] = {}

    def check(self, raw_tag: Any) -> str | None:
        tag = normalize_tag(raw_tag)
        if tag is not None and tag in self.tag_map:
            if tag not in self.citations:
                self.citations[tag] = make_citation(tag, self.tag_map[tag])
            return tag
        self.invalid += 1
        label = tag if tag is not None else str(raw_tag)[:40]
        if label not in self.invalid_tags:
            self.invalid_tags.append(label)
        return None

    def section(self, text: str, source_ids: list[str]) -> dict:
        unique = list(dict.fromkeys(source_ids))
        return {"text": text, "source_ids": unique, "citations": [self.citations[t] for t in unique]}

    def result(self, sections: list[dict], fmt: str) -> ParsedAnswer:
        order: list[str] = []
        claims: dict[str, list[str]] = {}
        for sec in sections:
            for tag in sec["source_ids"]:
                if tag not in order:
                    order.append(tag)
                claims.setdefault(tag, []).append(sec["text"])
        # The preview shows the passage's sentences the citing text matches, not the passage's opening.
        for tag in order:
            match = best_sentences(segment_excerpt(self.tag_map[tag]), " ".join(claims[tag]))
            if match and not self.citations[tag]["snippet_preview"].startswith(match[:60].rstrip("\u2026")):
                self.citations[tag]["match_preview"] = match  # (the opening, when it matches, shows it already)
        return ParsedAnswer(
            sections=sections,
            citations=[self.citations[t] for t in order],
            invalid_citations=self.invalid,
            invalid_tags=list(self.invalid_tags),
            content="\n\n".join(s["text"] for s in sections),
            format=fmt,
        )


# ---------------------------------------------------------------------------
# Text answers
# ---------------------------------------------------------------------------


def _split_code(text: str) -> list[tuple[bool, str]]:
    """Split text into (is_code, piece) runs; fenced blocks and inline code spans are code."""
    runs: list[tuple[bool, str]] = []
    buf: list[str] = []
    lines = text.split("\n")
    fence: str | None = None
    code_buf: list[str] = []
    for i, line in enumerate(lines):
        piece = line + ("\n" if i < len(lines) - 1 else "")
        if fence is None:
            m = _FENCE_RE.match(line)
            if m:
                if buf:
                    runs.extend(_split_inline_code("".join(buf)))
                    buf = []
                fence = m.group(1)
                code_buf = [piece]
            else:
                buf.append(piece)
        else:
            code_buf.append(piece)
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                runs.append((True, "".join(code_buf)))
                fence, code_buf = None, []
    if fence is not None:
        runs.append((True, "".join(code_buf)))
    if buf:
        runs.extend(_split_inline_code("".join(buf)))
    return runs


def _split_inline_code(text: str) -> list[tuple[bool, str]]:
    runs: list[tuple[bool, str]] = []
    pos = 0
    for m in _INLINE_CODE_RE.finditer(text):
        if m.start() > pos:
            runs.append((False, text[pos : m.start()]))
        runs.append((True, m.group(0)))
        pos = m.end()
    if pos < len(text):
        runs.append((False, text[pos:]))
    return runs


def _is_cjk(text: str) -> bool:
    return any("\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\ufaff" for ch in text)


def _rewrite_tags(text: str, collector: _Collector) -> tuple[str, list[str]]:
    """Canonicalise valid tag groups, delete invalid ones; return new text and valid tags in order."""
    found: list[str] = []
    out: list[str] = []
    for is_code, piece in _split_code(text):
        if is_code:
            out.append(piece)
            continue
        pos = 0
        rebuilt: list[str] = []
        eat_space = False
        for m in TAG_GROUP_RE.finditer(piece):
            valid = [t for t in (collector.check(t) for t in _tags_in_group(m.group(0))) if t]
            valid = list(dict.fromkeys(valid))
            before = piece[pos : m.start()]
            if eat_space:
                before = before.lstrip(" \t")
                eat_space = False
            if valid:
                rebuilt.append(before)
                rebuilt.append("".join(f"[{t}]" for t in valid))
                found.extend(valid)
            else:
                # Drop the marker with the blank space in front of it, unless that would glue
                # two words together; at the start of a line drop the space after it instead.
                trimmed = before.rstrip(" \t")
                emitted = "".join(out)[-1:] + "".join(rebuilt) + trimmed
                left_char = emitted[-1:]
                right_char = piece[m.end() : m.end() + 1]
                if left_char not in ("", "\n") and right_char.isalnum() and (
                    trimmed != before or (left_char.isalnum() and not _is_cjk(left_char + right_char))
                ):
                    trimmed += " "
                rebuilt.append(trimmed)
                if left_char in ("", "\n"):
                    eat_space = True
            pos = m.end()
        tail = piece[pos:]
        if eat_space:
            tail = tail.lstrip(" \t")
        rebuilt.append(tail)
        out.append("".join(rebuilt))
    return "".join(out), found


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; a fenced code block stays whole."""
    paras: list[str] = []
    cur: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            cur.append(line)
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) <= {fence[0]}:
                fence = None
            continue
        m = _FENCE_RE.match(line)
        if m:
            fence = m.group(1)
            cur.append(line)
            continue
        if line.strip() == "":
            if cur:
                paras.append("\n".join(cur))
                cur = []
        else:
            cur.append(line)
    if cur:
        paras.append("\n".join(cur))
    return [p.strip("\n") for p in paras if p.strip()]


def _is_list_para(para: str) -> bool:
    return bool(_LIST_ITEM_RE.match(para))


def _group_blocks(paras: list[str]) -> list[str]:
    """Merge loose list items, indented continuations and citation-only paragraphs into the previous block."""
    blocks: list[str] = []
    in_list = False
    for para in paras:
        if blocks and _CITATION_ONLY_RE.match(para):
            markers = "".join(TAG_GROUP_RE.findall(para))
            last_line = blocks[-1].rsplit("\n", 1)[-1]
            joiner = "\n" if _FENCE_RE.match(last_line) else " "
            blocks[-1] = blocks[-1] + joiner + markers
            continue
        is_item = _is_list_para(para)
        is_indented = para[:1] in (" ", "\t") and not _FENCE_RE.match(para)
        if blocks and in_list and (is_item or is_indented):
            blocks[-1] = blocks[-1] + "\n\n" + para
            continue
        blocks.append(para)
        in_list = is_item
    return blocks


def parse_answer(text: str, tag_map: dict[str, Segment]) -> ParsedAnswer:
    """Split a plain-text answer into cited sections (see module docstring for the syntax)."""
    collector = _Collector(tag_map)
    normalized = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    sections: list[dict] = []
    for block in _group_blocks(_paragraphs(normalized)):
        new_text, tags = _rewrite_tags(block, collector)
        new_text = new_text.strip()
        if not new_text:
            continue
        sections.append(collector.section(new_text, tags))
    return collector.result(sections, "text")


# ---------------------------------------------------------------------------
# JSON answers
# ---------------------------------------------------------------------------

_CODE_FENCE_BLOCK_RE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)


def _json_candidates(raw: str) -> list[str]:
    text = raw.strip()
    cands: list[str] = []
    for m in _CODE_FENCE_BLOCK_RE.finditer(text):
        cands.append(m.group(1).strip())
    if text.startswith("```"):  # unterminated fence
        cands.append(re.sub(r"^```[^\n]*\n?", "", text).strip())
    cands.append(text)
    out: list[str] = []
    for c in cands:
        if c and c not in out:
            out.append(c)
    return out


def _max_depth(text: str) -> int:
    depth = best = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


def _close_truncated(text: str) -> str | None:
    """Close the strings/brackets of a JSON document cut off mid-way (e.g. by max_tokens)."""
    stack: list[str] = []
    in_str = False
    quote = ""
    escape = False
    for ch in text:
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                in_str = False
        elif ch in "\"'":
            in_str, quote = True, ch
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not stack:
                return None
            stack.pop()
    if not stack and not in_str:
        return None
    out = text
    if in_str:
        out += quote
    out = re.sub(r"[,:\s]+$", "", out)
    return out + "".join(reversed(stack))


def _loads_lenient(candidate: str) -> Any:
    """Try strict JSON, then a few repairs; raise ValueError when nothing works."""
    if len(candidate) > MAX_JSON_CHARS or _max_depth(candidate) > MAX_JSON_DEPTH:
        raise ValueError("too large")
    attempts = [candidate]
    no_trailing = re.sub(r",\s*([}\]])", r"\1", candidate)
    attempts.append(no_trailing)
    smart = no_trailing.translate({0x201C: '"', 0x201D: '"'})
    attempts.append(smart)
    if '"' not in no_trailing:
        attempts.append(no_trailing.replace("'", '"'))
    closed = _close_truncated(no_trailing)
    if closed:
        attempts.append(re.sub(r",\s*([}\]])", r"\1", closed))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except (ValueError, RecursionError):
            continue
    # Python-literal style ({'sections': [...], }) -- literal_eval only evaluates literals.
    for attempt in (candidate, closed) if closed else (candidate,):
        py = re.sub(r"\btrue\b", "True", attempt)
        py = re.sub(r"\bfalse\b", "False", py)
        py = re.sub(r"\bnull\b", "None", py)
        try:
            return ast.literal_eval(py)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise ValueError("no JSON")


def _extract_json(raw: str) -> Any:
    for cand in _json_candidates(raw):
        starts = [m.start() for m in re.finditer(r"[{\[]", cand)][:8]
        for start in starts:
            sub = cand[start:]
            # Cut trailing prose after the last closing brace when there is one.
            decoder = json.JSONDecoder()
            try:
                value, _ = decoder.raw_decode(sub)
                if _usable_shape(value):
                    return value
            except ValueError:
                pass
            end = max(sub.rfind("}"), sub.rfind("]"))
            pieces = [sub]  # first as is: a truncated tail is closed by _close_truncated
            if 0 <= end < len(sub) - 1:
                pieces.append(sub[: end + 1])  # then without trailing prose
            for piece in pieces:
                try:
                    value = _loads_lenient(piece)
                except ValueError:
                    continue
                if _usable_shape(value):
                    return value
    return None


def _usable_shape(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in value for k in ("sections", "answer", "text", "content"))
    if isinstance(value, list):
        return any(isinstance(v, dict) and ("text" in v or "content" in v) for v in value)
    return False


def _source_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        if isinstance(value, str):
            groups = TAG_GROUP_RE.findall(value)
            if groups:
                return [t for g in groups for t in _tags_in_group(g)]
            return [p for p in re.split(r"[\s,;]+", value) if p.strip("[]")]
        return [value]
    if isinstance(value, (list, tuple)):
        out: list[Any] = []
        for item in value:
            if isinstance(item, dict):
                item = item.get("id", item.get("source_id", item.get("tag")))
            if isinstance(item, str) and re.search(r"[\s,;]", item.strip()):
                out.extend(_source_list(item))
            elif item is not None:
                out.append(item)
        return out
    return [value]


def _raw_sections(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("sections"), list):
            return value["sections"]
        if isinstance(value.get("sections"), dict):
            return [value["sections"]]
        for key in ("answer", "text", "content"):
            if isinstance(value.get(key), (str, list)):
                inner = value[key]
                if isinstance(inner, list):
                    return inner
                return [{"text": inner, "source_ids": value.get("source_ids", value.get("sources"))}]
    return []


def parse_json_answer(raw: str, tag_map: dict[str, Segment]) -> ParsedAnswer | None:
    """Parse ``{"sections": [{"text", "source_ids"}]}`` leniently; None when no usable JSON is found.

    Accepts code fences, prose around the object, trailing commas, single quotes,
    a truncated tail, and ``source_ids`` as ``["S1"]``, ``["1"]``, ``[1]`` or
    ``"S1, S2"``.  Ids not in ``tag_map`` are dropped and counted.  Citation tags
    written inline in a section's text are treated as in :func:`parse_answer`
    (valid ones kept in canonical form and added to ``source_ids``).  Returns None
    when the JSON has no section with text, so the caller can fall back to text.
    """
    if not raw or not raw.strip():
        return None
    value = _extract_json(raw)
    if value is None:
        return None
    collector = _Collector(tag_map)
    sections: list[dict] = []
    text: Any
    ids: Any
    for item in _raw_sections(value):
        if isinstance(item, str):
            text, ids = item, []
        elif isinstance(item, dict):
            text = item.get("text", item.get("content", ""))
            ids = item.get("source_ids", item.get("sources", item.get("citations", item.get("source_id"))))
        else:
            continue
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        tags: list[str] = []
        for sid in _source_list(ids):
            tag = collector.check(sid)
            if tag:
                tags.append(tag)
        new_text, inline = _rewrite_tags(text.replace("\r\n", "\n"), collector)
        new_text = new_text.strip()
        if not new_text:
            continue
        sections.append(collector.section(new_text, tags + inline))
    if not sections:
        return None
    return collector.result(sections, "json")


def parse_any(raw: str, tag_map: dict[str, Segment], *, json_mode: bool) -> ParsedAnswer:
    """JSON first when ``json_mode`` (falling back to text when no usable JSON), else text."""
    if json_mode:
        parsed = parse_json_answer(raw, tag_map)
        if parsed is not None:
            return parsed
    return parse_answer(raw, tag_map)
