"""Cross-encoder reranking over HTTP.

Two API shapes are supported:

* **TEI** (Hugging Face text-embeddings-inference):
  ``POST {base}/rerank {"query", "texts", "truncate": true}`` →
  ``[{"index", "score"}, ...]``
* **Jina/Cohere** (also vLLM, llama.cpp server, LocalAI):
  ``POST {base}/v1/rerank {"model", "query", "documents", "top_n"}`` →
  ``{"results": [{"index", "relevance_score"}, ...]}``

Which one is used is decided by ``cfg.rerank_api``:

* ``"tei"`` / ``"v1"`` – only that one;
* ``""`` or ``"auto"`` (default) – try TEI's ``/rerank`` first; if the server
  answers 404/405 (no such route) or 400/422 (it has a ``/rerank`` route with
  another body shape, e.g. vLLM), use ``/v1/rerank``. The outcome is
  remembered per base URL for the life of the process, so the probe costs one
  extra request once.

Either answer shape is parsed whatever the endpoint. The model name sent to
``/v1/rerank`` is ``cfg.rerank_model`` (omitted when empty; most single-model
servers do not need it). Only ``kind="openai"`` servers can rerank; Ollama and
the built-in model have no reranking API.

Results are ``[(index, score), ...]`` sorted best first (ties by index), cut
to ``top_n`` when given. Scores are whatever the server returns (TEI: a
sigmoid probability; Jina/Cohere: relevance score) – compare them only within
one server.
"""
from __future__ import annotations

import math
import threading
from typing import Any, Sequence

from .base import AiServerError, ServerConfig, require_base_url, server_label
from .http import HttpClientOwner, bad_response, parse_json, request_with_retry

WHAT = "reranking"

_api_cache: dict[str, str] = {}
_api_cache_lock = threading.Lock()


class Reranker(HttpClientOwner):
    def __init__(self, cfg: ServerConfig):
        kind = (cfg.kind or "").lower()
        if kind != "openai":
            raise AiServerError(f"{server_label(cfg, WHAT)} cannot rerank: only OpenAI-compatible "
                                f"servers (TEI, vLLM, Jina, ...) offer a rerank API.",
                                transient=False)
        self.cfg = cfg
        self.root = require_base_url(cfg, WHAT)
        api = (cfg.rerank_api or "auto").lower()
        if api not in ("auto", "tei", "v1"):
            raise AiServerError(f"{server_label(cfg, WHAT)} has an unknown rerank API "
                                f"{cfg.rerank_api!r} (expected auto, tei or v1).", transient=False)
        self.api = api

    def _post(self, path: str, body: dict) -> Any:
        resp = request_with_retry(self.http, "POST", self.root + path, json=body, cfg=self.cfg,
                                  what=WHAT)
        return parse_json(resp, self.cfg, WHAT)

    def _tei(self, query: str, texts: list[str]) -> Any:
        return self._post("/rerank", {"query": query, "texts": texts, "truncate": True})

    def _v1(self, query: str, texts: list[str], top_n: int | None) -> Any:
        body: dict[str, Any] = {"query": query, "documents": texts}
        if self.cfg.rerank_model:
            body["model"] = self.cfg.rerank_model
        if top_n is not None:
            body["top_n"] = top_n
        return self._post("/v1/rerank", body)

    def rerank(self, query: str, texts: Sequence[str], top_n: int | None = None
               ) -> list[tuple[int, float]]:
        texts = [str(t) for t in texts]
        if not texts:
            return []
        api = self.api
        if api == "auto":
            with _api_cache_lock:
                api = _api_cache.get(self.root, "auto")
        if api == "v1":
            data = self._v1(query, texts, top_n)
        elif api == "tei":
            data = self._tei(query, texts)
        else:
            try:
                data = self._tei(query, texts)
                chosen = "tei"
            except AiServerError as err:
                if err.transient or err.status not in (400, 404, 405, 422):
                    raise
                data = self._v1(query, texts, top_n)
                chosen = "v1"
            with _api_cache_lock:
                _api_cache[self.root] = chosen
        return self._parse(data, len(texts), top_n)

    def _parse(self, data: Any, n: int, top_n: int | None) -> list[tuple[int, float]]:
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            items, key = data["results"], "relevance_score"
        elif isinstance(data, list):
            items, key = data, "score"
        else:
            raise bad_response(self.cfg, WHAT, "neither a list of ranks nor a 'results' list.")
        out: dict[int, float] = {}
        for item in items:
            if not isinstance(item, dict):
                raise bad_response(self.cfg, WHAT, "a rank is not an object.")
            idx = item.get("index")
            score = item.get(key, item.get("score", item.get("relevance_score")))
            if not isinstance(idx, int) or isinstance(idx, bool) or not 0 <= idx < n or idx in out:
                raise bad_response(self.cfg, WHAT, f"unexpected index {idx!r}.")
            if not isinstance(score, (int, float)) or isinstance(score, bool) \
                    or not math.isfinite(score):
                raise bad_response(self.cfg, WHAT, f"score {score!r} is not a number.")
            out[idx] = float(score)
        ranked = sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))
        if top_n is not None:
            ranked = ranked[:max(0, int(top_n))]
        return ranked


def reranker(cfg: ServerConfig) -> Reranker:
    """A reusable reranking client (keeps its HTTP connections; call ``close()``)."""
    return Reranker(cfg)


def rerank(cfg: ServerConfig, query: str, texts: Sequence[str], top_n: int | None = None
           ) -> list[tuple[int, float]]:
    """Rerank ``texts`` against ``query``: ``[(index, score), ...]`` best first."""
    with Reranker(cfg) as r:
        return r.rerank(query, texts, top_n)


def forget_detected_apis() -> None:
    """Clear the per-base-URL memory of which rerank API worked (for tests)."""
    with _api_cache_lock:
        _api_cache.clear()
