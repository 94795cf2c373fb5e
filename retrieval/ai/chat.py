"""Chat clients: OpenAI-compatible ``/v1/chat/completions`` and Ollama ``/api/chat``.

``stream()`` yields :class:`ChatDelta` objects: one per text piece as it
arrives, then exactly one **final** delta with ``text == ""``, ``usage``,
``finish_reason`` and (if the model called tools) the complete ``tool_calls``
in OpenAI's shape ``[{"id", "type": "function", "function": {"name",
"arguments": "<json string>"}}]``.

Usage: taken from the server when it reports it (OpenAI ``stream_options:
{"include_usage": true}``, Ollama ``prompt_eval_count``/``eval_count``).
Otherwise it is counted locally with the client's ``token_counter`` – a
callable ``str -> int`` the caller may inject (e.g. a tiktoken encoder);
the default :func:`estimate_tokens` is a rough ``len(text) // 4 + 1``.
Counted usage carries ``"estimated": True``.

Failures (all :class:`AiServerError`, message ready for users):

* HTTP errors and connection problems *before the stream starts* are retried
  like every other request (see :mod:`retrieval.ai.http`);
* once the stream has started nothing is retried (that could duplicate text):
  no data for ``cfg.read_timeout`` seconds → transient "stopped sending data
  mid-answer"; a dropped connection or a stream that ends without its final
  marker → transient; a malformed chunk → :class:`BadResponse`. The text
  received so far is attached to the exception as ``partial_text``.
"""
from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, runtime_checkable

import httpx

from .base import AiServerError, BadResponse, ServerConfig, require_base_url, seconds_words, server_label
from .http import (
    HttpClientOwner,
    bad_response,
    parse_json,
    request_with_retry,
    transport_error,
    truncate_text,
)

WHAT = "chat"

TokenCounter = Callable[[str], int]


@dataclass
class ChatDelta:
    """One streamed piece. The last delta of a stream has usage/finish_reason set."""

    text: str = ""
    usage: dict | None = None
    tool_calls: list | None = None
    finish_reason: str | None = None


@dataclass
class ChatResult:
    """A complete (non-streamed, or collected) answer."""

    text: str = ""
    usage: dict | None = None
    tool_calls: list | None = None
    finish_reason: str | None = None


@runtime_checkable
class ChatClient(Protocol):
    model: str

    def stream(self, messages: list[dict], *, tools: list | None = None,
               response_format: dict | None = None, max_tokens: int | None = None,
               temperature: float | None = None) -> Iterator[ChatDelta]: ...

    def complete(self, messages: list[dict], *, tools: list | None = None,
                 response_format: dict | None = None, max_tokens: int | None = None,
                 temperature: float | None = None) -> ChatResult: ...


# ---------------------------------------------------------------- token counting

def estimate_tokens(text: str) -> int:
    """Rough token count (~4 characters per token); 0 for empty text."""
    if not text:
        return 0
    return len(text) // 4 + 1


def message_text(message: dict) -> str:
    """All text of one chat message (string or list-of-parts content, tool calls)."""
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for p in content:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
            elif isinstance(p, str):
                parts.append(p)
    for call in message.get("tool_calls") or []:
        fn = (call or {}).get("function") or {}
        args = fn.get("arguments")
        parts.append(str(fn.get("name") or ""))
        parts.append(args if isinstance(args, str) else jsonlib.dumps(args or {}))
    return "\n".join(parts)


def count_usage(messages: Iterable[dict], completion: str, counter: TokenCounter,
                tool_calls: list | None = None) -> dict:
    """Locally counted usage; per-message overhead of 4 tokens like OpenAI's formats."""
    prompt = sum(counter(message_text(m)) + 4 for m in messages) + 2
    completion_tokens = counter(completion)
    for call in tool_calls or []:
        completion_tokens += counter(message_text({"tool_calls": [call]}))
    return {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens, "estimated": True}


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def normalize_usage(raw: Any) -> dict | None:
    """Server usage → ``{"prompt_tokens", "completion_tokens", "total_tokens"}`` or None."""
    if not isinstance(raw, dict):
        return None
    p = _int_or_none(raw.get("prompt_tokens"))
    c = _int_or_none(raw.get("completion_tokens"))
    if p is None and c is None:
        return None
    t = _int_or_none(raw.get("total_tokens"))
    p = p or 0
    c = c or 0
    return {"prompt_tokens": p, "completion_tokens": c,
            "total_tokens": t if t is not None else p + c}


