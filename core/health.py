"""What /healthz reports: the database, the vector extension and the worker's heartbeat."""
from __future__ import annotations

import logging

from django.db import connection

from core.dbcheck import UnsupportedDatabase, require_pgvector

logger = logging.getLogger(__name__)


def _database() -> dict:
    try:
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('server_version')")
            version = cursor.fetchone()[0]
        return {"ok": True, "server_version": version}
    except Exception as exc:  # any failure to reach the database is the answer
        connection.close_if_unusable_or_obsolete()
        return {"ok": False, "error": f"database unreachable: {exc.__class__.__name__}: {str(exc).strip()[:300]}"}


def _vector() -> dict:
    try:
        return {"ok": True, "version": require_pgvector(connection)}
    except UnsupportedDatabase as exc:
        return {"ok": False, "error": str(exc)}


def _worker() -> dict:
    from django_q.status import Stat

    try:
        clusters = Stat.get_all()
    except Exception as exc:
        return {"ok": False, "error": f"cannot read the worker heartbeat: {exc}"}
    if not clusters:
        return {"ok": False, "error": "no worker is running (start it with `python manage.py qcluster`)"}
    ready = [s for s in clusters if (getattr(s, "workers", None) or []) and s.status in ("Idle", "Working")]
    return {
        "ok": bool(ready),
        **({} if ready else {"error": "the worker is starting or stopping; no worker process is ready yet"}),
        "clusters": [
            {"cluster_id": str(s.cluster_id), "status": s.status, "workers": len(getattr(s, "workers", []) or []),
             "uptime_s": round(s.uptime(), 1)}
            for s in clusters
        ],
    }


def health_report() -> tuple[bool, dict]:
    report = {"database": _database()}
    if report["database"]["ok"]:
        report["vector"] = _vector()
        report["worker"] = _worker()
    else:
        report["vector"] = {"ok": False, "error": "database unreachable"}
        report["worker"] = {"ok": False, "error": "database unreachable"}
    healthy = all(part["ok"] for part in report.values())
    return healthy, report
