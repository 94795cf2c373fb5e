"""What /healthz reports, part by part: the database, the vector extension, the task queue, the object
storage (when configured) and the heartbeat of each worker cluster (indexing, chat). Any part down
makes the answer 503, and the body says which and why.

Workers' liveness is django-q2's own heartbeat: each cluster's sentinel refreshes a stat in the
broker's cache every few seconds, and it expires when the cluster dies. The stat does not say which
cluster it is (indexing or chat), so each worker process records its cluster's name once, at spawn
(`cluster_name_record`, a post_spawn handler), under the cluster process's host and pid.
"""
from __future__ import annotations

import logging
import os
import socket

from django.db import connection
from django.utils.translation import gettext

from core.dbcheck import UnsupportedDatabase, require_pgvector

logger = logging.getLogger(__name__)

CLUSTER_NAME_KEY = "ragsite:cluster-name:{host}:{pid}"
CLUSTER_NAME_TTL = 30 * 24 * 3600
STORAGE_TIMEOUT = 3.0  # seconds /healthz waits for the bucket


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


def _queue() -> dict:
    """The broker answers (PostgreSQL's queue table, or Redis) and how many tasks wait."""
    from django_q.brokers import get_broker

    try:
        broker = get_broker()
        if not broker.ping():
            return {"ok": False, "error": "the task queue does not answer"}
        return {"ok": True, "broker": type(broker).__name__, "queued": broker.queue_size()}
    except Exception as exc:  # noqa: BLE001 - the reason is the answer
        return {"ok": False, "error": f"task queue unreachable: {exc.__class__.__name__}: {str(exc).strip()[:300]}"}


def _storage() -> dict | None:
    """The bucket answers a HEAD within STORAGE_TIMEOUT (None: files are on the local disk)."""
    from django.core.files.storage import default_storage

    try:
        from storages.backends.s3 import S3Storage
    except ImportError:  # pragma: no cover - django-storages is a runtime requirement
        return None
    if not isinstance(default_storage, S3Storage):
        return None
    try:
        import boto3
        from botocore.config import Config

        s3 = default_storage
        client = boto3.session.Session().client(
            "s3", endpoint_url=s3.endpoint_url or None, aws_access_key_id=s3.access_key,
            aws_secret_access_key=s3.secret_key, region_name=s3.region_name,
            config=Config(connect_timeout=STORAGE_TIMEOUT, read_timeout=STORAGE_TIMEOUT, retries={"max_attempts": 1},
                          s3={"addressing_style": "path"}))
        client.head_bucket(Bucket=s3.bucket_name)
        return {"ok": True, "bucket": s3.bucket_name}
    except Exception as exc:  # noqa: BLE001 - the reason is the answer
        return {"ok": False, "error": f"object storage unreachable: {exc.__class__.__name__}: {str(exc).strip()[:300]}"}


def cluster_name_record(**kwargs) -> None:
    """django-q2 post_spawn: remember which cluster (indexing "ragsite" or "chat") the process that
    owns this worker is, for /healthz (the worker's parent is the sentinel, its parent the cluster)."""
    from django.core.cache import cache
    from django_q.conf import Conf

    try:
        with open(f"/proc/{os.getppid()}/stat") as handle:
            cluster_pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        cache.set(CLUSTER_NAME_KEY.format(host=socket.gethostname(), pid=cluster_pid), Conf.CLUSTER_NAME,
                  CLUSTER_NAME_TTL)
    except Exception:  # never keep a worker from starting; /healthz then says the name is unknown
        logger.warning("could not record the worker's cluster name", exc_info=True)
    finally:
        connection.close()


def _workers() -> dict[str, dict]:
    """One part per cluster ragsite runs: `worker` (indexing) and `chat_worker`."""
    from django.conf import settings
    from django.core.cache import cache
    from django_q.conf import Conf
    from django_q.status import Stat

    names = {Conf.PREFIX: "worker", **{name: f"{name}_worker" for name in settings.Q_CLUSTER.get("ALT_CLUSTERS", {})}}
    try:
        clusters = Stat.get_all()
    except Exception as exc:  # noqa: BLE001
        return {part: {"ok": False, "error": f"cannot read the worker heartbeat: {exc}"} for part in names.values()}
    found: dict[str, list] = {part: [] for part in names.values()}
    unnamed = []
    for stat in clusters:
        name = cache.get(CLUSTER_NAME_KEY.format(host=stat.host, pid=stat.pid))
        (found[names[name]] if name in names else unnamed).append(stat)
    # Where workers cannot say their cluster's name (no /proc), any cluster stands for each.
    naming_works = any(found.values())
    report = {}
    for cluster_name, part in names.items():
        stats = found[part] or ([] if naming_works else unnamed)
        ready = [s for s in stats if (getattr(s, "workers", None) or []) and s.status in ("Idle", "Working")]
        if not stats:
            indexing = cluster_name == Conf.PREFIX
            start = "python manage.py qcluster" if indexing else f"Q_CLUSTER_NAME={cluster_name} python manage.py qcluster"
            error = {"error": (gettext("no worker is running (start it with `%(start)s`)") if indexing else
                               gettext("no %(cluster)s worker is running (start it with `%(start)s`)"))
                     % {"cluster": cluster_name, "start": start}}
        elif not ready:
            error = {"error": gettext("the worker is starting or stopping; no worker process is ready yet")}
        else:
            error = {}
        report[part] = {
            "ok": bool(ready), **error,
            "clusters": [{"cluster_id": str(s.cluster_id), "host": s.host, "status": s.status,
                          "workers": len(getattr(s, "workers", []) or []), "uptime_s": round(s.uptime(), 1)}
                         for s in stats],
        }
    return report


def health_report() -> tuple[bool, dict]:
    """(healthy, parts): every part's `ok`, and `error` for one that is down."""
    report = {"database": _database()}
    if report["database"]["ok"]:
        report["vector"] = _vector()
        report["queue"] = _queue()
        workers = _workers()
    else:
        report["vector"] = {"ok": False, "error": "database unreachable"}
        report["queue"] = {"ok": False, "error": "database unreachable"}
        workers = {"worker": {"ok": False, "error": "database unreachable"},
                   "chat_worker": {"ok": False, "error": "database unreachable"}}
    storage = _storage()
    if storage is not None:
        report["storage"] = storage
    report.update(workers)
    healthy = all(part["ok"] for part in report.values())
    return healthy, report
