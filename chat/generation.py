"""What every way of answering shares: the outcome, the chat server and its client, the history,
the budgets, and one streamed request to the model (chat.answering and chat.agent both build on it).
"""
from __future__ import annotations

import re

import time
from dataclasses import dataclass, field

from django.utils.translation import gettext_noop
from django.conf import settings

from chat.citations import segment_excerpt, snippet_preview
from chat.contracts import Source
from chat.models import Message, MessageRole, MessageStatus
from chat.threads import ancestors, answers_by_question, shown_answer
from chat.prompts import resolve_token_counter
from core.errors import ApplicationError
from core.reasons import reason, render
from retrieval.ai.clients import chat_client_for
from retrieval.contracts import Segment
from retrieval.selectors import retrieval_settings_get

HISTORY_MESSAGES = 20
ANSWER_RESERVE_TOKENS = 1024  # of a stated context window, kept for the answer
PROMPT_RESERVE_TOKENS = 800  # system prompt and framing


class AnswerFailed(ApplicationError):
    """Why an answer failed, as a core.reasons reason (stored on the message, shown in the reader's language)."""

    code = "answer_failed"

    def __init__(self, why: dict):
        super().__init__(render(why))
        self.reason = why


def empty_answer(server_name: str, *, after_searches: bool = False) -> AnswerFailed:
    """The chat server answered nothing."""
    if after_searches:
        return AnswerFailed(reason("answer.empty_after_searches", gettext_noop(
            "The chat server '%(name)s' returned an empty answer after its searches."), name=server_name))
    return AnswerFailed(reason("answer.empty", gettext_noop("The chat server '%(name)s' returned an empty answer."),
                               name=server_name))


def too_slow() -> AnswerFailed:
    """The answer passed CHAT_ANSWER_TIME_LIMIT."""
    return AnswerFailed(reason("answer.time_limit", gettext_noop("The answer took longer than %(limit)s s and was stopped."),
                               limit=settings.CHAT_ANSWER_TIME_LIMIT))


@dataclass
class Outcome:
    mode: str  # "qa_direct" | "documents" | "general" | "refused" | "extractive" | "agent" | "waiting"
    text: str
    tag_map: dict[str, Segment] = field(default_factory=dict)
    json_mode: bool = False
    usage: dict = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    trace: dict | None = None
    extra: dict = field(default_factory=dict)  # more keys of the message's metadata


@dataclass
class Round:
    """One request to the chat server: the text it streamed, its usage as reported, its tool calls."""

    text: str
    usage: dict
    tool_calls: list | None = None
    model: str = ""


