"""/healthz when the database server itself is stopped (a real PostgreSQL, really stopped)."""
from __future__ import annotations

import pytest
from django.db import connection

from core import pg


@pytest.mark.slow
def test_healthz_503_when_the_database_is_stopped(client, tmp_path, django_db_blocker):
    """Point the app at a second real PostgreSQL, stop that server, and ask /healthz."""
    pgdata = tmp_path / "pgdata"
    socket_dir = pg.ensure_embedded(pgdata)
    saved = dict(connection.settings_dict)
    try:
        with django_db_blocker.unblock():
            connection.close()
            connection.settings_dict.update(HOST=str(socket_dir), NAME="postgres")
            with connection.cursor() as cursor:
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            response = client.get("/healthz")
            assert response.json()["database"]["ok"] is True
            connection.close()
            assert pg.stop_embedded(pgdata) is True
            response = client.get("/healthz")
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "unavailable"
        assert body["database"]["ok"] is False
        assert "database unreachable" in body["database"]["error"]
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        pg.stop_embedded(pgdata)


@pytest.mark.slow
def test_requests_while_the_database_is_down_are_503_with_one_log_line(client, tmp_path, django_db_blocker, caplog,
                                                                       monkeypatch):
    """The API and the pages answer 503 with Retry-After and a readable message, not 500; and 30
    requests within one throttle window log one line about the outage, not a traceback each; the
    next window's first request logs one more line, counting the ones held back."""
    import logging

    from core import unavailable

    now = [1000.0]  # the throttle's clock, moved by this test only: a slow machine cannot end the window
    monkeypatch.setattr(unavailable, "_throttle", unavailable._Throttle(clock=lambda: now[0]))
    pgdata = tmp_path / "pgdata"
    socket_dir = pg.ensure_embedded(pgdata)
    saved = dict(connection.settings_dict)
    client.raise_request_exception = False
    client.cookies["sessionid"] = "s" * 32  # a signed-in browser: its session is read from the database
    try:
        with django_db_blocker.unblock():
            connection.close()
            connection.settings_dict.update(HOST=str(socket_dir), NAME="postgres")
            assert pg.stop_embedded(pgdata) is True
            caplog.set_level(logging.INFO)
            caplog.clear()
            responses = []
            for _ in range(10):
                responses.append(client.get("/api/documents/", HTTP_AUTHORIZATION="Token " + "a" * 40))
                responses.append(client.get("/api/documents/"))
                responses.append(client.get("/library/"))
        for response in responses:
            assert response.status_code == 503, (response.request["PATH_INFO"], response.content[:300])
            assert response["Retry-After"] == "10"
        api = responses[0].json()
        assert api["code"] == "database_unavailable" and "database cannot be reached" in api["message"]
        assert "database cannot be reached" in responses[2].content.decode()
        logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(logged) == 1, [(r.name, r.getMessage()) for r in logged]
        assert logged[0].code == "database_unavailable"
        now[0] += unavailable.LOG_EVERY - 0.5
        with django_db_blocker.unblock():
            assert client.get("/api/documents/").status_code == 503
        assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1  # still the same window
        now[0] += 0.5
        with django_db_blocker.unblock():
            assert client.get("/api/documents/").status_code == 503
        logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(logged) == 2, [(r.name, r.getMessage()) for r in logged]
        assert logged[1].similar_errors_not_logged == 30  # 29 of the first 30 and the one in the same window
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        pg.stop_embedded(pgdata)
