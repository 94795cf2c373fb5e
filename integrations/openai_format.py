"""OpenAI's wire shapes for chat completions: requests read leniently, responses and errors exact.

Pure functions (no database): what `/v1/chat/completions` sends is built here, so its shapes are
tested without a server. Citations travel in the extension field `citations` of the message (and
of the last streamed delta); clients that ignore it still get the answer with its `[S1]` markers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from chat.serializers import client_metadata_problem
from integrations.answers import Turn, citations_of

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
MAX_MESSAGES = 200


class RequestError(Exception):
    """A request OpenAI would refuse with 400; `param` names the field."""

    def __init__(self, message: str, *, param: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass
class CompletionRequest:
    model: str
    question: str
    history: list[Turn] = field(default_factory=list)
    stream: bool = False
    user: str = ""
    metadata: dict | None = None


def error_body(message: str, *, type: str = "invalid_request_error", code: str | None = None,
               param: str | None = None) -> dict:
    """OpenAI's error object."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _text(content, param: str) -> str:
    """A message's content: a string, or a list of parts of which only text parts are read."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict):
                raise RequestError("Each content part must be an object.", param=param)
            if part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    raise RequestError("A text part needs a string 'text'.", param=param)
                texts.append(part["text"])
            else:
                raise RequestError(f"Content parts of type '{part.get('type')}' are not supported; send text.",
                                   param=param)
        return "\n".join(texts)
    raise RequestError("'content' must be a string or a list of text parts.", param=param)


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate, which JSON allows and PostgreSQL does not
        return False
    return True


def parse_request(body: bytes) -> CompletionRequest:
    """Read a `POST /v1/chat/completions` body; raise RequestError for what OpenAI would refuse."""
    try:
        data = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise RequestError("The body is not valid JSON.") from None
    except RecursionError:
        raise RequestError("The body is nested too deeply.") from None
    if not isinstance(data, dict):
        raise RequestError("The body must be a JSON object.")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        raise RequestError("'model' is required: use 'ragsite'.", param="model")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty list.", param="messages")
    if len(messages) > MAX_MESSAGES:
        raise RequestError(f"At most {MAX_MESSAGES} messages are accepted.", param="messages")
    turns = []
    for i, message in enumerate(messages):
        param = f"messages.[{i}]"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise RequestError(f"Each message needs a 'role', one of {', '.join(ROLES)}.", param=param + ".role")
        text = _text(message.get("content"), param + ".content")
        if "\x00" in text or not _encodable(text):
            raise RequestError("Message content must be valid Unicode text without NUL characters.",
                               param=param + ".content")
        turns.append(Turn(message["role"], text))
    if turns[-1].role != "user" or not turns[-1].content.strip():
        raise RequestError("The last message must be the user's question (role 'user', non-empty content).",
                           param=f"messages.[{len(turns) - 1}]")
    stream = data.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise RequestError("'stream' must be true or false.", param="stream")
    n = data.get("n", 1)
    if n not in (1, None):
        raise RequestError("Only one choice is produced ('n' must be 1).", param="n")
    user = data.get("user") or ""
    if not isinstance(user, str):
        raise RequestError("'user' must be a string.", param="user")
    metadata = data.get("metadata")
    if metadata is not None and (problem := client_metadata_problem(metadata)):
        raise RequestError(problem, param="metadata")
    # System and tool turns are not the user's words: ragsite's own prompt frames the answer.
    history = [t for t in turns[:-1] if t.role in ("user", "assistant")]
    return CompletionRequest(model=model.strip(), question=turns[-1].content.strip(), history=history,
                             stream=bool(stream), user=user, metadata=metadata or None)


def usage_of(message: dict) -> dict:
    """OpenAI's usage from the answer's `llm_usage` (zeros for answers no model wrote)."""
    usage = (message.get("metadata") or {}).get("llm_usage") or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": int(usage.get("total_tokens") or prompt + completion)}


def completion(*, completion_id: str, created: int, model: str, message: dict, conversation_id: int) -> dict:
    """A `chat.completion` for a finished answer."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": message.get("content") or "", "refusal": None,
                        "citations": citations_of(message)},
            "logprobs": None,
            "finish_reason": "stop",
        }],
        "usage": usage_of(message),
        "system_fingerprint": None,
        "conversation_id": conversation_id,
    }


def chunk(*, completion_id: str, created: int, model: str, delta: dict | None = None,
          finish_reason: str | None = None, usage: dict | None = None, conversation_id: int | None = None) -> dict:
    """A `chat.completion.chunk`; the usage chunk has no choices (as OpenAI's `include_usage`)."""
    body = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
            "system_fingerprint": None,
            "choices": [] if usage is not None else [{"index": 0, "delta": delta or {}, "logprobs": None,
                                                      "finish_reason": finish_reason}]}
    if usage is not None:
        body["usage"] = usage
    if conversation_id is not None:
        body["conversation_id"] = conversation_id
    return body


def sse(data: dict | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()
