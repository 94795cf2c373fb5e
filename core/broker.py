"""django-q2's brokers as ragsite uses them: the ORM broker woken by PostgreSQL NOTIFY, and the
Redis broker riding out a Redis restart.

ListeningOrmBroker (one machine): the ORM broker, woken by NOTIFY instead of sleeping between polls.

The chat cluster uses it (`Q_CLUSTER["ALT_CLUSTERS"]["chat"]["broker_class"]`): a trigger on
django-q2's queue table (migration chat 0002) sends `NOTIFY ragsite_q_<queue>` when a task is
queued, so an answer starts within a few milliseconds of the question while an idle worker
makes one query per `poll` seconds (the fallback) instead of dozens.
"""
from __future__ import annotations

import logging
import os
import time

import psycopg
import redis
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.conf import Conf
from psycopg import sql

from core.layers import conninfo_for

logger = logging.getLogger(__name__)

RECONNECT_PAUSE = 0.5  # seconds between pops while Redis is away (ReconnectingRedisBroker)


def notify_channel(list_key: str) -> str:
    return f"ragsite_q_{list_key}"[:63]


class ListeningOrmBroker(ORM):
    _listener: psycopg.Connection | None = None
    _listener_pid: int | None = None

    def dequeue(self):
        self._listen()
        tasks = self._claim()
        if tasks:
            return tasks
        self._wait(Conf.POLL)
        return None

    def _claim(self) -> list:
        """django-q2's ORM dequeue without its sleep: lock up to BULK due tasks for this cluster."""
        queue = self.get_connection()
        claimed = []
        for task in queue.filter(key=self.list_key, lock__lt=timezone.now())[: Conf.BULK]:
            if queue.filter(id=task.id, lock=task.lock).update(lock=self.timeout(task)):
                claimed.append((task.pk, task.payload))
        return claimed

    def _listen(self) -> None:
        if self._listener is not None and self._listener_pid == os.getpid() and not self._listener.closed:
            return
        try:
            conn = psycopg.connect(conninfo_for(Conf.ORM or "default"), autocommit=True)
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(notify_channel(self.list_key))))
        except psycopg.Error:
            logger.warning("cannot LISTEN for queued tasks; polling every %s s", Conf.POLL, exc_info=True)
            self._listener = None
            return
        self._listener, self._listener_pid = conn, os.getpid()

    def _wait(self, seconds: float) -> None:
        if self._listener is None:
            time.sleep(seconds)
            return
        try:
            for _ in self._listener.notifies(timeout=seconds, stop_after=1):
                pass
        except psycopg.Error:
            logger.warning("the queue listener connection failed; reconnecting", exc_info=True)
            self._listener.close()
            self._listener = None


class ReconnectingRedisBroker(Redis):
    """django-q2's Redis broker (several machines) whose pop waits out a lost Redis connection.

    django-q2's pusher gives up on the first failed pop: it logs, sleeps 10 s and exits, and the
    sentinel starts another. A Redis restart thus left every node deaf to new tasks for 10 s or
    more (found by tests/cluster). Here a failed pop waits a moment and the next one reconnects
    (redis-py's pool opens a new connection), so tasks flow again as soon as Redis is back.
    """

    _lost_since: float | None = None

    def dequeue(self):
        try:
            tasks = super().dequeue()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            if self._lost_since is None:
                self._lost_since = time.monotonic()
                logger.warning("lost the Redis queue (%s); retrying", exc)
            time.sleep(RECONNECT_PAUSE)
            return None
        if self._lost_since is not None:
            logger.warning("the Redis queue is back after %.1f s", time.monotonic() - self._lost_since)
            self._lost_since = None
        return tasks
