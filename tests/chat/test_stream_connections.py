"""An open SSE stream holds no database connection while it waits (issue #20).

Under daphne each request runs in its own thread (Django's ASGI handler gives every request a
thread-sensitive context), and a connection opened there stays open until the response ends:
50 streams open for an answer would hold 50 PostgreSQL connections, a third of what one
server allows. The streams here go through Django's real ASGI handler, each in its own context
as under daphne; the count comes from pg_stat_activity.
"""
from __future__ import annotations

import asyncio
import json
import uuid

import psycopg
import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application
from django.db import connection

from chat.events import writer
from chat.services import conversation_create, message_send
from identity.tokens import token_create
from tests.chat.helpers import run

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

STREAMS = 4  # opened after the first


def _backends(params: dict) -> int:
    """Connections this test's process opened to the test database (by their application name), other
    than the one asking: a worker or server of another test connecting meanwhile is not counted."""
    with psycopg.connect(**params, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name = %s",
            [params["application_name"]]).fetchone()[0]


async def _settled(params: dict) -> int:
    """`_backends` once it holds still: the same count twice, half a second apart. A connection opening or
    closing just then (the channel layer's second one coming up as the first stream opens) is not counted
    half-way; a connection each waiting stream held would stay and be counted."""
    count = await asyncio.to_thread(_backends, params)
    for _ in range(240):  # 120 s at most
        await asyncio.sleep(0.5)
        again = await asyncio.to_thread(_backends, params)
        if again == count:
            return count
        count = again
    return count


@pytest.fixture
def tagged_connections():
    """New connections of this process carry an application name of their own while the test runs."""
    options = connection.settings_dict.setdefault("OPTIONS", {})
    before = options.get("application_name")
    options["application_name"] = f"stream-test-{uuid.uuid4().hex[:12]}"
    connection.close()
    yield options["application_name"]
    if before is None:
        options.pop("application_name", None)
    else:
        options["application_name"] = before
    connection.close()


def test_waiting_streams_hold_no_database_connection(user, tagged_connections):
    conversation = conversation_create(user=user, document_ids=[])
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Still there?", enqueue=False)
    token = token_create(user=user, name="test").key
    path = f"/api/conversations/{conversation.pk}/messages/{answer.pk}/stream/"
    params = connection.get_connection_params()
    connection.close()  # the test's own connection is not counted
    # Nor the stream writer's: an earlier test's event (a stopped answer's, say) may still be on its way and
    # open the writer's connection between the two counts. The streams here never write.
    writer.close()
    application = get_asgi_application()

    async def scenario():
        streams = []
        before = None
        for _ in range(STREAMS + 1):
            stream = ApplicationCommunicator(application, {
                "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
                "headers": [(b"host", b"testserver"), (b"authorization", f"Token {token}".encode())],
                "client": ("127.0.0.1", 50000), "server": ("testserver", 80)})
            await stream.send_input({"type": "http.request", "body": b"", "more_body": False})
            start = await stream.receive_output(timeout=120)
            assert start["type"] == "http.response.start" and start["status"] == 200
            first = await stream.receive_output(timeout=120)  # the answer's state: the stream is open
            event = json.loads(first["body"].decode().split("data: ", 1)[1])
            assert event["message"]["status"] == "pending"
            streams.append(stream)
            if before is None:  # after the first: the channel layer's own two connections are open
                before = await _settled(params)
        during = await _settled(params)
        for stream in streams:
            await stream.send_input({"type": "http.disconnect"})
            await stream.wait(timeout=120)
        return before, during

    before, during = run(scenario)
    assert during == before  # 4 more streams, no more connections (before the fix: one each)