# ---------------------------------------------------------------- tool calls

class ToolCallAccumulator:
    """Merges OpenAI streamed ``tool_calls`` deltas into complete calls."""

    def __init__(self) -> None:
        self._calls: dict[int, dict] = {}

    def add(self, deltas: Any) -> None:
        if not isinstance(deltas, list):
            return
        for pos, d in enumerate(deltas):
            if not isinstance(d, dict):
                continue
            idx = d.get("index")
            if not isinstance(idx, int):
                idx = pos
            call = self._calls.setdefault(
                idx, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            if d.get("id"):
                call["id"] = d["id"]
            if d.get("type"):
                call["type"] = d["type"]
            fn = d.get("function") or {}
            name = fn.get("name")
            if name:
                cur = call["function"]["name"]
                call["function"]["name"] = name if (not cur or cur == name) else cur + name
            args = fn.get("arguments")
            if args is not None:
                if not isinstance(args, str):
                    args = jsonlib.dumps(args, ensure_ascii=False)
                call["function"]["arguments"] += args

    def add_complete(self, call: dict) -> None:
        """Add one already-complete call (Ollama shape or OpenAI shape)."""
        idx = len(self._calls)
        self._calls[idx] = openai_tool_call(call, idx)

    def result(self) -> list | None:
        if not self._calls:
            return None
        out = []
        for idx in sorted(self._calls):
            call = self._calls[idx]
            if not call.get("id"):
                call["id"] = f"call_{idx}"
            out.append(call)
        return out


def openai_tool_call(call: dict, idx: int) -> dict:
    fn = (call or {}).get("function") or {}
    args = fn.get("arguments", "")
    if not isinstance(args, str):
        args = jsonlib.dumps(args, ensure_ascii=False)
    return {"id": call.get("id") or f"call_{idx}", "type": call.get("type") or "function",
            "function": {"name": fn.get("name") or "", "arguments": args}}


# ---------------------------------------------------------------- stream helpers

class _Stream:
    """Iterates the lines of an open streaming response, mapping failures to errors."""

    def __init__(self, resp: httpx.Response, cfg: ServerConfig, url: str):
        self.resp = resp
        self.cfg = cfg
        self.url = url
        self.text_parts: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def error(self, err: AiServerError) -> AiServerError:
        err.partial_text = self.text
        return err

    def lines(self) -> Iterator[str]:
        label = server_label(self.cfg, WHAT)
        try:
            for line in self.resp.iter_lines():
                yield line
        except httpx.ReadTimeout:
            if self.text_parts:
                msg = (f"{label} stopped sending data mid-answer "
                       f"(no data for {seconds_words(self.cfg.read_timeout)}).")
            else:
                msg = f"{label} did not answer within {seconds_words(self.cfg.read_timeout)}."
            raise self.error(AiServerError(msg, transient=True)) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            if self.text_parts:
                err = AiServerError(f"{label} closed the connection mid-answer.", transient=True)
            else:
                err = transport_error(exc, self.cfg, WHAT, self.url)
            raise self.error(err) from None
        except httpx.HTTPError as exc:
            raise self.error(transport_error(exc, self.cfg, WHAT, self.url)) from None

    def ended_early(self) -> AiServerError:
        label = server_label(self.cfg, WHAT)
        if self.text_parts:
            msg = (f"{label} stopped sending data mid-answer "
                   f"(the connection ended before the answer was complete).")
        else:
            msg = f"{label} ended the answer stream before sending anything."
        return self.error(AiServerError(msg, transient=True))


def _error_message(obj: Any) -> str | None:
    if not isinstance(obj, dict) or "error" not in obj or not obj["error"]:
        return None
    err = obj["error"]
    if isinstance(err, dict):
        err = err.get("message") or jsonlib.dumps(err, ensure_ascii=False)
    return truncate_text(str(err))


# ---------------------------------------------------------------- OpenAI-compatible

class OpenAIChatClient(HttpClientOwner):
    """``POST {base}/v1/chat/completions`` with SSE streaming."""

    def __init__(self, cfg: ServerConfig, *, token_counter: TokenCounter | None = None):
        self.cfg = cfg
        self.model = cfg.chat_model
        self.token_counter: TokenCounter = token_counter or estimate_tokens
        self.url = require_base_url(cfg, WHAT) + "/v1/chat/completions"

    def _body(self, messages, *, stream, tools=None, response_format=None, max_tokens=None,
              temperature=None) -> dict:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = tools
        if response_format:
            body["response_format"] = response_format
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if temperature is not None:
            body["temperature"] = float(temperature)
        return body

    def stream(self, messages: list[dict], *, tools: list | None = None,
               response_format: dict | None = None, max_tokens: int | None = None,
               temperature: float | None = None) -> Iterator[ChatDelta]:
        body = self._body(messages, stream=True, tools=tools, response_format=response_format,
                          max_tokens=max_tokens, temperature=temperature)
        resp = request_with_retry(self.http, "POST", self.url, json=body, cfg=self.cfg,
                                  what=WHAT, stream=True)
        try:
            ctype = resp.headers.get("content-type", "")
            if "application/json" in ctype:
                # the server ignored "stream": true – treat it as a complete answer
                try:
                    resp.read()
                except httpx.HTTPError as exc:
                    raise transport_error(exc, self.cfg, WHAT, self.url) from None
                result = self._parse_completion(parse_json(resp, self.cfg, WHAT), messages)
                if result.text:
                    yield ChatDelta(text=result.text)
                yield ChatDelta(usage=result.usage, tool_calls=result.tool_calls,
                                finish_reason=result.finish_reason)
                return
            yield from self._read_sse(resp, messages)
        finally:
            resp.close()

    def _read_sse(self, resp: httpx.Response, messages: list[dict]) -> Iterator[ChatDelta]:
        st = _Stream(resp, self.cfg, self.url)
        tools = ToolCallAccumulator()
        usage = None
        finish = None
        done = False
        label = server_label(self.cfg, WHAT)
        for line in st.lines():
            line = line.rstrip("\r")
            if not line or line.startswith(":"):
                continue
            if line.startswith("data:"):
                payload = line[5:]
                if payload.startswith(" "):
                    payload = payload[1:]
            elif line.startswith("{"):
                payload = line  # lenient: bare JSON lines
            else:
                continue  # "event:", "id:", "retry:" and unknown SSE fields
            if payload.strip() == "[DONE]":
                done = True
                break
            try:
                chunk = jsonlib.loads(payload)
            except ValueError:
                raise st.error(BadResponse(
                    f"{label} returned an invalid response: a streamed chunk is not JSON "
                    f"({truncate_text(payload, 80)!r}).")) from None
            if not isinstance(chunk, dict):
                raise st.error(bad_response(self.cfg, WHAT, "a streamed chunk is not an object."))
            emsg = _error_message(chunk)
            if emsg:
                raise st.error(AiServerError(f"{label} reported an error mid-answer: {emsg}",
                                             transient=True))
            if chunk.get("usage"):
                usage = normalize_usage(chunk["usage"]) or usage
            choices = chunk.get("choices") or []
            if not isinstance(choices, list):
                raise st.error(bad_response(self.cfg, WHAT, "'choices' is not a list."))
            for choice in choices:
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                if not isinstance(delta, dict):
                    raise st.error(bad_response(self.cfg, WHAT, "'delta' is not an object."))
                content = delta.get("content")
                if content:
                    if not isinstance(content, str):
                        raise st.error(bad_response(self.cfg, WHAT, "'content' is not text."))
                    st.text_parts.append(content)
                    yield ChatDelta(text=content)
                if delta.get("tool_calls"):
                    tools.add(delta["tool_calls"])
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
        if not done and finish is None:
            raise st.ended_early()
        calls = tools.result()
        if usage is None:
            usage = count_usage(messages, st.text, self.token_counter, calls)
        yield ChatDelta(usage=usage, tool_calls=calls,
                        finish_reason=finish or ("tool_calls" if calls else "stop"))

    def _parse_completion(self, data: Any, messages: list[dict]) -> ChatResult:
        emsg = _error_message(data)
        if emsg:
            raise AiServerError(f"{server_label(self.cfg, WHAT)} reported an error: {emsg}",
                                transient=True)
        try:
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (KeyError, IndexError, TypeError, AttributeError):
            raise bad_response(self.cfg, WHAT, "no 'choices[0].message' in the answer.") from None
        text = message.get("content") or ""
        if not isinstance(text, str):
            raise bad_response(self.cfg, WHAT, "'content' is not text.")
        calls = None
        if message.get("tool_calls"):
            calls = [openai_tool_call(c, i) for i, c in enumerate(message["tool_calls"])]
        usage = normalize_usage(data.get("usage")) or count_usage(messages, text,
                                                                  self.token_counter, calls)
        finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
        return ChatResult(text=text, usage=usage, tool_calls=calls, finish_reason=finish)

    def complete(self, messages: list[dict], *, tools: list | None = None,
                 response_format: dict | None = None, max_tokens: int | None = None,
                 temperature: float | None = None) -> ChatResult:
        body = self._body(messages, stream=False, tools=tools, response_format=response_format,
                          max_tokens=max_tokens, temperature=temperature)
        resp = request_with_retry(self.http, "POST", self.url, json=body, cfg=self.cfg, what=WHAT)
        return self._parse_completion(parse_json(resp, self.cfg, WHAT), messages)


# ---------------------------------------------------------------- Ollama

def _ollama_messages(messages: list[dict]) -> list[dict]:
    """OpenAI-style messages → Ollama's (tool-call arguments as objects, text content)."""
    out = []
    for m in messages:
        m = dict(m)
        content = m.get("content")
        if isinstance(content, list):
            m["content"] = "\n".join(p.get("text", "") for p in content
                                     if isinstance(p, dict) and p.get("type", "text") == "text")
        elif content is None:
            m["content"] = ""
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict((c or {}).get("function") or {})
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        fn["arguments"] = jsonlib.loads(args) if args.strip() else {}
                    except ValueError:
                        fn["arguments"] = {}
                calls.append({"function": fn})
            m["tool_calls"] = calls
        out.append(m)
    return out


class OllamaChatClient(HttpClientOwner):
    """``POST {base}/api/chat`` with newline-delimited JSON streaming."""

    def __init__(self, cfg: ServerConfig, *, token_counter: TokenCounter | None = None):
        self.cfg = cfg
        self.model = cfg.chat_model
        self.token_counter: TokenCounter = token_counter or estimate_tokens
        self.url = require_base_url(cfg, WHAT, strip=("/v1", "/api")) + "/api/chat"

    def _body(self, messages, *, stream, tools=None, response_format=None, max_tokens=None,
              temperature=None) -> dict:
        body: dict[str, Any] = {"model": self.model, "messages": _ollama_messages(messages),
                                "stream": stream}
        if tools:
            body["tools"] = tools
        if response_format:
            rtype = response_format.get("type")
            if rtype == "json_schema":
                schema = (response_format.get("json_schema") or {}).get("schema")
                body["format"] = schema or "json"
            elif rtype == "json_object":
                body["format"] = "json"
        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["num_predict"] = int(max_tokens)
        if temperature is not None:
            options["temperature"] = float(temperature)
        if options:
            body["options"] = options
        return body

    def _usage(self, obj: dict, messages: list[dict], text: str, calls: list | None) -> dict:
        p = _int_or_none(obj.get("prompt_eval_count"))
        c = _int_or_none(obj.get("eval_count"))
        if p is not None and c is not None:
            return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        est = count_usage(messages, text, self.token_counter, calls)
        # Ollama omits prompt_eval_count when the prompt was cached: fill the gap
        if p is not None:
            est["prompt_tokens"] = p
        if c is not None:
            est["completion_tokens"] = c
        est["total_tokens"] = est["prompt_tokens"] + est["completion_tokens"]
        return est

    def stream(self, messages: list[dict], *, tools: list | None = None,
               response_format: dict | None = None, max_tokens: int | None = None,
               temperature: float | None = None) -> Iterator[ChatDelta]:
        body = self._body(messages, stream=True, tools=tools, response_format=response_format,
                          max_tokens=max_tokens, temperature=temperature)
        resp = request_with_retry(self.http, "POST", self.url, json=body, cfg=self.cfg,
                                  what=WHAT, stream=True)
        label = server_label(self.cfg, WHAT)
        try:
            st = _Stream(resp, self.cfg, self.url)
            calls = ToolCallAccumulator()
            for line in st.lines():
                if not line.strip():
                    continue
                try:
                    obj = jsonlib.loads(line)
                except ValueError:
                    raise st.error(BadResponse(
                        f"{label} returned an invalid response: a streamed line is not JSON "
                        f"({truncate_text(line, 80)!r}).")) from None
                if not isinstance(obj, dict):
                    raise st.error(bad_response(self.cfg, WHAT, "a streamed line is not an object."))
                emsg = _error_message(obj)
                if emsg:
                    raise st.error(AiServerError(f"{label} reported an error: {emsg}",
                                                 transient=True))
                msg = obj.get("message") or {}
                if not isinstance(msg, dict):
                    raise st.error(bad_response(self.cfg, WHAT, "'message' is not an object."))
                content = msg.get("content")
                if content:
                    if not isinstance(content, str):
                        raise st.error(bad_response(self.cfg, WHAT, "'content' is not text."))
                    st.text_parts.append(content)
                    yield ChatDelta(text=content)
                for call in msg.get("tool_calls") or []:
                    calls.add_complete(call)
                if obj.get("done"):
                    tc = calls.result()
                    finish = obj.get("done_reason") or "stop"
                    if tc and finish == "stop":
                        finish = "tool_calls"
                    yield ChatDelta(usage=self._usage(obj, messages, st.text, tc),
                                    tool_calls=tc, finish_reason=finish)
                    return
            raise st.ended_early()
        finally:
            resp.close()

    def complete(self, messages: list[dict], *, tools: list | None = None,
                 response_format: dict | None = None, max_tokens: int | None = None,
                 temperature: float | None = None) -> ChatResult:
        body = self._body(messages, stream=False, tools=tools, response_format=response_format,
                          max_tokens=max_tokens, temperature=temperature)
        resp = request_with_retry(self.http, "POST", self.url, json=body, cfg=self.cfg, what=WHAT)
        data = parse_json(resp, self.cfg, WHAT)
        emsg = _error_message(data)
        if emsg:
            raise AiServerError(f"{server_label(self.cfg, WHAT)} reported an error: {emsg}",
                                transient=True)
        msg = data.get("message") if isinstance(data, dict) else None
        if not isinstance(msg, dict):
            raise bad_response(self.cfg, WHAT, "no 'message' in the answer.")
        text = msg.get("content") or ""
        if not isinstance(text, str):
            raise bad_response(self.cfg, WHAT, "'content' is not text.")
        acc = ToolCallAccumulator()
        for call in msg.get("tool_calls") or []:
            acc.add_complete(call)
        calls = acc.result()
        finish = data.get("done_reason") or "stop"
        if calls and finish == "stop":
            finish = "tool_calls"
        return ChatResult(text=text, usage=self._usage(data, messages, text, calls),
                          tool_calls=calls, finish_reason=finish)


# ---------------------------------------------------------------- helpers

def collect(deltas: Iterable[ChatDelta]) -> ChatResult:
    """Drain a ``stream()`` into a :class:`ChatResult`."""
    parts: list[str] = []
    result = ChatResult()
    for d in deltas:
        if d.text:
            parts.append(d.text)
        if d.usage is not None:
            result.usage = d.usage
        if d.tool_calls is not None:
            result.tool_calls = d.tool_calls
        if d.finish_reason is not None:
            result.finish_reason = d.finish_reason
    result.text = "".join(parts)
    return result


def chat_client(cfg: ServerConfig, *, token_counter: TokenCounter | None = None) -> ChatClient:
    """The chat client for ``cfg.kind`` ("openai" or "ollama").

    ``token_counter`` (``str -> int``) is used only when the server does not
    report usage; default :func:`estimate_tokens`.
    """
    kind = (cfg.kind or "").lower()
    if kind == "openai":
        return OpenAIChatClient(cfg, token_counter=token_counter)
    if kind == "ollama":
        return OllamaChatClient(cfg, token_counter=token_counter)
    if kind == "builtin":
        raise AiServerError(f"{server_label(cfg, WHAT)} is the built-in model, which can only "
                            f"embed text; choose an OpenAI-compatible or Ollama server for chat.",
                            transient=False)
    raise AiServerError(f"{server_label(cfg, WHAT)} has an unknown kind {cfg.kind!r} "
                        f"(expected openai or ollama).", transient=False)
