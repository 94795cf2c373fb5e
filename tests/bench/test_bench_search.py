"""bench/search.py runs end to end on a small synthetic corpus and prints sane JSON."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.processes import run_in_own_group

REPO = Path(__file__).resolve().parents[2]

# A last resort against a hang, far above a run on a busy machine (the migration alone took 55 s there):
# the benchmark and its database run in a process group of their own, stopped as a whole on timeout.
BENCH_TIMEOUT = 900


@pytest.mark.slow
@pytest.mark.timeout(BENCH_TIMEOUT + 300)
def test_search_bench_small(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "RAGSITE_DATA_DIR", "DJANGO_SETTINGS_MODULE", "TEST_DATABASE_NAME"}}
    out_file = tmp_path / "search.json"
    proc = run_in_own_group(
        [sys.executable, "bench/search.py", "--chunks", "3000", "--queries", "20", "--json-out", str(out_file),
         "--variant-queries", "10", "--legacy-queries", "10", "--fts-budgets", "0,100", "--warmup", "3"],
        env=env, timeout=BENCH_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert json.loads(out_file.read_text()) == result

    assert result["config"]["chunks"] == 3000
    assert result["ingest"]["bulk_rows"] + result["ingest"]["holdout_rows"] == 3000
    assert result["ingest"]["hnsw_build_s"] > 0 and result["ingest"]["bulk_vectors_rows_per_s"] > 0
    assert result["ingest"]["with_hnsw_vectors_rows_per_s"] > 0
    assert result["postgres"]["settings"]["pgvector"]

    for name in ("unfiltered", "owner_1pct", "conversation_1pct"):
        scope = result["scopes"][name]
        labels = ["default"] + (["exact", "hnsw"] if name != "unfiltered" else [])
        for label in labels:
            m = scope[label]
            assert 0.0 <= m["recall_at_10"] <= 1.0
            for kind in ("vector", "fts", "hybrid"):
                assert m[kind]["n"] == 20
                assert 0 < m[kind]["p50_ms"] <= m[kind]["p95_ms"]
            assert m["fts_hits_mean"] > 0, "the full-text queries find their topic words"
        assert scope["retrieve"]["p95_ms"] > 0
        # The exact path is exact.
        if name != "unfiltered":
            assert scope["exact"]["vector_method"] == ["exact"] and scope["exact"]["recall_at_10"] == 1.0
            assert scope["hnsw"]["vector_method"] == ["hnsw"]

    # The full-text match budget: 0 matches every query word; a small budget leaves common words to the rank.
    variants = result["variants"]
    for name in ("unfiltered", "owner_1pct", "conversation_1pct"):
        assert variants["fts_match_budget_0"][name]["words_ranked_only_mean"] == 0
        assert variants["fts_match_budget_100"][name]["words_ranked_only_mean"] > 0
        assert 0 <= variants["fts_match_budget_100"][name]["fts_top40_overlap_with_all_words"] <= 1
        assert variants["fts_previous_release_sql"][name]["fts"]["n"] == 10
        # the other ranking, compared with the default one on the same questions
        other = variants["fts_ranking_ts_rank_cd"][name]
        assert other["fts"]["n"] == 10 and 0 <= other["top40_overlap_with_default_ranking"] <= 1

    plan = result["explain"]["owner_1pct/hnsw/vector"][0]
    assert plan["execution_ms"] > 0 and plan["plan"]
    assert set(result["goals"]) == {"hybrid_p95_ms", "filtered_recall_at_10", "hybrid_over_vector_p95"}
    for goal in result["goals"].values():
        assert isinstance(goal["met"], bool) and goal["at_goal_size"] is False


@pytest.mark.slow
@pytest.mark.timeout(BENCH_TIMEOUT + 300)
def test_search_bench_with_collections(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "RAGSITE_DATA_DIR", "DJANGO_SETTINGS_MODULE", "TEST_DATABASE_NAME"}}
    proc = run_in_own_group(
        [sys.executable, "bench/search.py", "--chunks", "3000", "--queries", "20", "--warmup", "3",
         "--no-variants", "--collections", "10", "--readable-collections", "2"],
        env=env, timeout=BENCH_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    scope = result["scopes"]["collections_2"]
    # bench-small's own rows (1%) plus two of ten collections holding the other 99%: about a fifth.
    assert 0.1 < scope["vectors"] / 3000 < 0.35
    for label in ("default", "exact", "hnsw"):
        assert scope[label]["hybrid"]["n"] == 20 and scope[label]["fts_hits_mean"] > 0
    # Recall is against the exact top 10 of the scope's own rows: nothing outside the scope comes back.
    assert scope["exact"]["recall_at_10"] == 1.0
    assert scope["retrieve"]["p95_ms"] > 0
    goal = result["goals"]["collections_hybrid_over_owner_p95"]
    assert goal["value"] > 0 and isinstance(goal["met"], bool)
    assert result["goals"]["collections_recall_at_10"]["value"] >= 0.9
    # Exact scan vs HNSW for collection scopes of 1, 2, 3, 5 and 8 of the 10 collections.
    swept = result["exact_vs_hnsw_collection_sweep"]
    assert [e["collections"] for e in swept] == [1, 2, 3, 5, 8]
    assert [e["scope_vectors"] for e in swept] == sorted(e["scope_vectors"] for e in swept)
    for entry in swept:
        assert entry["exact"]["vector_method"] == ["exact"] and entry["exact"]["recall_at_10"] == 1.0
        assert entry["hnsw"]["vector_method"] == ["hnsw"] and 0 <= entry["hnsw"]["recall_at_10"] <= 1
        assert entry["exact"]["cpu_ms_per_search"] > 0 and entry["hnsw"]["cpu_ms_per_search"] > 0
        assert entry["cheaper_by_cpu"] in ("exact", "hnsw")
    assert result["retrieval_settings"]["exact_scan_max_collections"] == 8000
