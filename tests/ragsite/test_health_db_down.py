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
