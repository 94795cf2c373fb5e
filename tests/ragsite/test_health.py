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
def test_healthz_200_with_a_real_worker_running(client, qcluster):
    response = wait_for(lambda: (r := client.get("/healthz")).status_code == 200 and r, timeout=60,
                        what="healthz 200", process=qcluster)
    body = response.json()
    assert body["status"] == "ok"
    assert any(c["workers"] >= 1 and c["status"] in ("Idle", "Working") for c in body["worker"]["clusters"])


