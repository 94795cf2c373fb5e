"""Embedding-server protocol benchmark: what ragsite's side of `POST /v1/embeddings` costs per chunk.

    nice -n 10 .venv/bin/python bench/embed_server.py [--texts 512] [--batches 8,32,64,128]
                                                      [--concurrency 1,2,4] [--encoding float,base64]
                                                      [--json-out PATH]

For a GPU embedding server (text-embeddings-inference, vLLM) the model's time is the server's; what
stays on ragsite's machine is the protocol: building the request, sending ~2 KB of text per chunk,
reading back 384 numbers per chunk as JSON (or base64) and checking them. This measures that with
the product's own client (`retrieval.ai.embeddings.OpenAIEmbeddingClient`) against the repository's
OpenAI-compatible test server (tests/fakeai.py, run in a process of its own so that it does not share
the client's interpreter), for each batch size (texts per request: the retrieval settings' "embed
batch size") and concurrency (requests in flight: one per indexing worker; threads here, each with
its own client, as workers each have theirs).

Per combination: chunks/s, request latency p50/p95, and the CPU seconds per 1,000 chunks of the
client process and of the test server. The client's CPU per chunk bounds how many chunks per second
one indexing worker can hand to a GPU server (1 / client CPU per chunk); the fake server's own
figures are not a GPU's. Texts are chunks of ~512 model tokens of English prose (2,000–2,400
characters). Progress goes to stderr, the JSON result to stdout.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, XQUAD_EN, log, machine_info
from bench.ingest_data import prose_sentences

SERVER = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.fakeai import FakeAIServer
server = FakeAIServer(dim=384).start()
print(server.url, flush=True)
sys.stdin.read()
server.stop()
"""


def chunk_texts(count: int) -> list[str]:
    """`count` texts of about 512 model tokens (2,000–2,400 characters of English sentences)."""
    sentences = prose_sentences(XQUAD_EN)
    texts: list[str] = []
    current: list[str] = []
    i = 0
    while len(texts) < count:
        current.append(sentences[i % len(sentences)])
        i += 1
        if sum(len(s) + 1 for s in current) >= 2000 + (len(texts) % 5) * 100:
            texts.append(" ".join(current))
            current = []
    return texts


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process `pid` (from /proc)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(url: str, server_pid: int, texts: list[str], *, batch: int, concurrency: int, encoding: str) -> dict:
    from retrieval.ai.base import ServerConfig
    from retrieval.ai.embeddings import OpenAIEmbeddingClient

    cfg = ServerConfig(kind="openai", base_url=url, embedding_model="fake-embed", embedding_dim=384,
                       chat_model="", name="bench", connect_timeout=5.0, read_timeout=120.0, max_retries=0)
    clients = [OpenAIEmbeddingClient(cfg, batch_size=batch, encoding_format=encoding) for _ in range(concurrency)]
    for client in clients:  # connections open, first request's costs paid
        client.embed_passages(texts[:1])
    shares = [texts[i::concurrency] for i in range(concurrency)]
    latencies: list[float] = []
    lock = threading.Lock()

    def work(client, share: list[str]) -> None:
        for start in range(0, len(share), batch):
            t0 = time.perf_counter()
            vectors = client.embed_passages(share[start:start + batch])
            took = time.perf_counter() - t0
            assert vectors.shape == (len(share[start:start + batch]), 384)
            with lock:
                latencies.append(took)

    threads = [threading.Thread(target=work, args=(c, s)) for c, s in zip(clients, shares)]
    cpu0, server0, t0 = time.process_time(), process_cpu(server_pid), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - t0
    client_cpu, server_cpu = time.process_time() - cpu0, process_cpu(server_pid) - server0
    for client in clients:
        client.close()
    latencies.sort()
    return {
        "batch": batch, "concurrency": concurrency, "encoding": encoding, "chunks": len(texts),
        "requests": len(latencies), "seconds": round(wall, 3), "chunks_per_s": round(len(texts) / wall, 1),
        "request_ms": {"p50": round(1000 * statistics.median(latencies), 1),
                       "p95": round(1000 * latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 1)},
        "client_cpu_s_per_1000_chunks": round(1000 * client_cpu / len(texts), 3),
        "server_cpu_s_per_1000_chunks": round(1000 * server_cpu / len(texts), 3),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/embed_server.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=512, help="chunks per combination (default 512)")
    parser.add_argument("--batches", default="8,32,64,128", help="texts per request (default 8,32,64,128)")
    parser.add_argument("--concurrency", default="1,2,4", help="requests in flight (default 1,2,4)")
    parser.add_argument("--encoding", default="float,base64", help="encoding_format values (default float,base64)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    texts = chunk_texts(args.texts)
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(REPO)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    try:
        url = server.stdout.readline().strip()
        log(f"test server at {url}; {len(texts)} texts of {min(map(len, texts))}-{max(map(len, texts))} characters")
        runs = []
        for encoding in args.encoding.split(","):
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                for batch in (int(b) for b in args.batches.split(",")):
                    result = run_one(url, server.pid, texts, batch=batch, concurrency=concurrency, encoding=encoding)
                    log(f"{encoding} batch {batch} x{concurrency}: {result['chunks_per_s']} chunks/s, "
                        f"p95 {result['request_ms']['p95']} ms, client CPU "
                        f"{result['client_cpu_s_per_1000_chunks']} s / 1,000 chunks")
                    runs.append(result)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    report = {"benchmark": "embed-server-protocol", "machine": machine_info(),
              "load_average": [round(x, 2) for x in __import__("os").getloadavg()], "runs": runs}
    text = json.dumps(report, indent=2)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