_ADDRESS = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>)]+|\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?(?:/[^\s'\"<>)]*)?"
                      r"|\b(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):\d{2,5}\b", re.IGNORECASE)


def without_addresses(text: str) -> str:
    """`text` with URLs and host:port addresses replaced: errors shown to users never name a server's address."""
    return _ADDRESS.sub("(server address hidden)", text)


def context_sources(tag_map: dict[str, Segment]) -> list[Source]:
    """What the `sources` event shows: each tag given to the model and where it comes from."""
    return [
        {"source_id": tag, "source_type": seg.get("source_type", "document"), "chunk_id": seg.get("chunk_id"),
         "qa_id": seg.get("qa_id"), "document_id": seg.get("document_id"), "document_name": seg.get("document_name"),
         "document_version": seg.get("document_version"), "chunk_index": seg.get("chunk_index"),
         "page_number": seg.get("page_number"), "page_label": seg.get("page_label"), "score": seg.get("score"),
         "preview": snippet_preview(segment_excerpt(seg)), **source_origin(seg),
         **({"joined_chunk_ids": list(seg["joined_chunk_ids"])} if seg.get("joined_chunk_ids") else {})}
        for tag, seg in tag_map.items()
    ]


def source_origin(seg: Segment) -> dict:
    """Where a source comes from and how close it is, as the chat page shows it: `tier`, `collection`
    (the knowledge base's name; None for the user's own documents), `distance` (cosine) and
    `similarity` = 1 − cosine distance (None when unknown), for passages and Q&A pairs alike."""
    distance = seg.get("distance")
    origin = {"tier": seg.get("tier"), "collection": seg.get("collection"), "distance": distance,
              "similarity": None if distance is None else round(max(0.0, 1.0 - float(distance)), 4)}
    if seg.get("source_type") == "qa":  # the topic the approved pair came from (asked with or without one)
        origin.update(category=seg.get("category", ""), subcategory=seg.get("subcategory", ""))
    return origin


def chat_server(rs):
    """The default chat server if one is configured and switched on, else None (extractive answers)."""
    server = rs.default_chat_server
    if server is None or not server.is_active or not server.can("chat"):
        return None
    return server


def history_for(question: Message) -> list[dict]:
    """Earlier turns of the branch the question was asked on (answered ones), oldest first: the question
    versions it followed (chat/threads.py), each with the answer the page shows (the chosen version,
    else the newest); none of the question's own earlier versions when it is itself an edit."""
    rows = list(Message.objects.filter(conversation_id=question.conversation_id, pk__lte=question.pk,
                                       role__in=[MessageRole.USER, MessageRole.ASSISTANT])
                .only("id", "role", "metadata", "status").order_by("id"))
    own = next((m for m in rows if m.pk == question.pk), question)
    answers = answers_by_question(m for m in rows if m.role == MessageRole.USER or m.status not in (
        MessageStatus.PENDING, MessageStatus.STREAMING, MessageStatus.FAILED))
    picked: list[tuple[str, int]] = []
    for asked in ancestors(own, rows):
        picked.append((MessageRole.USER, asked.pk))
        answer = shown_answer(answers.get(asked.pk, []))
        if answer is not None:
            picked.append((MessageRole.ASSISTANT, answer.pk))
    picked = picked[-HISTORY_MESSAGES:]
    contents = dict(Message.objects.filter(pk__in=[pk for _, pk in picked]).values_list("id", "content"))
    return [{"role": role, "content": contents.get(pk, "")} for role, pk in picked]


def context_budget(server) -> int:
    """Tokens of passages the server's prompt can take."""
    window = server.capabilities.get("context_window")
    if window:
        return max(500, int(window) - settings.CHAT_HISTORY_TOKENS - ANSWER_RESERVE_TOKENS - PROMPT_RESERVE_TOKENS)
    return settings.CHAT_CONTEXT_TOKENS


def model_usage(model: str, usages: list[dict], *, server_id: int | None = None) -> dict:
    """`llm_usage` of an answer: the usage of its requests added up, and which chat server (row) made it
    (usage is counted per server: two servers may run a model of the same name)."""
    total = {"model": model, "server_id": server_id, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for usage in usages:
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            total[key] += int(usage.get(key) or 0)
    if any(u.get("estimated") for u in usages):
        total["estimated"] = True
    return total


def no_model_usage(model: str) -> dict:
    return {"model": model, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def generation_options(server) -> dict:
    """`temperature` and `max_tokens` of a request: the chat server's own (capabilities `temperature`,
    `max_tokens`) if set, else the retrieval settings' (0.4; CHAT_MAX_ANSWER_TOKENS when empty)."""
    rs = retrieval_settings_get()
    caps = server.capabilities or {}
    temperature = caps.get("temperature")
    max_tokens = caps.get("max_tokens")
    limit = max_tokens or rs.max_tokens or settings.CHAT_MAX_ANSWER_TOKENS  # may be None: no limit sent
    return {"temperature": float(rs.temperature if temperature in (None, "") else temperature),
            "max_tokens": int(limit) if limit else None}


def chat_client(server):
    """The server's chat client, kept per process (retrieval.ai.clients): the rules are checked every time."""
    return chat_client_for(server, token_counter=resolve_token_counter())


def stream_answer(job, server, messages: list[dict], *, json_mode: bool) -> tuple[str, dict]:
    """Stream the model's answer through job.emit; (text, usage)."""
    answer = stream_round(job, server, messages, json_mode=json_mode)
    if not answer.text.strip():
        raise empty_answer(server.name)
    return answer.text, model_usage(answer.model, [answer.usage], server_id=server.pk)


def stream_round(job, server, messages: list[dict], *, json_mode: bool = False, tools: list | None = None,
                 separator: str = "") -> Round:
    """One request; its text streams through job.emit (after `separator`, if any comes); stops at the time limit."""
    client = chat_client(server)
    deadline = job.started + settings.CHAT_ANSWER_TIME_LIMIT
    usage: dict = {}
    calls = None
    parts: list[str] = []
    kwargs: dict = generation_options(server)
    if json_mode:
        kwargs["response_format"] = {"type": "json_object"}
    if tools:
        kwargs["tools"] = tools
    sent = time.perf_counter()
    stream = client.stream(messages, **kwargs)
    try:
        for delta in stream:
            if delta.text:
                if "server_first_token_ms" not in job.timings:
                    job.timings["server_first_token_ms"] = round((time.perf_counter() - sent) * 1000, 1)
                if not parts and separator:
                    job.emit(separator)
                parts.append(delta.text)
                job.emit(delta.text)
            if delta.usage:
                usage = dict(delta.usage)
            if delta.tool_calls:
                calls = delta.tool_calls
            if time.perf_counter() > deadline:
                raise too_slow()
    finally:
        stream.close()
    return Round("".join(parts), usage, calls, client.model)
