"""The fake AI server's own behaviour: endpoints, determinism, faults, subprocess mode."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.fakeai import FakeAIServer, fake_embedding, fake_tokenize, split_pieces


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def ai():
    with FakeAIServer(dim=32) as server:
        yield server


@pytest.fixture
def http():
    with httpx.Client(timeout=120) as client:
        yield client


def sse_events(text: str) -> list:
    out = []
    for line in text.splitlines():
        if line.startswith("data: "):
            payload = line[6:]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


# ---------------------------------------------------------------- basics

def test_health_models_and_request_log(ai, http):
    assert http.get(ai.url + "/health").json() == {"status": "ok"}
    ids = [m["id"] for m in http.get(ai.url + "/v1/models").json()["data"]]
    assert "fake-embed" in ids and "fake-chat" in ids
    http.post(ai.url + "/v1/embeddings", json={"model": "fake-embed", "input": "x"},
              headers={"Authorization": "Bearer k"})
    assert [r["path"] for r in ai.requests] == ["/health", "/v1/models", "/v1/embeddings"]
    last = ai.requests[-1]
    assert last["method"] == "POST" and last["json"]["input"] == "x"
    assert last["headers"]["authorization"] == "Bearer k"
    assert http.get(ai.url + "/nope").status_code == 404


def test_embeddings_are_deterministic_and_meaningful(ai, http):
    texts = ["protein intake per day", "daily protein intake", "trains to Lisbon", ""]
    r = http.post(ai.url + "/v1/embeddings", json={"model": "fake-embed", "input": texts}).json()
    vecs = np.array([d["embedding"] for d in sorted(r["data"], key=lambda d: d["index"])])
    assert vecs.shape == (4, 32)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3       # shared words → closer
    assert np.allclose(vecs[3], np.eye(32)[0])               # empty text → fixed unit vector
    again = http.post(ai.url + "/v1/embeddings", json={"input": texts[0]}).json()
    assert again["data"][0]["embedding"] == r["data"][0]["embedding"]
    assert np.allclose(vecs[0], fake_embedding(texts[0], 32))


def test_embedding_dim_overrides_and_base64(ai, http):
    r = http.post(ai.url + "/v1/embeddings", json={"model": "fake-embed-768", "input": ["a b"]})
    assert len(r.json()["data"][0]["embedding"]) == 768
    r = http.post(ai.url + "/v1/embeddings", json={"input": ["a b"], "dimensions": 12})
    assert len(r.json()["data"][0]["embedding"]) == 12
    f = http.post(ai.url + "/v1/embeddings", json={"input": ["a b"]}).json()["data"][0]
    b = http.post(ai.url + "/v1/embeddings",
                  json={"input": ["a b"], "encoding_format": "base64"}).json()["data"][0]
    decoded = np.frombuffer(base64.b64decode(b["embedding"]), dtype="<f4")
    assert np.allclose(decoded, f["embedding"])
    assert http.post(ai.url + "/v1/embeddings", json={"input": []}).status_code == 400


# ---------------------------------------------------------------- chat

def test_chat_stream_sse_shape_with_usage(ai, http):
    ai.script_chat("Hello brave new world.")
    r = http.post(ai.url + "/v1/chat/completions", json={
        "model": "fake-chat", "messages": [{"role": "user", "content": "hi"}],
        "stream": True, "stream_options": {"include_usage": True}})
    assert r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    text = "".join((c["choices"][0]["delta"].get("content") or "") for c in chunks if c["choices"])
    assert text == "Hello brave new world."
    assert [c["choices"][0]["delta"]["content"] for c in chunks[1:5]] == \
        ["Hello ", "brave ", "new ", "world."]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 4
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_chat_stream_without_include_usage_has_no_usage(ai, http):
    r = http.post(ai.url + "/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "ping"}], "stream": True})
    chunks = sse_events(r.text)[:-1]
    assert all("usage" not in c for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "Echo: ping"


def test_chat_script_queue_nonstream_and_tool_calls(ai, http):
    ai.script_chat("first", {"content": "", "tool_calls": [{"name": "search",
                                                            "arguments": {"q": "x"}}]})
    msgs = [{"role": "user", "content": "question"}]
    r1 = http.post(ai.url + "/v1/chat/completions", json={"messages": msgs}).json()
    assert r1["choices"][0]["message"]["content"] == "first"
    assert r1["usage"]["total_tokens"] == r1["usage"]["prompt_tokens"] + 1
    r2 = http.post(ai.url + "/v1/chat/completions", json={"messages": msgs, "stream": True})
    chunks = sse_events(r2.text)[:-1]
    tc = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks
          if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert tc[0]["function"]["name"] == "search" and tc[0]["id"]
    assert "".join(t["function"]["arguments"] for t in tc) == '{"q": "x"}'
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    r3 = http.post(ai.url + "/v1/chat/completions", json={"messages": msgs}).json()
    assert r3["choices"][0]["message"]["content"] == "Echo: question"   # queue exhausted


def test_split_pieces_roundtrip():
    for text in ["", "  lead", "a  b\n c ", "one"]:
        assert "".join(split_pieces(text)) == text


# ---------------------------------------------------------------- ollama / TEI / rerank

def test_ollama_endpoints(ai, http):
    r = http.post(ai.url + "/api/embed", json={"model": "fake-embed", "input": ["a", "b"]})
    assert len(r.json()["embeddings"]) == 2 and len(r.json()["embeddings"][0]) == 32
    ai.script_chat("one two")
    r = http.post(ai.url + "/api/chat", json={"model": "m", "messages": [
        {"role": "user", "content": "x"}]})
    lines = [json.loads(line) for line in r.text.splitlines() if line]
    assert [ln["message"]["content"] for ln in lines[:-1]] == ["one ", "two"]
    assert lines[-1]["done"] is True and lines[-1]["eval_count"] == 2
    r = http.post(ai.url + "/api/chat", json={"messages": [{"role": "user", "content": "x"}],
                                              "stream": False}).json()
    assert r["message"]["content"] == "Echo: x" and r["done"] is True
    assert [m["name"] for m in http.get(ai.url + "/api/tags").json()["models"]][0] == "fake-embed"


def test_tei_tokenize_embed_all_and_rerank(ai, http):
    text = "Olá, mundo!"
    toks = http.post(ai.url + "/tokenize", json={"inputs": text}).json()[0]
    assert toks[0]["special"] and toks[-1]["special"] and toks[0]["start"] is None
    words = [text[t["start"]:t["stop"]] for t in toks if not t["special"]]
    assert words == ["Olá", ",", "mundo", "!"] == [t["text"] for t in toks[1:-1]]
    assert toks == fake_tokenize(text)
    vecs = http.post(ai.url + "/embed_all", json={"inputs": [text]}).json()[0]
    assert len(vecs) == len(toks) and len(vecs[0]) == 32
    ranks = http.post(ai.url + "/rerank", json={"query": "protein intake",
                                               "texts": ["trains", "protein intake daily"]}).json()
    assert ranks[0] == {"index": 1, "score": 1.0} and ranks[1]["score"] == 0.0
    assert http.post(ai.url + "/rerank", json={"query": "q", "documents": ["a"]}).status_code == 422
    res = http.post(ai.url + "/v1/rerank", json={"query": "protein", "top_n": 1,
                                                "documents": ["trains", "protein"]}).json()
    assert [(x["index"], x["relevance_score"]) for x in res["results"]] == [(1, 1.0)]


# ---------------------------------------------------------------- faults

def test_fault_status_retry_after_and_times(ai, http):
    ai.fail_next("/v1/embeddings", {"status": 429, "retry_after": 1}, times=2)
    body = {"input": "x"}
    assert http.post(ai.url + "/v1/chat/completions",
                     json={"messages": [{"role": "user", "content": "x"}]}).status_code == 200
    r1 = http.post(ai.url + "/v1/embeddings", json=body)
    r2 = http.post(ai.url + "/v1/embeddings", json=body)
    r3 = http.post(ai.url + "/v1/embeddings", json=body)
    assert (r1.status_code, r2.status_code, r3.status_code) == (429, 429, 200)
    assert r1.headers["retry-after"] == "1"
    assert "HTTP 429" in r1.json()["error"]["message"]


def test_fault_close_malformed_wrong_dim(ai, http):
    ai.fail_next("/v1/embeddings", {"close": True})
    with pytest.raises(httpx.TransportError):
        http.post(ai.url + "/v1/embeddings", json={"input": "x"})
    ai.fail_next("/v1/embeddings", {"malformed": True})
    r = http.post(ai.url + "/v1/embeddings", json={"input": "x"})
    with pytest.raises(ValueError):
        json.loads(r.content)
    ai.fail_next("/api/embed", {"wrong_dim": 7})
    assert len(http.post(ai.url + "/api/embed", json={"input": "x"}).json()["embeddings"][0]) == 7
    ai.fail_next("/v1/chat", {"malformed": True})
    r = http.post(ai.url + "/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "a b"}], "stream": True})
    with pytest.raises(ValueError):
        sse_events(r.text)


def test_fault_delay_first_byte(ai, http):
    ai.fail_next("/health", {"delay_first_byte": 0.5})
    t = time.monotonic()
    assert http.get(ai.url + "/health").status_code == 200
    assert time.monotonic() - t >= 0.5
    assert ai._faults == []  # the fault was used up: the next request is not delayed
    assert http.get(ai.url + "/health").status_code == 200


def test_fault_stall_then_drop(ai, http):
    ai.script_chat("a b c d e")
    ai.fail_next("/v1/chat/completions", {"stall_after": 2, "stall_seconds": 0.3})
    got = []
    t = time.monotonic()
    with pytest.raises(httpx.RemoteProtocolError):
        with http.stream("POST", ai.url + "/v1/chat/completions", json={
                "messages": [{"role": "user", "content": "x"}], "stream": True}) as r:
            for line in r.iter_lines():
                got.append(line)
    assert time.monotonic() - t >= 0.3
    contents = [json.loads(x[6:])["choices"][0]["delta"].get("content") for x in got
                if x.startswith("data: ")]
    assert contents == ["", "a ", "b "]


def test_stop_is_fast_with_stalled_stream():
    server = FakeAIServer(dim=8).start()
    server.fail_next("/v1/chat", {"stall_after": 1, "stall_seconds": 3600})
    errors = []

    def consume():
        try:
            with httpx.Client(timeout=120) as c:
                c.post(server.url + "/v1/chat/completions", json={
                    "messages": [{"role": "user", "content": "x y z"}], "stream": True})
        except httpx.HTTPError as exc:
            errors.append(exc)

    th = threading.Thread(target=consume, daemon=True)
    th.start()
    time.sleep(0.3)
    t = time.monotonic()
    server.stop()
    assert time.monotonic() - t < 600  # stop() woke the stalled handler: it did not wait out the hour
    th.join(timeout=120)
    assert not th.is_alive() and errors          # the client saw the connection die
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/health", timeout=1)


def test_reset_clears_everything(ai, http):
    ai.script_chat("scripted")
    ai.fail_next("/health", {"status": 500})
    http.get(ai.url + "/v1/models")
    ai.reset()
    assert ai.requests == []
    assert http.get(ai.url + "/health").status_code == 200
    r = http.post(ai.url + "/v1/chat/completions", json={"messages": [{"role": "user",
                                                                        "content": "z"}]})
    assert r.json()["choices"][0]["message"]["content"] == "Echo: z"


# ---------------------------------------------------------------- subprocess mode

def test_subprocess_mode_with_control_endpoints():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakeai", "--port", "0", "--dim", "16"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        url = json.loads(proc.stdout.readline())["url"]
        with httpx.Client(base_url=url, timeout=120) as c:
            c.post("/_control/script_chat", json={"answers": ["from control", {"content": "2nd"}]})
            c.post("/_control/fail_next", json={"path_prefix": "/v1/embeddings",
                                                "fault": {"status": 503}, "times": 1})
            assert c.post("/v1/embeddings", json={"input": "hello"}).status_code == 503
            emb = c.post("/v1/embeddings", json={"input": "hello"}).json()["data"][0]["embedding"]
            assert np.allclose(emb, fake_embedding("hello", 16))   # same vector across processes
            msgs = [{"role": "user", "content": "q"}]
            r = c.post("/v1/chat/completions", json={"messages": msgs}).json()
            assert r["choices"][0]["message"]["content"] == "from control"
            reqs = c.get("/_control/requests").json()["requests"]
            assert [x["path"] for x in reqs] == ["/v1/embeddings", "/v1/embeddings",
                                                 "/v1/chat/completions"]
            c.post("/_control/reset")
            assert c.get("/_control/requests").json()["requests"] == []
            r = c.post("/v1/chat/completions", json={"messages": msgs}).json()
            assert r["choices"][0]["message"]["content"] == "Echo: q"
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    assert proc.returncode == 0
