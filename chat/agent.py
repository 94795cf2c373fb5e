"""Agentic answers: the model searches the conversation's documents with a tool, then answers.

Instead of passages fetched before the prompt, the model gets one tool, `search_documents`, which
runs the same `retrieve()` as every other answer, within the same scope (the conversation's
attached documents, else all of the user's own) and for the same user. The loop:

    messages + tool → stream (text goes to the user as it comes) → tool calls run, results
    appended as `tool` messages → again … until the model answers without calling the tool.

After `max_searches` searches the next request carries no tool, only a note that the budget is
used up: the model must answer. Calls beyond the budget in one response are not run (each gets a
tool message saying so, as every call needs an answer). Rounds are capped too, for a model that
never stops, and the answer's time limit holds throughout.

Every distinct passage a search returned keeps one tag (S1, S2, … across searches); the tag map
handed to the citation parser is their union, so a citation maps only to a passage some search
returned, and a made-up tag is dropped and counted as in every other mode.
"""
from __future__ import annotations

import json
import re
import time

from django.conf import settings

from chat.generation import (
    Outcome,
    context_budget,
    context_sources,
    empty_answer,
    history_for,
    model_usage,
    stream_round,
    too_slow,
)
from chat.citations import segment_excerpt
from chat.followups import search_query
from chat.agent_prompts import (
    BUDGET_USED_UP,
    SEARCH_TOOL_NAME,
    build_agent_messages,
    render_search_results,
    search_tool,
)
from chat.prompts import select_segments
from chat.selectors import conversation_documents, conversation_scope
from retrieval.contracts import Segment
from retrieval.search import retrieve
from core.errors import QuotaExceeded
from usage.quotas import ModelCall, model_call_check

EXTRA_ROUNDS = 2  # requests besides one per search: a first look, and the answer after the last search
MIN_RESULT_TOKENS = 500  # one search's results never get less room than this
MAX_QUERY_CHARS = 1000
SCOPE_NAMES = 20  # attached documents named in the system prompt
ARGUMENTS_KEPT = 500  # characters of a rejected call's arguments kept in the trace
_QUERY_KEYS = ("query", "q", "search", "search_query", "text", "question", "keywords")
_QUERY_RE = re.compile(r'"(?:query|q|search_query|search)"\s*:\s*"((?:[^"\\]|\\.)*)', re.IGNORECASE)
_FENCE_RE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
TRACE_KEYS = ("scope", "answered_by_tier", "tiers", "fallbacks", "timings_ms")


def parse_query(arguments) -> tuple[str | None, str | None]:
    """The search words of a tool call's arguments, leniently: (query, None) or (None, what is wrong).

    Accepts {"query": …} and a few other key names, a bare JSON string, arguments encoded twice,
    a code fence around them and JSON cut off after the query.
    """
    value = arguments
    for attempt in range(2):  # some models encode the arguments twice
        if not isinstance(value, str):
            break
        text = _FENCE_RE.sub("", value.strip())
        if attempt and not text.startswith(("{", '"')):
            break  # a JSON string that holds the query itself
        if not text:
            value = None
            break
        try:
            value = json.loads(text)
        except ValueError:
            found = _QUERY_RE.search(text)
            if found is None:
                return None, ('The arguments are not valid JSON. Call search_documents with '
                              '{"query": "the words to look for"}.')
            try:
                value = json.loads(f'"{found.group(1)}"')
            except ValueError:
                value = found.group(1)
            break
    if isinstance(value, dict):
        strings = [v for v in value.values() if isinstance(v, str) and v.strip()]
        value = next((value[k] for k in _QUERY_KEYS if isinstance(value.get(k), str) and value[k].strip()),
                     strings[0] if len(strings) == 1 else None)
    query = " ".join(value.split())[:MAX_QUERY_CHARS] if isinstance(value, str) else ""
    if not query:
        return None, 'The search needs words to look for: call search_documents with {"query": "…"}.'
    return query, None


def _key(segment: dict) -> tuple:
    if segment.get("source_type") == "qa":
        return ("qa", segment.get("qa_id"))
    return ("chunk", segment.get("chunk_id"))


class Sources:
    """Passages found across the searches: each distinct one kept once, tagged once when given to the model."""

    def __init__(self) -> None:
        self.tag_map: dict[str, Segment] = {}
        self.segments: list[dict] = []  # every distinct passage retrieved, first seen first
        self._tags: dict[tuple, str] = {}
        self._seen: dict[tuple, dict] = {}

    def canonical(self, segment: dict) -> dict:
        """The first dict seen for this passage (the tag map and retrieved segments share it)."""
        key = _key(segment)
        if key not in self._seen:
            self._seen[key] = segment
            self.segments.append(segment)
        return self._seen[key]

    def tag_of(self, segment: dict) -> str | None:
        return self._tags.get(_key(segment))

    def tag(self, segment: dict) -> str:
        key = _key(segment)
        if key not in self._tags:
            self._tags[key] = f"S{len(self._tags) + 1}"
            self.tag_map[self._tags[key]] = self._seen[key]
        return self._tags[key]


