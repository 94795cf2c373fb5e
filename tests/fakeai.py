"""A real, local fake AI server for tests (stdlib only, plus numpy).

    with FakeAIServer(dim=384) as ai:
        ai.script_chat("Hello there.", {"content": "Second answer", "usage": None})
        ai.fail_next("/v1/embeddings", {"status": 500}, times=2)
        cfg = ai.config()                      # a retrieval.ai.ServerConfig pointing here
        ...
        assert ai.requests[-1]["path"] == "/v1/chat/completions"

It listens on 127.0.0.1 on a free port (``ai.url``), speaks HTTP/1.1 with
keep-alive and chunked streaming, and serves:

OpenAI-compatible
  ``GET /v1/models``, ``POST /v1/embeddings``, ``POST /v1/chat/completions``
  (SSE when ``"stream": true``; a final ``usage`` chunk when
  ``stream_options.include_usage``; ``data: [DONE]``), ``POST /v1/rerank``
  (Jina/Cohere shape).
Ollama
  ``POST /api/embed``, ``POST /api/chat`` (NDJSON stream unless
  ``"stream": false``), ``GET /api/tags``.
TEI
  ``POST /embed_all``, ``POST /tokenize``, ``POST /rerank``, ``GET /info``.
Misc
  ``GET /health``.

Embeddings are deterministic and *meaningful*: a hashed bag of lowercased
words (``\\w+``), each word adding ±1 to three sha256-chosen buckets, then
L2-normalised – texts that share words are closer. Empty text (no words) is
the fixed unit vector e0. The same text gives the same vector in every process.
Vector size: the server's ``dim``, unless the request overrides it with the
OpenAI ``dimensions`` field or a model name ending in ``-<digits>``
(``"fake-embed-768"`` → 768), or a ``wrong_dim`` fault is active.

Chat: scripted answers (``script_chat``) are consumed in order by
``/v1/chat/completions`` and ``/api/chat``; without a script the answer is
``"Echo: <last user message>"``. A script item is a string or a dict::

    {"content": str, "tool_calls": [{"name", "arguments": dict|str} or OpenAI shape],
     "usage": {...} | None,     # None = report no usage at all; absent = computed
     "chunks": [str, ...],      # explicit streamed pieces (default: word by word)
     "first_token_delay": s, "piece_delay": s, "finish_reason": str,
     "hold_after_first": name}  # after the first piece, wait until the test calls release(name)

Computed usage: ``prompt_tokens`` = whitespace-separated words in all messages
+ 1 per message; ``completion_tokens`` = number of streamed pieces (+ words of
tool-call arguments).

Reranking score = fraction of the query's distinct words that occur in the text.
TEI ``/tokenize`` splits ``\\w+|[^\\w\\s]`` and adds ``<s>``/``</s>`` special
tokens (``start``/``stop`` null); ``/embed_all`` returns one (unnormalised,
x3) vector per token in the same order, special tokens included. Attributes
``max_input_length`` (TEI's truncation / 413), ``contextual_tokens``
(position-dependent token vectors) and ``byte_offsets`` (UTF-8 byte offsets
from ``/tokenize``) switch on more of TEI's behaviour; all are off by default.

Faults (``fail_next(path_prefix, fault, times)``; applied to the next
``times`` requests whose path starts with ``path_prefix``; keys combine):

* ``{"status": 500}`` – answer that status with an OpenAI-style error body;
  ``"retry_after": 1`` adds a ``Retry-After`` header;
* ``{"delay_first_byte": s}`` – sleep before sending anything;
* ``{"hold": name}`` – send nothing until the test calls ``release(name)`` (or
  the server stops): a delay the test ends itself, so it never races the clock;
* ``{"stall_after": n, "stall_seconds": s}`` – streaming: send ``n`` content
  pieces, go silent for ``s`` seconds, then drop the connection without the
  end marker (non-streamed: half the body, stall, drop);
* ``{"malformed": True}`` – invalid JSON body, or an invalid ``data:``/NDJSON
  line after the first piece when streaming;
* ``{"wrong_dim": 7}`` – embedding endpoints return vectors of that size;
* ``{"reverse_order": True}`` – ``/v1/embeddings`` lists ``data`` backwards
  (each item keeps its correct ``index``);
* ``{"rerank_reverse": True}`` – ``/rerank`` and ``/v1/rerank`` score by
  position instead of word overlap: text ``i`` of ``n`` scores ``(i + 1) / n``,
  so the reranker reverses the order it was given;
* ``{"close": True}`` – drop the connection without answering.

Subprocess mode (for a server that another process talks to)::

    python -m tests.fakeai --port 0 --dim 384
    # prints {"url": "http://127.0.0.1:PORT"} on one line, serves until killed

Control endpoints (never logged, never faulted): ``POST /_control/script_chat
{"answers": [...]}``, ``POST /_control/fail_next {"path_prefix", "fault",
"times"}``, ``POST /_control/reset``, ``GET /_control/requests`` →
``{"requests": [...]}``.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import signal
import socket
import sys
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import numpy as np

EMBED_MODEL = "fake-embed"
CHAT_MODEL = "fake-chat"
RERANK_MODEL = "fake-rerank"

WORD_RE = re.compile(r"\w+")
TOKEN_RE = re.compile(r"\w+|[^\w\s]")
MODEL_DIM_RE = re.compile(r"-(\d{1,5})$")


# ---------------------------------------------------------------- deterministic maths

def _word_hash(word: str) -> bytes:
    return hashlib.sha256(word.encode("utf-8")).digest()


def fake_embedding(text: str, dim: int) -> list[float]:
    """Hashed bag of lowercased words, L2-normalised; no words → e0."""
    v = np.zeros(dim, dtype=np.float64)
    for word in WORD_RE.findall((text or "").lower()):
        h = _word_hash(word)
        for k in range(3):
            bucket = int.from_bytes(h[4 * k:4 * k + 4], "little") % dim
            v[bucket] += 1.0 if h[12 + k] & 1 else -1.0
    n = np.linalg.norm(v)
    if n == 0:
        v = np.zeros(dim, dtype=np.float64)
        v[0] = 1.0
        n = 1.0
    return (v / n).astype(np.float32).tolist()


def fake_tokenize(text: str, add_special_tokens: bool = True) -> list[dict]:
    """TEI-shaped tokens with character offsets."""
    toks = []
    if add_special_tokens:
        toks.append({"id": 0, "text": "<s>", "special": True, "start": None, "stop": None})
    for m in TOKEN_RE.finditer(text or ""):
        word = m.group()
        tid = 5 + int.from_bytes(_word_hash(word.lower())[:4], "little") % 250_000
        toks.append({"id": tid, "text": word, "special": False,
                     "start": m.start(), "stop": m.end()})
    if add_special_tokens:
        toks.append({"id": 2, "text": "</s>", "special": True, "start": None, "stop": None})
    return toks


def _special_vector(idx: int, dim: int) -> list[float]:
    v = [0.0] * dim
    v[idx % dim] = 1.0
    return v


def contextual_scale(position: int) -> float:
    """``contextual`` token vectors: the factor for the token at ``position`` of its input."""
    return 1.0 + (position % 7) / 2.0


def fake_token_vectors(text: str, dim: int, *, contextual: bool = False) -> list[list[float]]:
    """One vector per token of ``fake_tokenize(text)`` (specials included), scaled x3.

    ``contextual=True`` also scales each non-special token's vector by
    ``contextual_scale(position)`` (its index in this input, specials counted): the same word
    then gets a different length depending on where its input starts, as a real model's token
    states depend on their context, so a test can tell which window a vector came from and
    whether token vectors were averaged raw or normalised first.
    """
    out = []
    for position, tok in enumerate(fake_tokenize(text)):
        if tok["special"]:
            vec = _special_vector(1 if tok["id"] == 0 else 2, dim)
            factor = 3.0
        else:
            vec = fake_embedding(tok["text"], dim)
            factor = 3.0 * (contextual_scale(position) if contextual else 1.0)
        out.append([factor * x for x in vec])
    return out


def byte_offset_tokens(text: str, tokens: list[dict]) -> list[dict]:
    """The same tokens with UTF-8 byte offsets, as a TEI server built on Rust tokenizers reports them."""
    ends = [0]
    for ch in text:
        ends.append(ends[-1] + len(ch.encode("utf-8")))
    return [dict(t, start=ends[t["start"]], stop=ends[t["stop"]]) if not t["special"] else t for t in tokens]


def overlap_score(query: str, text: str) -> float:
    q = set(WORD_RE.findall((query or "").lower()))
    if not q:
        return 0.0
    t = set(WORD_RE.findall((text or "").lower()))
    return len(q & t) / len(q)


def split_pieces(text: str) -> list[str]:
    """Word-by-word pieces whose concatenation is exactly ``text``."""
    if not text:
        return []
    pieces = re.findall(r"\S+\s*", text)
    lead = re.match(r"\s*", text).group()
    if lead:
        if pieces:
            pieces[0] = lead + pieces[0]
        else:
            pieces = [lead]
    return pieces


def _message_text(m: dict) -> str:
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def _normalize_tool_calls(calls: list | None) -> list[dict]:
    out = []
    for i, c in enumerate(calls or []):
        if "function" in c:
            fn = dict(c["function"])
            cid = c.get("id") or f"call_fake_{i}"
        else:
            fn = {"name": c.get("name", ""), "arguments": c.get("arguments", {})}
            cid = c.get("id") or f"call_fake_{i}"
        args = fn.get("arguments", "")
        if not isinstance(args, str):
            args = json.dumps(args)
        out.append({"id": cid, "type": "function",
                    "function": {"name": fn.get("name", ""), "arguments": args}})
    return out


def _split_args(args: str, parts: int = 3) -> list[str]:
    if not args:
        return [""]
    step = max(1, -(-len(args) // parts))
    return [args[i:i + step] for i in range(0, len(args), step)]


# ---------------------------------------------------------------- HTTP plumbing

class _Abort(Exception):
    """Drop the connection now (fault injection)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeAI/1.0"
    server: "_Server"

    def setup(self):
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, False)

    def log_message(self, format, *args):  # noqa: A002 - silence
        pass

    def do_GET(self):
        self.server.fake._dispatch(self, "GET")

    def do_POST(self):
        self.server.fake._dispatch(self, "POST")

    def do_DELETE(self):
        self.server.fake._dispatch(self, "DELETE")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    fake: "FakeAIServer"

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (OSError, _Abort)):
            return
        super().handle_error(request, client_address)


