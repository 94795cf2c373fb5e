"""bench/ingest.py runs end to end on a database of its own and prints sane JSON (tiny sizes)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.processes import run_in_own_group

ROOT = Path(__file__).resolve().parents[2]

# The test session's database and data folder must not leak into the benchmark: it starts its own.
NOT_INHERITED = ("DATABASE_URL", "RAGSITE_DATA_DIR", "DJANGO_SETTINGS_MODULE", "TEST_DATABASE_NAME")

# A last resort against a hang, far above a run on a busy machine (the migration alone took 55 s there):
# the benchmark and its database run in a process group of their own, stopped as a whole on timeout.
BENCH_TIMEOUT = 900


@pytest.mark.slow
@pytest.mark.timeout(BENCH_TIMEOUT + 300)
def test_ingest_bench_small_run(tmp_path, sample_data):
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    out = tmp_path / "ingest.json"
    proc = run_in_own_group(
        [sys.executable, str(ROOT / "bench" / "ingest.py"), "--articles", "1", "--pages", "2", "--ocr-pages", "2", "--json-out", str(out),
         "--profile", "--squad", str(sample_data / "xquad" / "xquad.en.first-article.json")],
        env=env, timeout=BENCH_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == report
    assert report["benchmark"] == "ingest"
    assert report["goals"] == {"efficiency_min": 0.9, "pdf_worker_peak_rss_mb_max": 500.0}
    assert report["settings"]["embedding_server"]["kind"] == "builtin"
    assert isinstance(report["all_goals_met"], bool)
    assert set(report["results"]) == {"xquad", "pdf", "ocr"}

    xquad, pdf = report["results"]["xquad"], report["results"]["pdf"]
    assert xquad["documents"] == 1 and xquad["pages"] is None
    assert pdf["documents"] == 1 and pdf["pages"] == 2 and 600 <= pdf["words"] <= 800
    for result in (xquad, pdf):
        assert result["chunks"] > 0
        assert result["tokens"] >= 100 * result["chunks"]
        assert result["wall_s"] > 0 and result["embed_alone_s"] > 0
        assert result["chunks_per_s"] == pytest.approx(result["chunks"] / result["wall_s"], rel=1e-3)
        assert 0 < result["efficiency"] <= 1.2
        assert result["efficiency"] == pytest.approx(result["embed_alone_s"] / result["wall_s"], abs=1e-3)
        assert result["worker_peak_rss_mb"] > result["worker_rss_at_start_mb"] > 0
        alone = result["embedder_alone"]
        assert alone["texts"] == result["chunks"] and alone["batch_size"] == 64
        assert alone["vectors_max_abs_diff"] < 1e-4  # the stored embed texts were reproduced exactly
        breakdown = result["breakdown_s"]
        assert breakdown["task_embed"] > 0 and breakdown["worker_busy"] <= result["wall_s"] + 1e-6
        assert result["goals"]["efficiency"]["met"] == (result["efficiency"] >= 0.9)
    assert pdf["goals"]["worker_peak_rss_mb"]["met"] == (pdf["worker_peak_rss_mb"] < 500)
    assert "worker_peak_rss_mb" not in xquad["goals"]
    # The scanned PDF: both pages went through OCR, in a Tesseract child of the worker.
    ocr = report["results"]["ocr"]
    assert ocr["documents"] == 1 and ocr["pages"] == 2 and ocr["chunks"] > 0
    assert ocr["ocr_pages_per_s"] == pytest.approx(2 / ocr["breakdown_s"]["task_extract"], rel=1e-2)
    assert ocr["tesseract_peak_rss_mb"] > 10
    assert ocr["goals"]["worker_peak_rss_mb"]["met"] == (ocr["worker_peak_rss_mb"] < 500)

    # --profile: every step of an indexing job is found in the worker's profile. A step reported with
    # 0 calls names a function that no longer runs there (claim, progress and commit did, after a move).
    for name, result in report["results"].items():
        steps = result["profile"]["steps"]
        assert {"claim", "extract_open", "chunk_layout", "embed_passages", "commit"} <= set(steps)
        not_called = {step: s["functions"] for step, s in steps.items() if s["calls"] == 0}
        assert not not_called, f"{name}: profiled steps never called: {not_called}"
        assert steps["claim"]["calls"] == steps["commit"]["calls"] == result["documents"]
        assert all(s["cumulative_s"] >= 0 for s in steps.values())


@pytest.mark.slow
@pytest.mark.timeout(BENCH_TIMEOUT + 300)
def test_ingest_bench_versions_small_run(tmp_path, sample_data):
    """--versions at 4 pages: the first index, then the same file, one page and 10% of pages as new versions."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    proc = run_in_own_group(
        [sys.executable, str(ROOT / "bench" / "ingest.py"), "--versions", "--version-pages", "4",
         "--squad", str(sample_data / "xquad" / "xquad.en.first-article.json")],
        env=env, timeout=BENCH_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout)
    assert report["benchmark"] == "ingest-versions"
    runs = report["results"]["runs"]
    assert list(runs) == ["first", "same", "one_page", "ten_percent"]
    assert [r["version"] for r in runs.values()] == [1, 2, 3, 4]
    first = runs["first"]
    assert first["chunks"] > 0 and first["embedded_chunks"] == first["chunks"] and first["reused_chunks"] == 0
    # The same file: every vector from the cache. One page changed: some chunks embedded, the rest reused.
    assert runs["same"]["embedded_chunks"] == 0 and runs["same"]["reused_chunks"] == runs["same"]["chunks"]
    # New versions are chunked anchored on the previous one: the same text keeps every chunk.
    assert first["kept_chunks"] is None and runs["same"]["kept_chunks"] == runs["same"]["chunks"]
    one = runs["one_page"]
    assert 0 < one["embedded_chunks"] < one["chunks"] and one["reused_chunks"] == one["chunks"] - one["embedded_chunks"]
    for name in ("same", "one_page", "ten_percent"):
        run = runs[name]
        assert run["ratio"] == pytest.approx(run["wall_s"] / first["wall_s"], abs=1e-3)
        assert run["goal"]["met"] == (run["ratio"] <= {"same": 0.05, "one_page": 0.10, "ten_percent": 0.20}[name])
        assert set(run["stage_s"]) == {"extract", "chunk", "embed", "commit", "total"}
    assert report["all_goals_met"] == all(runs[n]["goal"]["met"] for n in ("same", "one_page", "ten_percent"))


def test_profile_summary_finds_steps_by_their_functions(tmp_path):
    """A step is counted from the profile entry of its function's code object, wherever its module lives."""
    import cProfile

    from bench.ingest_profile import profile_summary, profiled_steps
    from documents.language import detect_language

    steps = profiled_steps()
    assert all(callable(f) for functions in steps.values() for f in functions)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(3):
        detect_language("The council met on Tuesday to discuss the river and the new market.")
    profiler.disable()
    profiler.dump_stats(tmp_path / "run.prof")

    summary = profile_summary(tmp_path / "run.prof")["steps"]
    assert set(summary) == set(steps)
    assert summary["detect_language"]["calls"] == 3
    assert summary["detect_language"]["functions"] == [f"{detect_language.__module__}.{detect_language.__qualname__}"]
    assert summary["claim"]["calls"] == summary["commit"]["calls"] == 0
