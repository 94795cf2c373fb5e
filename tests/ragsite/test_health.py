"""/healthz: the database, pgvector and the worker; 503 with the reason when one is down."""
from __future__ import annotations

import pytest
from tests.processes import wait_for

pytestmark = pytest.mark.django_db


def test_healthz_reports_503_without_a_worker(client):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["database"]["ok"] is True
    assert body["vector"]["ok"] is True and body["vector"]["version"].startswith("0.")
    assert body["worker"]["ok"] is False
    assert "no worker" in body["worker"]["error"]


@pytest.mark.slow
def test_healthz_200_only_with_both_real_worker_clusters_running(client, qcluster, database_url):
    """Each cluster is a part of its own: the indexing worker alone is not enough (answers would
    never come), and the body names the one missing (issue #29)."""
    from tests.processes import ManagedProcess

    response = wait_for(lambda: (r := client.get("/healthz")).json()["worker"]["ok"] and r, timeout=60,
                        what="the indexing worker's heartbeat", process=qcluster)
    assert response.status_code == 503
    body = response.json()
    assert body["chat_worker"]["ok"] is False and "no chat worker is running" in body["chat_worker"]["error"]
    assert body["queue"]["ok"] is True and body["queue"]["queued"] >= 0
    chat = ManagedProcess(["manage.py", "qcluster"], database_url=database_url, name="qcluster-chat",
                          env={"Q_CLUSTER_NAME": "chat"}).start()
    try:
        response = wait_for(lambda: (r := client.get("/healthz")).status_code == 200 and r, timeout=90,
                            what="healthz 200", process=chat)
    finally:
        chat.stop()
    body = response.json()
    assert body["status"] == "ok"
    assert set(body) == {"status", "database", "vector", "queue", "worker", "chat_worker", "embedder"}
    for part in ("worker", "chat_worker"):
        assert any(c["workers"] >= 1 and c["status"] in ("Idle", "Working") for c in body[part]["clusters"]), part
    # one cluster each: the chat cluster is not counted as the indexing one, nor the other way round
    assert body["worker"]["clusters"][0]["cluster_id"] != body["chat_worker"]["clusters"][0]["cluster_id"]