class _Resp:
    """Response writer for one request, aware of the active fault."""

    def __init__(self, fake: "FakeAIServer", h: _Handler, fault: dict):
        self.fake = fake
        self.h = h
        self.fault = fault
        self.chunked = False

    # -- plain JSON
    def json(self, obj: Any, status: int = 200, headers: dict | None = None) -> None:
        body = json.dumps(obj).encode()
        if self.fault.get("malformed") and status < 400:
            body = b'{"this is": not valid json'
        self.raw(body, status, "application/json", headers)

    def raw(self, body: bytes, status: int = 200, ctype: str = "application/json",
            headers: dict | None = None) -> None:
        h = self.h
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, str(v))
        h.end_headers()
        if "stall_after" in self.fault and status < 400:
            half = body[: len(body) // 2]
            h.wfile.write(half)
            h.wfile.flush()
            self.fake._sleep(float(self.fault.get("stall_seconds", 1.0)))
            raise _Abort()
        h.wfile.write(body)
        h.wfile.flush()

    def error(self, status: int, message: str, headers: dict | None = None) -> None:
        etype = "server_error" if status >= 500 else "invalid_request_error"
        self.raw(json.dumps({"error": {"message": message, "type": etype, "code": status}}).encode(),
                 status, "application/json", headers)

    # -- chunked streaming
    def start_stream(self, ctype: str) -> None:
        h = self.h
        h.send_response(200)
        h.send_header("Content-Type", ctype)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache")
        h.end_headers()
        h.wfile.flush()
        self.chunked = True

    def chunk(self, data: bytes) -> None:
        if not data:
            return
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.h.wfile.flush()

    def end_stream(self) -> None:
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()


# ---------------------------------------------------------------- the server

class FakeAIServer:
    def __init__(self, *, dim: int = 384, host: str = "127.0.0.1", port: int = 0):
        self.dim = int(dim)
        self.host = host
        self.port = int(port)
        self.url = ""
        self.embedding_models = [EMBED_MODEL]
        self.chat_models = [CHAT_MODEL]
        # TEI behaviours (plain attributes; tests set them after start):
        # max_input_length: /embed_all truncates longer inputs ("truncate": true) like TEI, keeping the
        # first tokens and the closing special token, or answers 413 without truncate; /info reports it.
        self.max_input_length: int | None = None
        # contextual_tokens: /embed_all vectors depend on the token's position (fake_token_vectors).
        self.contextual_tokens = False
        # byte_offsets: /tokenize reports UTF-8 byte offsets instead of character offsets.
        self.byte_offsets = False
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._answers: deque = deque()
        self._faults: list[list] = []  # [prefix, fault, remaining]
        self._conns: set = set()
        self._gates: dict[str, threading.Event] = {}
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> "FakeAIServer":
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server((self.host, self.port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self.url = f"http://{self.host}:{self.port}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fakeai-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()          # wakes stalled/delayed handlers
        httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> "FakeAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- test API
    def script_chat(self, *answers: str | dict) -> None:
        with self._lock:
            self._answers.extend(answers)

    def fail_next(self, path_prefix: str, fault: dict, times: int = 1) -> None:
        with self._lock:
            self._faults.append([path_prefix, dict(fault), int(times)])

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._answers.clear()
            self._faults.clear()

    def release(self, name: str) -> None:
        """Let the requests held on `name` (a ``hold`` fault, a ``hold_after_first`` answer) go on."""
        self._gate(name).set()

    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def _wait_gate(self, name: str) -> None:
        gate = self._gate(name)
        while not gate.is_set() and not self._stopping.is_set():
            gate.wait(0.1)

    def requests_to(self, path: str) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r["path"] == path]

    def config(self, kind: str = "openai", **overrides):
        """A ``retrieval.ai.ServerConfig`` for this server (fast retries by default)."""
        from retrieval.ai.base import ServerConfig

        values = dict(kind=kind, base_url=self.url, embedding_model=EMBED_MODEL,
                      embedding_dim=self.dim, chat_model=CHAT_MODEL, name="fake",
                      connect_timeout=2.0, read_timeout=5.0, max_retries=2, backoff_base=0.01)
        values.update(overrides)
        return ServerConfig(**values)

    # -- internals
    def _track(self, conn, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _take_fault(self, path: str) -> dict:
        with self._lock:
            for entry in self._faults:
                prefix, fault, remaining = entry
                if remaining > 0 and path.startswith(prefix):
                    entry[2] -= 1
                    if entry[2] <= 0:
                        self._faults.remove(entry)
                    return dict(fault)
        return {}

    def _next_answer(self, messages: list) -> dict:
        with self._lock:
            ans = self._answers.popleft() if self._answers else None
        if ans is None:
            last_user = ""
            for m in messages or []:
                if isinstance(m, dict) and m.get("role") == "user":
                    last_user = _message_text(m)
            ans = f"Echo: {last_user}"
        if isinstance(ans, str):
            ans = {"content": ans}
        ans = dict(ans)
        ans.setdefault("content", "")
        ans["tool_calls"] = _normalize_tool_calls(ans.get("tool_calls"))
        if ans.get("chunks") is None:
            ans["chunks"] = split_pieces(ans["content"])
        else:
            ans["content"] = "".join(ans["chunks"])
        if "usage" not in ans:
            prompt = sum(len(_message_text(m).split()) + 1 for m in messages or []
                         if isinstance(m, dict))
            completion = len(ans["chunks"]) + sum(
                len(c["function"]["arguments"].split()) for c in ans["tool_calls"])
            ans["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                            "total_tokens": prompt + completion}
        return ans

    def _dispatch(self, h: _Handler, method: str) -> None:
        path = urlsplit(h.path).path
        try:
            length = int(h.headers.get("Content-Length") or 0)
            raw = h.rfile.read(length) if length > 0 else b""
            try:
                body = json.loads(raw) if raw else None
                bad_json = False
            except ValueError:
                body, bad_json = None, True

            if path.startswith("/_control/"):
                self._control(_Resp(self, h, {}), method, path, body)
                return

            with self._lock:
                self.requests.append({"path": path, "method": method, "json": body,
                                      "headers": {k.lower(): v for k, v in h.headers.items()}})
            fault = self._take_fault(path)
            r = _Resp(self, h, fault)
            if fault.get("close"):
                raise _Abort()
            if fault.get("delay_first_byte"):
                self._sleep(float(fault["delay_first_byte"]))
                if self._stopping.is_set():
                    raise _Abort()
            if fault.get("hold"):
                self._wait_gate(str(fault["hold"]))
                if self._stopping.is_set():
                    raise _Abort()
            if fault.get("status"):
                status = int(fault["status"])
                headers = {}
                if fault.get("retry_after") is not None:
                    headers["Retry-After"] = fault["retry_after"]
                r.error(status, f"fake fault: HTTP {status}", headers)
                return
            if bad_json:
                r.error(400, "request body is not valid JSON")
                return
            route = ROUTES.get((method, path))
            if route is None:
                r.error(404 if not any(p == path for _, p in ROUTES) else 405,
                        f"no route for {method} {path}")
                return
            route(self, r, body if isinstance(body, dict) else {})
        except (_Abort, OSError):
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _control(self, r: _Resp, method: str, path: str, body: Any) -> None:
        body = body if isinstance(body, dict) else {}
        if path == "/_control/script_chat" and method == "POST":
            self.script_chat(*(body.get("answers") or []))
            r.json({"ok": True})
        elif path == "/_control/fail_next" and method == "POST":
            self.fail_next(body.get("path_prefix", "/"), body.get("fault") or {},
                           int(body.get("times", 1)))
            r.json({"ok": True})
        elif path == "/_control/reset" and method == "POST":
            self.reset()
            r.json({"ok": True})
        elif path == "/_control/requests" and method == "GET":
            with self._lock:
                reqs = list(self.requests)
            r.json({"requests": reqs})
        else:
            r.error(404, f"no control route {method} {path}")

    # -- endpoint helpers
    def _dim_for(self, body: dict, fault: dict) -> int:
        if fault.get("wrong_dim"):
            return int(fault["wrong_dim"])
        if isinstance(body.get("dimensions"), int) and body["dimensions"] > 0:
            return body["dimensions"]
        m = MODEL_DIM_RE.search(str(body.get("model") or ""))
        if m and int(m.group(1)) > 0:
            return int(m.group(1))
        return self.dim

    @staticmethod
    def _inputs(value: Any) -> list[str] | None:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            return value
        return None

    # -- OpenAI
    def _models(self, r: _Resp, body: dict) -> None:
        names = self.embedding_models + self.chat_models + [RERANK_MODEL]
        r.json({"object": "list", "data": [{"id": n, "object": "model", "created": 0,
                                            "owned_by": "fakeai"} for n in names]})

    def _openai_embeddings(self, r: _Resp, body: dict) -> None:
        texts = self._inputs(body.get("input"))
        if texts is None:
            r.error(400, "'input' must be a non-empty string or list of strings")
            return
        dim = self._dim_for(body, r.fault)
        b64 = body.get("encoding_format") == "base64"
        data = []
        for i, t in enumerate(texts):
            vec = fake_embedding(t, dim)
            emb: Any = base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode() \
                if b64 else vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if r.fault.get("reverse_order"):
            data.reverse()
        ntok = sum(len(WORD_RE.findall(t)) for t in texts)
        r.json({"object": "list", "data": data, "model": body.get("model") or EMBED_MODEL,
                "usage": {"prompt_tokens": ntok, "total_tokens": ntok}})

    def _openai_chat(self, r: _Resp, body: dict) -> None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            r.error(400, "'messages' must be a non-empty list")
            return
        ans = self._next_answer(messages)
        model = body.get("model") or CHAT_MODEL
        cid = f"chatcmpl-fake-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        finish = ans.get("finish_reason") or ("tool_calls" if ans["tool_calls"] else "stop")
        if not body.get("stream"):
            self._sleep(float(ans.get("first_token_delay") or 0))
            msg: dict = {"role": "assistant",
                         "content": ans["content"] if (ans["content"] or not ans["tool_calls"])
                         else None}
            if ans["tool_calls"]:
                msg["tool_calls"] = ans["tool_calls"]
            out = {"id": cid, "object": "chat.completion", "created": created, "model": model,
                   "choices": [{"index": 0, "message": msg, "finish_reason": finish}]}
            if ans["usage"] is not None:
                out["usage"] = ans["usage"]
            r.json(out)
            return

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def event(choices: list, usage: Any = None, with_usage_key: bool = True) -> bytes:
            ch = {"id": cid, "object": "chat.completion.chunk", "created": created,
                  "model": model, "choices": choices}
            if include_usage and with_usage_key:
                ch["usage"] = usage
            return b"data: " + json.dumps(ch).encode() + b"\n\n"

        def delta(d: dict, finish_reason=None) -> bytes:
            return event([{"index": 0, "delta": d, "finish_reason": finish_reason}])

        r.start_stream("text/event-stream")
        r.chunk(delta({"role": "assistant", "content": ""}))
        self._stream_pieces(r, ans, lambda piece: delta({"content": piece}),
                            b"data: {\"choices\": [{\"delta\": not json\n\n")
        for i, call in enumerate(ans["tool_calls"]):
            r.chunk(delta({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"],
                                                        "arguments": ""}}]}))
            for part in _split_args(call["function"]["arguments"]):
                r.chunk(delta({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
        r.chunk(delta({}, finish))
        if include_usage and ans["usage"] is not None:
            r.chunk(event([], ans["usage"]))
        r.chunk(b"data: [DONE]\n\n")
        r.end_stream()

    def _stream_pieces(self, r: _Resp, ans: dict, encode, malformed_line: bytes) -> None:
        """Send the content pieces with delays and the stall/malformed faults."""
        fault = r.fault
        stall_after = fault.get("stall_after")
        self._sleep(float(ans.get("first_token_delay") or 0))
        piece_delay = float(ans.get("piece_delay") or 0)
        for n, piece in enumerate(ans["chunks"]):
            if stall_after is not None and n >= int(stall_after):
                break
            if n and piece_delay:
                self._sleep(piece_delay)
            if n == 1 and ans.get("hold_after_first"):
                self._wait_gate(str(ans["hold_after_first"]))
            r.chunk(encode(piece))
            if fault.get("malformed") and n == 0:
                r.chunk(malformed_line)
        if stall_after is not None:
            self._sleep(float(fault.get("stall_seconds", 1.0)))
            raise _Abort()
        if fault.get("malformed") and not ans["chunks"]:
            r.chunk(malformed_line)

    @staticmethod
    def _rerank_scores(query: str, texts: list, fault: dict) -> list[float]:
        if fault.get("rerank_reverse"):
            return [(i + 1) / len(texts) for i in range(len(texts))]
        return [overlap_score(query, t) for t in texts]

    def _rerank_tei(self, r: _Resp, body: dict) -> None:
        texts = body.get("texts")
        if not isinstance(body.get("query"), str) or not isinstance(texts, list):
            r.raw(json.dumps({"error": "Failed to deserialize the JSON body: missing field "
                                       "`texts` or `query`", "error_type": "validation"}).encode(),
                  422)
            return
        if not texts:
            r.raw(json.dumps({"error": "`texts` cannot be empty",
                              "error_type": "validation"}).encode(), 422)
            return
        scores = self._rerank_scores(body["query"], texts, r.fault)
        ranks = [{"index": i, "score": scores[i]} for i in range(len(texts))]
        if body.get("return_text"):
            for rk in ranks:
                rk["text"] = texts[rk["index"]]
        ranks.sort(key=lambda x: (-x["score"], x["index"]))
        r.json(ranks)

    def _rerank_v1(self, r: _Resp, body: dict) -> None:
        docs = body.get("documents")
        if not isinstance(body.get("query"), str) or not isinstance(docs, list) or not docs:
            r.error(400, "'query' and a non-empty 'documents' list are required")
            return
        texts = [d.get("text", "") if isinstance(d, dict) else str(d) for d in docs]
        scores = self._rerank_scores(body["query"], texts, r.fault)
        results = [{"index": i, "relevance_score": scores[i], "document": {"text": t}}
                   for i, t in enumerate(texts)]
        results.sort(key=lambda x: (-x["relevance_score"], x["index"]))
        top_n = body.get("top_n")
        if isinstance(top_n, int) and top_n >= 0:
            results = results[:top_n]
        r.json({"id": f"rerank-{uuid.uuid4().hex[:8]}", "model": body.get("model") or RERANK_MODEL,
                "results": results,
                "usage": {"total_tokens": sum(len(WORD_RE.findall(t)) for t in texts)}})

    # -- Ollama
    def _ollama_embed(self, r: _Resp, body: dict) -> None:
        texts = self._inputs(body.get("input"))
        if texts is None:
            r.raw(json.dumps({"error": "invalid input type"}).encode(), 400)
            return
        dim = self._dim_for({"model": body.get("model")}, r.fault)
        r.json({"model": body.get("model") or EMBED_MODEL,
                "embeddings": [fake_embedding(t, dim) for t in texts],
                "total_duration": 1000, "load_duration": 10,
                "prompt_eval_count": sum(len(WORD_RE.findall(t)) for t in texts)})

    def _ollama_chat(self, r: _Resp, body: dict) -> None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            r.raw(json.dumps({"error": "messages are required"}).encode(), 400)
            return
        ans = self._next_answer(messages)
        model = body.get("model") or CHAT_MODEL
        created_at = "2024-01-01T00:00:00Z"
        calls = [{"function": {"name": c["function"]["name"],
                               "arguments": json.loads(c["function"]["arguments"] or "{}")}}
                 for c in ans["tool_calls"]]
        finish = ans.get("finish_reason") or "stop"
        final: dict = {"model": model, "created_at": created_at,
                       "message": {"role": "assistant", "content": ""},
                       "done": True, "done_reason": finish, "total_duration": 1000}
        if ans["usage"] is not None:
            final["prompt_eval_count"] = ans["usage"]["prompt_tokens"]
            final["eval_count"] = ans["usage"]["completion_tokens"]
        if body.get("stream") is False:
            self._sleep(float(ans.get("first_token_delay") or 0))
            final["message"] = {"role": "assistant", "content": ans["content"]}
            if calls:
                final["message"]["tool_calls"] = calls
            r.json(final)
            return

        def line(obj: dict) -> bytes:
            return json.dumps(obj).encode() + b"\n"

        def piece(text: str) -> bytes:
            return line({"model": model, "created_at": created_at,
                         "message": {"role": "assistant", "content": text}, "done": False})

        r.start_stream("application/x-ndjson")
        self._stream_pieces(r, ans, piece, b'{"message": {"content": not json\n')
        if calls:
            r.chunk(line({"model": model, "created_at": created_at,
                          "message": {"role": "assistant", "content": "", "tool_calls": calls},
                          "done": False}))
        r.chunk(line(final))
        r.end_stream()

    def _ollama_tags(self, r: _Resp, body: dict) -> None:
        r.json({"models": [{"name": n, "model": n, "size": 1, "digest": "0" * 12}
                           for n in self.embedding_models + self.chat_models]})

    # -- TEI
    def _embed_all(self, r: _Resp, body: dict) -> None:
        texts = self._inputs(body.get("inputs"))
        if texts is None:
            r.raw(json.dumps({"error": "`inputs` cannot be empty",
                              "error_type": "validation"}).encode(), 422)
            return
        dim = self._dim_for({}, r.fault)
        out = []
        for t in texts:
            vectors = fake_token_vectors(t, dim, contextual=self.contextual_tokens)
            limit = self.max_input_length
            if limit is not None and len(vectors) > limit:
                if not body.get("truncate"):
                    r.raw(json.dumps({"error": f"Input validation error: `inputs` must have less than "
                                               f"{limit} tokens. Given: {len(vectors)}",
                                      "error_type": "validation"}).encode(), 413)
                    return
                vectors = vectors[:limit - 1] + vectors[-1:]  # truncation keeps the closing special token
            out.append(vectors)
        r.json(out)

    def _tokenize(self, r: _Resp, body: dict) -> None:
        texts = self._inputs(body.get("inputs"))
        if texts is None:
            r.raw(json.dumps({"error": "`inputs` cannot be empty",
                              "error_type": "validation"}).encode(), 422)
            return
        special = body.get("add_special_tokens", True)
        tokens = [fake_tokenize(t, bool(special)) for t in texts]
        if self.byte_offsets:
            tokens = [byte_offset_tokens(t, toks) for t, toks in zip(texts, tokens)]
        r.json(tokens)

    def _info(self, r: _Resp, body: dict) -> None:
        r.json({"model_id": EMBED_MODEL, "model_dtype": "float32",
                "model_type": {"embedding": {"pooling": "mean"}},
                "max_input_length": self.max_input_length or 512, "max_client_batch_size": 32,
                "version": "fake"})

    def _health(self, r: _Resp, body: dict) -> None:
        r.json({"status": "ok"})


ROUTES = {
    ("GET", "/v1/models"): FakeAIServer._models,
    ("POST", "/v1/embeddings"): FakeAIServer._openai_embeddings,
    ("POST", "/v1/chat/completions"): FakeAIServer._openai_chat,
    ("POST", "/v1/rerank"): FakeAIServer._rerank_v1,
    ("POST", "/api/embed"): FakeAIServer._ollama_embed,
    ("POST", "/api/chat"): FakeAIServer._ollama_chat,
    ("GET", "/api/tags"): FakeAIServer._ollama_tags,
    ("POST", "/embed_all"): FakeAIServer._embed_all,
    ("POST", "/tokenize"): FakeAIServer._tokenize,
    ("POST", "/rerank"): FakeAIServer._rerank_tei,
    ("GET", "/info"): FakeAIServer._info,
    ("GET", "/health"): FakeAIServer._health,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Fake AI server for ragsite tests.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args(argv)
    server = FakeAIServer(dim=args.dim, host=args.host, port=args.port).start()
    stop = threading.Event()

    def _on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    print(json.dumps({"url": server.url}), flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
