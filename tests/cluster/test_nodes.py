"""Several nodes on this machine: two web nodes (daphne), an indexing node and a chat node, each a
process group with its own data folder (no shared disk), sharing one PostgreSQL, Redis and a real
S3 server (SeaweedFS).

Loopback ports, not network namespaces: each node still reaches the others only through
PostgreSQL, Redis and the bucket (its own RAGSITE_DATA_DIR and MEDIA_ROOT), which is what the
test is about; giving each node a namespace of its own is left (see README).
"""
from __future__ import annotations

import json
import time

import httpx
import pytest
from rest_framework.authtoken.models import Token

from retrieval.models import AiServer, RetrievalSettings
from tests.pdfgen import text_pdf
from tests.processes import ManagedProcess, wait_for
from tests.seaweed import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PAGES = [["Ladders.", "Inspect every ladder before use and never stand on the top two rungs."],
         ["Scaffolding.", "The scaffold must be inspected by a competent person every seven days."]]
ANSWER = ("Scaffolds are inspected every seven days by a competent person [S1]. " * 6).strip()


@pytest.fixture
def cluster(s3_storage, redis_server, monkeypatch, database_url, settings, tmp_path):
    redis_server.client().flushall()
    redis_server.client().config_resetstat()
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    nodes: dict[str, ManagedProcess] = {}

    def env(name: str, **more) -> dict:
        data = tmp_path / name
        return {"RAGSITE_DATA_DIR": str(data), "MEDIA_ROOT": str(data / "media"), "SECRET_KEY": settings.SECRET_KEY,
                "AI_BACKOFF_BASE": "0.01", **more}

    for name in ("web1", "web2"):
        port = free_port()
        node = ManagedProcess(["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ragsite.asgi:application"],
                              database_url=database_url, name=f"cluster-{name}", env=env(name))
        node.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
        nodes[name] = node
    nodes["indexing"] = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="cluster-indexing",
                                       env=env("indexing"))
    nodes["chat"] = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="cluster-chat",
                                   env=env("chat", Q_CLUSTER_NAME="chat", CHAT_WORKERS="2"))
    for name, node in nodes.items():
        node.data_dir = tmp_path / name  # type: ignore[attr-defined]
        node.start()

    def up(url: str) -> bool:
        try:
            return httpx.get(f"{url}/api/me/", timeout=1).status_code == 401
        except httpx.HTTPError:
            return False

    try:
        for name in ("web1", "web2"):
            wait_for(lambda: up(nodes[name].url), timeout=60, what=name, process=nodes[name])
        yield nodes
    finally:
        for node in nodes.values():
            node.stop()


def _merge(text: str, event: dict) -> str:
    """Add a token event to the text so far: a reconnected stream starts again from a snapshot, so
    a delta may overlap what is known, but must agree with it and leave no gap."""
    offset, delta = event["offset"], event["delta"]
    assert offset <= len(text), ("gap", offset, len(text))
    known = text[offset:offset + len(delta)]
    assert delta.startswith(known), ("disagrees", known, delta)
    return text[:offset] + delta if offset + len(delta) > len(text) else text


def test_upload_on_one_node_index_on_another_download_and_stream_after_a_kill(cluster, user, fake_ai, s3_storage,
                                                                               redis_server):
    server = AiServer.objects.create(name="fake", kind="openai", base_url=fake_ai.url, read_timeout=10,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384, "chat": True, "chat_model": "fake-chat"})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server, default_chat_server=server,
                                                  chunk_size=24, chunk_overlap=0)
    token = Token.objects.create(user=user).key
    auth = {"Authorization": f"Token {token}"}
    web1 = httpx.Client(base_url=cluster["web1"].url, headers=auth, timeout=20)
    web2 = httpx.Client(base_url=cluster["web2"].url, headers=auth, timeout=20)

    pdf = text_pdf(PAGES)
    upload = web1.post("/api/documents/", files={"file": ("safety.pdf", pdf, "application/pdf")})
    assert upload.status_code == 201, upload.text
    document_id = upload.json()["id"]
    wait_for(lambda: web2.get(f"/api/documents/{document_id}/").json()["status"] in ("indexed", "failed"),
             timeout=90, what="indexing on the indexing node", process=cluster["indexing"])
    assert web2.get(f"/api/documents/{document_id}/").json()["status"] == "indexed"
    download = web2.get(f"/api/documents/{document_id}/file/", follow_redirects=True)
    assert download.status_code == 200 and download.content == pdf
    for node in cluster.values():  # no node kept the file on its own disk: it is in the bucket only
        assert not [p for p in node.data_dir.rglob("*.pdf")], node.name
    assert len(s3_storage.keys()) == 1 and s3_storage.keys()[0].endswith(".pdf")

    conversation = web1.post("/api/conversations/", json={"title": "Safety"}).json()
    web1.post(f"/api/conversations/{conversation['id']}/documents/", json={"document_id": document_id})
    fake_ai.script_chat({"content": ANSWER, "piece_delay": 0.05})
    posted = web1.post(f"/api/conversations/{conversation['id']}/messages/",
                       json={"content": "How often is the scaffold inspected?"}).json()
    message_id = posted["assistant_message"]["id"]
    stream_path = posted["stream_url"].removeprefix(cluster["web1"].url)

    # Stream from web1; kill -9 web1 halfway; the client reconnects to web2 and gets the rest.
    text, final = "", None
    with httpx.stream("GET", cluster["web1"].url + stream_path, headers=auth, timeout=20) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "token" and event["message_id"] == message_id:
                    text = _merge(text, event)
                    if len(text) > 40:
                        cluster["web1"].kill()
                        break
    assert 0 < len(text) < len(ANSWER) and not cluster["web1"].alive()
    with httpx.stream("GET", cluster["web2"].url + stream_path, headers=auth, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "token" and event["message_id"] == message_id:
                    text = _merge(text, event)
                elif event["type"] == "message.status_updated" and event["message"]["status"] in ("done", "failed"):
                    final = event["message"]["status"]
    assert final == "done"
    assert text == ANSWER  # nothing lost, nothing repeated
    stored = web2.get(f"/api/conversations/{conversation['id']}/messages/{message_id}/").json()
    assert stored["status"] == "done" and stored["metadata"]["citations"][0]["document_id"] == document_id
    commands = redis_server.client().info("commandstats")  # Redis carried the queue of both clusters
    assert commands.get("cmdstat_rpush", {}).get("calls", 0) >= 2, commands
