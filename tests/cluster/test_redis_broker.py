"""core.broker.ReconnectingRedisBroker against a real Redis that restarts: a pop while Redis is
away answers "nothing yet" instead of raising (django-q2's pusher would sleep 10 s and exit),
and the pops after it take the tasks queued once Redis is back."""
from __future__ import annotations

import pytest

from core.broker import ReconnectingRedisBroker


@pytest.fixture
def broker(redis_server, settings):
    from django_q.conf import Conf

    redis_server.client().flushall()
    previous = Conf.REDIS
    Conf.REDIS = redis_server.url  # django-q2 reads its broker's address from its Conf
    try:
        yield ReconnectingRedisBroker(list_key="reconnect-test")
    finally:
        Conf.REDIS = previous


def test_a_pop_while_redis_is_away_waits_and_the_next_ones_take_new_tasks(broker, redis_server):
    broker.enqueue("before")
    assert broker.dequeue() == [(None, b"before")]
    redis_server.halt()
    try:
        assert broker.dequeue() is None  # no exception: the pusher calling it goes on
        assert broker.dequeue() is None
        assert broker._lost_since is not None
    finally:
        redis_server.start()
    broker.enqueue("after")
    assert broker.dequeue() == [(None, b"after")]
    assert broker._lost_since is None
