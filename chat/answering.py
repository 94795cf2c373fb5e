"""How one answer is produced: retrieval, then the model (streamed), an extractive answer, or an approved Q&A pair.

Pure of status bookkeeping (that is chat.orchestrator): :func:`produce` streams text through
`job.emit` and returns what was said and what it may cite. In agentic mode the model searches
itself (chat.agent); a question naming an attached document not indexed yet gets a plain
answer saying so (chat.waiting).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.conf import settings

from chat.citations import snippet_preview, segment_excerpt
from chat.extractive import extractive_answer
from chat.models import Message, MessageRole, MessageStatus
from chat.prompts import build_messages, build_plain_messages, resolve_token_counter, tag_segments
from chat.waiting import documents_waited_for, waiting_answer
from ragsite.errors import ApplicationError
from retrieval.embedding import chat_client_for
from retrieval.search import retrieve
from retrieval.selectors import retrieval_settings_get

HISTORY_MESSAGES = 20
ANSWER_RESERVE_TOKENS = 1024  # of a stated context window, kept for the answer
PROMPT_RESERVE_TOKENS = 800  # system prompt and framing
AGENTIC = "agentic"


class AnswerFailed(ApplicationError):
    code = "answer_failed"


@dataclass
class Outcome:
    mode: str  # "llm" | "extractive" | "approved_answer" | "plain" | "agentic" | "waiting"
    text: str
    tag_map: dict = field(default_factory=dict)
    json_mode: bool = False
    usage: dict = field(default_factory=dict)
    segments: list = field(default_factory=list)
    trace: dict | None = None
    extra: dict = field(default_factory=dict)  # more keys of the message's metadata


@dataclass
class Round:
    """One request to the chat server: the text it streamed, its usage as reported, its tool calls."""

    text: str
    usage: dict
    tool_calls: list | None = None
    model: str = ""


def context_sources(tag_map: dict) -> list[dict]:
    """What the `sources` event shows: each tag given to the model and where it comes from."""
    return [
        {"source_id": tag, "source_type": seg.get("source_type", "document"), "chunk_id": seg.get("chunk_id"),
         "qa_id": seg.get("qa_id"), "document_id": seg.get("document_id"), "document_name": seg.get("document_name"),
         "chunk_index": seg.get("chunk_index"), "page_number": seg.get("page_number"), "score": seg.get("score"),
         "preview": snippet_preview(segment_excerpt(seg))}
        for tag, seg in tag_map.items()
    ]


def chat_server(rs):
    """The default chat server if one is configured and switched on, else None (extractive answers)."""
    server = rs.default_chat_server
    if server is None or not server.is_active or not server.can("chat"):
        return None
    return server


def history_for(question: Message) -> list[dict]:
    """Earlier turns of the conversation (answered ones), oldest first."""
    rows = (Message.objects.filter(conversation_id=question.conversation_id, pk__lt=question.pk,
                                   role__in=[MessageRole.USER, MessageRole.ASSISTANT])
            .exclude(role=MessageRole.ASSISTANT, status__in=[MessageStatus.PENDING, MessageStatus.STREAMING,
                                                              MessageStatus.FAILED])
            .order_by("-id").values("role", "content")[:HISTORY_MESSAGES])
    return list(reversed(rows))


def produce(job) -> Outcome:
    """Answer `job.question`; stream through `job.emit(text)`; raise AnswerFailed/AiServerError on failure."""
    rs = retrieval_settings_get()
    server = chat_server(rs)
    question = job.question.content
    if not rs.rag_enabled:
        if server is None:
            raise AnswerFailed("Searching the documents is switched off and no chat server is configured, "
                               "so there is nothing to answer with.")
        messages = build_plain_messages(question=question, history=history_for(job.question),
                                        history_token_budget=settings.CHAT_HISTORY_TOKENS)
        job.mark("prompt")
        text, usage = _stream(job, server, messages, json_mode=False)
        return Outcome("plain", text, usage=usage)

    waited = documents_waited_for(job.conversation, question)
    if waited:
        text, documents = waiting_answer(waited)
        job.emit(text)
        return Outcome("waiting", text, usage=_no_model_usage("waiting"), extra={"waiting_for_documents": documents})
    if rs.chat_mode == AGENTIC:
        if server is not None and server.can("tools"):
            from chat.agent import answer_agentic  # chat.agent builds on this module's helpers

            return answer_agentic(job, server, rs)
        outcome = _from_context(job, rs, server)
        outcome.extra["agentic_fallback"] = (
            "Agentic search is on, but no chat server is configured, so the passages were quoted instead."
            if server is None else
            f"Agentic search is on, but the chat server '{server.name}' is not marked as able to call tools "
            "(capability “Tool calling”), so the retrieved passages were given in the prompt instead.")
        return outcome
    return _from_context(job, rs, server)


def _from_context(job, rs, server) -> Outcome:
    """Retrieve first, then answer from those passages (the model's, an extractive or an approved answer)."""
    question = job.question.content
    params = job.question.metadata or {}
    result = retrieve(job.conversation.owner, question, conversation=job.conversation,
                      category=params.get("category") or None, subcategory=params.get("subcategory") or None)
    job.mark("retrieval")
    segments = result.segments
    direct = settings.CHAT_QA_DIRECT_DISTANCE
    top = segments[0] if segments else None
    if (direct > 0 and top and top.get("source_type") == "qa" and top.get("distance") is not None
            and top["distance"] <= direct):
        tag_map = {"S1": top}
        job.sources(context_sources(tag_map))
        text = f"{top.get('answer') or segment_excerpt(top)} [S1]"
        job.emit(text)
        return Outcome("approved_answer", text, tag_map, usage=_no_model_usage("approved Q&A"), segments=segments,
                       trace=result.trace)
    if server is None:
        tagged = tag_segments(segments)
        tag_map = {t.tag: t.segment for t in tagged}
        job.sources(context_sources(tag_map))
        text = extractive_answer(question, tagged)
        job.mark("prompt")
        for i, paragraph in enumerate(text.split("\n\n")):
            job.emit(("\n\n" if i else "") + paragraph)
        return Outcome("extractive", text, tag_map, usage=_no_model_usage("extractive"), segments=segments,
                       trace=result.trace)

    json_mode = bool(server.capabilities.get("json_answers"))
    messages, tag_map = build_messages(
        question=question, segments=segments, history=history_for(job.question),
        history_token_budget=settings.CHAT_HISTORY_TOKENS, context_token_budget=context_budget(server),
        json_mode=json_mode,
    )
    job.sources(context_sources(tag_map))
    job.mark("prompt")
    text, usage = _stream(job, server, messages, json_mode=json_mode)
    return Outcome("llm", text, tag_map, json_mode=json_mode, usage=usage, segments=segments, trace=result.trace)


def context_budget(server) -> int:
    """Tokens of passages the server's prompt can take."""
    window = server.capabilities.get("context_window")
    if window:
        return max(500, int(window) - settings.CHAT_HISTORY_TOKENS - ANSWER_RESERVE_TOKENS - PROMPT_RESERVE_TOKENS)
    return settings.CHAT_CONTEXT_TOKENS


def model_usage(model: str, usages: list[dict]) -> dict:
    """`llm_usage` of an answer: the usage of its requests added up."""
    total = {"model": model, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for usage in usages:
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            total[key] += int(usage.get(key) or 0)
    if any(u.get("estimated") for u in usages):
        total["estimated"] = True
    return total


def _no_model_usage(model: str) -> dict:
    return {"model": model, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def _client(server):
    """The server's chat client, kept per process (retrieval.embedding): the rules are checked every time."""
    return chat_client_for(server, token_counter=resolve_token_counter())


def _stream(job, server, messages: list[dict], *, json_mode: bool) -> tuple[str, dict]:
    """Stream the model's answer through job.emit; (text, usage)."""
    answer = stream_round(job, server, messages, json_mode=json_mode)
    if not answer.text.strip():
        raise AnswerFailed(f"The chat server '{server.name}' returned an empty answer.")
    return answer.text, model_usage(answer.model, [answer.usage])


def stream_round(job, server, messages: list[dict], *, json_mode: bool = False, tools: list | None = None,
                 separator: str = "") -> Round:
    """One request; its text streams through job.emit (after `separator`, if any comes); stops at the time limit."""
    client = _client(server)
    deadline = job.started + settings.CHAT_ANSWER_TIME_LIMIT
    usage: dict = {}
    calls = None
    parts: list[str] = []
    kwargs = {"max_tokens": settings.CHAT_MAX_ANSWER_TOKENS}
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
                raise AnswerFailed(f"The answer took longer than {settings.CHAT_ANSWER_TIME_LIMIT} s and was stopped.")
    finally:
        stream.close()
    return Round("".join(parts), usage, calls, client.model)
