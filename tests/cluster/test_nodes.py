"""Several nodes on this machine: two web nodes (daphne), one or two indexing nodes and a chat node,
each a process group with its own data folder (no shared disk), sharing one PostgreSQL, Redis and a
real S3 server (SeaweedFS).

Proven here: upload on one web node, indexing on the indexing node, download from the other web
node; a stream followed across a SIGKILL of its web node; a SIGKILL of the indexing node
mid-document (the other indexing node finishes it, no duplicate chunks); a restart of Redis and
of PostgreSQL while idle (every node goes on by itself).

Each node runs in a network namespace of its own with its own address (tests/netns.py; the
test checks that a node cannot reach this machine's loopback), reaching Redis, SeaweedFS and the
AI server on the bridge's address and PostgreSQL through its Unix socket; each has its own
RAGSITE_DATA_DIR and MEDIA_ROOT (no shared disk). Where namespaces are not available (not root,
no iproute2, RAGSITE_TEST_NETNS=0) the nodes listen on loopback ports instead (README, "Running
on several machines").
"""
from __future__ import annotations

import json
import time

import httpx
import pytest

from documents.models import Chunk, Document
from identity.tokens import token_create
from retrieval.models import AiServer, ChunkEmbedding, RetrievalSettings
from tests.pdfgen import text_pdf
from tests.processes import ManagedProcess, stop_all, wait_for
from tests.seaweed import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PAGES = [["Ladders.", "Inspect every ladder before use and never stand on the top two rungs."],
         ["Scaffolding.", "The scaffold must be inspected by a competent person every seven days."]]
LEASE = 8  # seconds (INDEX_LEASE_SECONDS of the indexing nodes)
ANSWER = ("Scaffolds are inspected every seven days by a competent person [S1]. " * 6).strip()


def _cluster(*, indexing: tuple[str, ...], database_url, settings, tmp_path, redis_server, monkeypatch, node_network):
    redis_server.client().flushall()
    redis_server.client().config_resetstat()
    network = node_network.network
    monkeypatch.setenv("REDIS_URL", redis_server.url_on(node_network.host))
    nodes: dict[str, ManagedProcess] = {}

    def place(name: str) -> tuple[str, list[str]]:
        """The node's address and the command prefix that puts it in its namespace."""
        if network is None:
            return "127.0.0.1", []
        return network.add(name), network.command(name)

    def env(name: str, **more) -> dict:
        data = tmp_path / name
        # A short lease and a look every second: a dead indexing node's document is taken over
        # within seconds instead of the production defaults' ten minutes.
        return {"RAGSITE_DATA_DIR": str(data), "MEDIA_ROOT": str(data / "media"), "SECRET_KEY": settings.SECRET_KEY,
                "AI_BACKOFF_BASE": "0.01", "INDEX_LEASE_SECONDS": str(LEASE), "INDEX_RECOVERY_INTERVAL": "1", **more}

    for name in ("web1", "web2"):
        address, prefix = place(name)
        port = 8000 if network is not None else free_port()  # a namespace has every port to itself
        node = ManagedProcess(["-m", "daphne", "-b", address, "-p", str(port), "ragsite.asgi:application"],
                              database_url=database_url, name=f"cluster-{name}",
                              env=env(name, ALLOWED_HOSTS=address), prefix=prefix)
        node.url = f"http://{address}:{port}"  # type: ignore[attr-defined]
        nodes[name] = node
    for name in indexing:
        nodes[name] = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name=f"cluster-{name}",
                                     env=env(name, WORKERS="1" if len(indexing) > 1 else "2"), prefix=place(name)[1])
    nodes["chat"] = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="cluster-chat",
                                   env=env("chat", Q_CLUSTER_NAME="chat", CHAT_WORKERS="2"), prefix=place("chat")[1])
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
        stop_all(nodes.values())


@pytest.fixture
def cluster(s3_storage, redis_server, monkeypatch, database_url, settings, tmp_path, node_network):
    yield from _cluster(indexing=("indexing",), database_url=database_url, settings=settings, tmp_path=tmp_path,
                        redis_server=redis_server, monkeypatch=monkeypatch, node_network=node_network)


@pytest.fixture
def cluster_two_indexing(s3_storage, redis_server, monkeypatch, database_url, settings, tmp_path, node_network):
    yield from _cluster(indexing=("indexing1", "indexing2"), database_url=database_url, settings=settings,
                        tmp_path=tmp_path, redis_server=redis_server, monkeypatch=monkeypatch,
                        node_network=node_network)


def _ai_and_token(*, fake_ai, user, **retrieval) -> dict:
    server = AiServer.objects.create(name="fake", kind="openai", base_url=fake_ai.url, read_timeout=10,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384, "chat": True, "chat_model": "fake-chat"})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server, default_chat_server=server,
                                                  chunk_size=24, chunk_overlap=0, **retrieval)
    return {"Authorization": f"Token {token_create(user=user, name='test').key}"}


def _merge(text: str, event: dict) -> str:
    """Add a token event to the text so far: a reconnected stream starts again from a snapshot, so
    a delta may overlap what is known, but must agree with it and leave no gap."""
    offset, delta = event["offset"], event["delta"]
    assert offset <= len(text), ("gap", offset, len(text))
    known = text[offset:offset + len(delta)]
    assert delta.startswith(known), ("disagrees", known, delta)
    return text[:offset] + delta if offset + len(delta) > len(text) else text