class Agent:
    """One agentic answer: the conversation with the model, its searches and what they returned."""

    def __init__(self, job, server, rs):
        self.job = job
        self.server = server
        self.max_searches = max(1, int(rs.agent_max_searches or 1))
        self.max_rounds = self.max_searches + EXTRA_ROUNDS
        self.result_budget = max(MIN_RESULT_TOKENS, context_budget(server) // self.max_searches)
        params = job.question.metadata or {}
        self.category = params.get("category") or None
        self.subcategory = params.get("subcategory") or None
        self.deadline = job.started + settings.CHAT_ANSWER_TIME_LIMIT
        self.sources = Sources()
        # The model writes its own queries from the conversation; should it search a follow-up word for
        # word ("And for part-timers?"), the standalone query (the heuristic: no extra request) is searched.
        self.rewrite = search_query(job.question, None)
        self.searches: list[dict] = []
        self.rejected: list[dict] = []
        self.traces: list[dict] = []
        self.usages: list[dict] = []
        self.texts: list[str] = []
        self.rounds = 0
        self.model = ""
        self.quota_reached = False  # the owner's tokens for the month ran out during this answer

    def run(self) -> Outcome:
        job = self.job
        messages = build_agent_messages(
            question=job.question.content, max_searches=self.max_searches, scope=self._scope_words(),
            history=history_for(job.question), history_token_budget=settings.CHAT_HISTORY_TOKENS)
        tools = [search_tool(self.max_searches)]
        job.mark("prompt")
        while True:
            self.rounds += 1
            offer = len(self.searches) < self.max_searches and self.rounds < self.max_rounds and not self.quota_reached
            if not offer:
                messages.append({"role": "user", "content": BUDGET_USED_UP.format(
                    used=len(self.searches), max=self.max_searches)})
            self._check_time()
            answer = stream_round(job, self.server, messages, tools=tools if offer else None,
                                  separator="\n\n" if self.texts else "")
            self.usages.append(answer.usage)
            self.model = answer.model
            if answer.text:
                self.texts.append(answer.text)  # streamed as it came, after a blank line if an earlier round wrote
            if not offer or not answer.tool_calls:
                break  # without the tool, calls a model still makes are not run
            messages.append({"role": "assistant", "content": answer.text, "tool_calls": answer.tool_calls})
            for call in answer.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.get("id") or "",
                                 "content": self._call(call)})
        text = "\n\n".join(self.texts)
        if not text.strip():
            raise empty_answer(self.server.name, after_searches=bool(self.searches))
        job.timings["searches_ms"] = round(sum(s["timings_ms"]["tool"] for s in self.searches), 1)
        return Outcome(
            "agent", text, self.sources.tag_map, usage={**model_usage(self.model, self.usages, server_id=self.server.pk),
                                                           "requests": self.rounds},
            segments=self.sources.segments, trace={**merged_trace(self.traces, self.searches),
                                                   "query_rewrite": self.rewrite.trace()},
            extra={"agent": {"max_searches": self.max_searches, "searches": self.searches,
                             "rejected_calls": self.rejected, "rounds": self.rounds,
                             "budget_exhausted": len(self.searches) >= self.max_searches,
                             "quota_reached": self.quota_reached,
                             "rounds_exhausted": self.rounds >= self.max_rounds}})

    def _call(self, call: dict) -> str:
        """Run one tool call; the tool message's content (results or an error the model can act on)."""
        function = call.get("function") or {}
        name = function.get("name") or ""
        arguments = function.get("arguments")
        if name != SEARCH_TOOL_NAME:
            return self._reject(name, arguments, f"There is no tool '{name}'; the only one is {SEARCH_TOOL_NAME}.")
        if len(self.searches) >= self.max_searches:
            return self._reject(name, arguments, f"The search budget is used up ({self.max_searches} searches): "
                                                 "answer from the results you have.", reason="budget")
        query, error = parse_query(arguments)
        if error:
            return self._reject(name, arguments, error)
        if not self._quota_allows():
            return self._reject(name, arguments, "The user's chat model quota is used up: no more searches. Answer "
                                                 "from the results you have.", reason="quota")
        self._check_time()
        return self._search(query)

    def _quota_allows(self) -> bool:
        """Each search leads to one more model request: held to the owner's tokens for the month, this
        answer's own requests so far included (usage.quotas, the one check of every model call)."""
        if self.quota_reached:
            return False
        spent = sum(int(u.get("prompt_tokens") or 0) + int(u.get("completion_tokens") or 0) for u in self.usages)
        try:
            model_call_check(user=self.job.conversation.owner, call=ModelCall.AGENT_SEARCH, spent_tokens=spent)
        except QuotaExceeded:
            self.quota_reached = True
            return False
        return True

    def _reject(self, name: str, arguments, error: str, *, reason: str = "invalid") -> str:
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
        self.rejected.append({"tool": name, "arguments": (shown or "")[:ARGUMENTS_KEPT], "reason": reason,
                              "error": error})
        return json.dumps({"error": error}, ensure_ascii=False)

    def _search(self, query: str) -> str:
        started = time.perf_counter()
        job = self.job
        user = job.conversation.owner
        searched = query
        if self.rewrite.method != "none" and " ".join(query.lower().split()) == " ".join(
                self.rewrite.original.lower().split()):
            searched = self.rewrite.query
        result = retrieve(user, searched, conversation_scope(user, job.conversation), category=self.category,
                          subcategory=self.subcategory)
        found = [(seg, self.sources.canonical(seg)) for seg in result.segments]
        new = [seg for seg, canonical in found if self.sources.tag_of(canonical) is None]
        # The passages not seen before share the prompt's room with the other searches' (by rank).
        fitting = {_key(s): segment_excerpt(s) for s in select_segments(new, self.result_budget)}
        entries: list[tuple[str, dict, str | None]] = []
        for seg, canonical in found:
            tag = self.sources.tag_of(canonical)
            if tag is not None:
                entries.append((tag, seg, None))
            elif _key(seg) in fitting:
                entries.append((self.sources.tag(canonical), seg, fitting[_key(seg)]))
        content = render_search_results(query, entries)
        self.traces.append(result.trace)
        self.searches.append({
            "query": query,
            **({"searched_as": searched} if searched != query else {}),  # the follow-up made standalone
            "source_ids": [tag for tag, _, _ in entries],
            "chunk_ids": [seg["chunk_id"] for _, seg, _ in entries if seg.get("chunk_id") is not None],
            "new_source_ids": [tag for tag, _, text in entries if text is not None],
            "found": len(result.segments),
            "left_out": len(new) - len(fitting),  # no room left in the prompt for them
            "timings_ms": {"retrieval": result.trace.get("timings_ms", {}).get("total"),
                           "tool": round((time.perf_counter() - started) * 1000, 1)},
            "trace": {k: result.trace.get(k) for k in TRACE_KEYS},
        })
        job.sources(context_sources(self.sources.tag_map))
        return content

    def _scope_words(self) -> str:
        documents = list(conversation_documents(conversation=self.job.conversation)[:SCOPE_NAMES + 1])
        if not documents:
            return "all of the user's own documents"
        names = [d.original_filename + ("" if d.chunk_count else " (not indexed yet, cannot be found)")
                 for d in documents[:SCOPE_NAMES]]
        more = ", and more" if len(documents) > SCOPE_NAMES else ""
        return f"only the documents attached to this conversation: {'; '.join(names)}{more}"

    def _check_time(self) -> None:
        if time.perf_counter() > self.deadline:
            raise too_slow()


def merged_trace(traces: list[dict], searches: list[dict]) -> dict:
    """One retrieval trace for the whole answer: the scope of the first search, the others' steps added."""
    merged: dict = {"agentic": True, "searches": len(traces), "queries": [s["query"] for s in searches]}
    if not traces:
        return merged
    first = traces[0]
    for key in ("scope", "conversation_id", "attached_document_ids", "not_indexed_document_ids", "category",
                "subcategory", "arms"):
        merged[key] = first.get(key)
    merged["tiers"] = [tier for trace in traces for tier in trace.get("tiers", [])]
    merged["fallbacks"] = list(dict.fromkeys(f for trace in traces for f in trace.get("fallbacks", [])))
    tiers = [t["answered_by_tier"] for t in traces if t.get("answered_by_tier") is not None]
    merged["answered_by_tier"] = min(tiers) if tiers else None
    timings: dict = {}
    for trace in traces:
        for key, value in (trace.get("timings_ms") or {}).items():
            timings[key] = round(timings.get(key, 0) + (value or 0), 2)
    merged["timings_ms"] = timings
    return merged


def answer_agentic(job, server, rs) -> Outcome:
    """Answer `job.question` with the model searching through the tool (the server can call tools)."""
    return Agent(job, server, rs).run()