def test_upload_on_one_node_index_on_another_download_and_stream_after_a_kill(cluster, user, fake_ai, s3_storage,
                                                                               redis_server, node_network):
    network = node_network.network
    if network is not None:  # each node has an address of its own and no way to this machine's loopback
        assert len({node.url for node in (cluster["web1"], cluster["web2"])}) == 2
        assert network.can_connect("web1", node_network.host, redis_server.port)
        assert not network.can_connect("web1", "127.0.0.1", redis_server.port)
        assert not network.can_connect("indexing", "127.0.0.1", s3_storage.server.s3_port)
        assert network.can_connect("indexing", node_network.host, s3_storage.server.s3_port)
    auth = _ai_and_token(fake_ai=fake_ai, user=user)
    web1 = httpx.Client(base_url=cluster["web1"].url, headers=auth, timeout=120)
    web2 = httpx.Client(base_url=cluster["web2"].url, headers=auth, timeout=120)

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
    with httpx.stream("GET", cluster["web1"].url + stream_path, headers=auth, timeout=120) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "token" and event["message_id"] == message_id:
                    text = _merge(text, event)
                    if len(text) > 40:
                        cluster["web1"].kill()
                        break
    assert 0 < len(text) < len(ANSWER) and not cluster["web1"].alive()
    with httpx.stream("GET", cluster["web2"].url + stream_path, headers=auth, timeout=120) as response:
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


def _stream_to_the_end(url: str, *, auth: dict, message_id: int) -> tuple[str, str | None]:
    text, final = "", None
    with httpx.stream("GET", url, headers=auth, timeout=120) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "token" and event["message_id"] == message_id:
                    text = _merge(text, event)
                elif event["type"] == "message.status_updated" and event["message"]["status"] in ("done", "failed"):
                    final = event["message"]["status"]
                    # Answered before the stream opened: it starts with the final state (chat/sse.py).
                    text = text or event["message"]["content"]
                    break
    return text, final


def _indexed_by(node: ManagedProcess, document_id: int) -> bool:
    """The node's worker took the document's indexing task (django-q2 logs each task it starts)."""
    return f"processing index document {document_id} '" in node.log()


def test_indexing_node_killed_mid_document_then_redis_and_postgresql_restarted(cluster_two_indexing, user, fake_ai,
                                                                                redis_server, restart_postgres):
    cluster = cluster_two_indexing
    auth = _ai_and_token(fake_ai=fake_ai, user=user, embed_batch_size=1)
    web1 = httpx.Client(base_url=cluster["web1"].url, headers=auth, timeout=120)
    web2 = httpx.Client(base_url=cluster["web2"].url, headers=auth, timeout=120)

    # Kill -9 the indexing node mid-document: the other one takes it over once the lease lapses.
    fake_ai.fail_next("/v1/embeddings", {"delay_first_byte": 0.3}, times=1000)  # one chunk per batch, slowly
    lines = [f"Rule {i}: every harness is checked for wear before the shift number {i} begins on site."
             for i in range(12)]
    upload = web1.post("/api/documents/", files={"file": ("harness.pdf", text_pdf([lines]), "application/pdf")})
    assert upload.status_code == 201, upload.text
    document_id = upload.json()["id"]
    wait_for(lambda: Document.objects.filter(pk=document_id, status="processing", chunks_embedded__gte=2).exists(),
             timeout=90, what="the document half embedded")
    first = wait_for(lambda: next((n for n in ("indexing1", "indexing2") if _indexed_by(cluster[n], document_id)),
                                  None), timeout=10, what="the node indexing it")
    other = "indexing2" if first == "indexing1" else "indexing1"
    cluster[first].kill()
    document = Document.objects.get(pk=document_id)
    assert document.status == "processing" and 0 < document.chunks_embedded < document.chunks_total
    wait_for(lambda: web2.get(f"/api/documents/{document_id}/").json()["status"] in ("indexed", "failed"),
             timeout=LEASE + 60, what="the other indexing node finishing it", process=cluster[other])
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    assert document.index_attempts == 2 and _indexed_by(cluster[other], document_id)
    chunks = Chunk.objects.filter(document=document)  # no duplicate chunks, one vector each
    assert chunks.count() == document.chunk_count == document.chunks_total > 2
    assert len(set(chunks.values_list("chunk_index", flat=True))) == chunks.count()
    assert ChunkEmbedding.objects.filter(document=document).count() == chunks.count()
    fake_ai.reset()

    # Restart Redis and PostgreSQL while idle: every node goes on without a restart of its own.
    pids = {name: node.proc.pid for name, node in cluster.items() if name != first}
    redis_server.restart(down=2)
    restart_postgres(down=2)
    upload = web2.post("/api/documents/", files={"file": ("safety.pdf", text_pdf(PAGES), "application/pdf")})
    assert upload.status_code == 201, upload.text
    second_id = upload.json()["id"]
    wait_for(lambda: web1.get(f"/api/documents/{second_id}/").json()["status"] in ("indexed", "failed"),
             timeout=90, what="indexing after the restarts", process=cluster[other])
    assert web1.get(f"/api/documents/{second_id}/").json()["status"] == "indexed"
    conversation = web1.post("/api/conversations/", json={"title": "After the restarts"}).json()
    web1.post(f"/api/conversations/{conversation['id']}/documents/", json={"document_id": second_id})
    fake_ai.script_chat({"content": ANSWER, "piece_delay": 0.01})
    posted = web1.post(f"/api/conversations/{conversation['id']}/messages/",
                       json={"content": "How often is the scaffold inspected?"}).json()
    message_id = posted["assistant_message"]["id"]
    stream_path = posted["stream_url"].removeprefix(cluster["web1"].url)
    text, final = _stream_to_the_end(cluster["web2"].url + stream_path, auth=auth, message_id=message_id)
    assert final == "done" and text == ANSWER
    assert {name: node.proc.pid for name, node in cluster.items() if node.alive()} == pids
    for name in pids:  # not even a part of a node was started again (django-q2 logs "reincarnated ...")
        assert "reincarnated" not in cluster[name].log(), name
