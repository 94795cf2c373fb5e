"""An open WebSocket ends with its sign-in, and tokens never travel in its URL (issue #29)."""
from __future__ import annotations

import pytest
from django.contrib.auth.hashers import make_password
from django.test import Client
from django.utils import timezone

from chat.services import conversation_create
from identity.models import ApiToken
from identity.tokens import token_create
from tests.chat.helpers import in_worker_thread, run, ws

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def quick_recheck(settings):
    settings.WEBSOCKET_AUTH_RECHECK = 0.2
    return settings


def test_a_token_in_the_url_is_refused_with_a_reason(user):
    conversation = conversation_create(user=user)
    key = token_create(user=user, name="test").key

    async def scenario():
        communicator = ws(f"/ws/conversations/{conversation.pk}/?token={key}")
        connected, _ = await communicator.connect()
        error = await communicator.receive_json_from(timeout=120)
        closing = await communicator.receive_output(timeout=120)
        await communicator.wait()
        return connected, error, closing

    connected, error, closing = run(scenario)
    assert error["type"] == "error" and error["code"] == "token_in_url"
    assert "Sec-WebSocket-Protocol" in error["message"]
    assert closing["type"] == "websocket.close" and closing["code"] == 4400
    assert "Sec-WebSocket-Protocol" in closing["reason"] and len(closing["reason"].encode()) <= 123


@pytest.mark.parametrize("how", ["deleted", "revoked through the API", "rotated", "expired", "password changed",
                                 "account disabled"])
def test_an_open_websocket_closes_when_its_token_ends(user, quick_recheck, how):
    conversation = conversation_create(user=user)
    key = token_create(user=user, name="test").key

    def end_token():
        from rest_framework.test import APIClient

        if how == "deleted":
            ApiToken.objects.filter(user=user).delete()
        elif how == "expired":
            ApiToken.objects.filter(user=user).update(expires_at=timezone.now())
        elif how == "revoked through the API":
            assert APIClient().delete("/api/auth/token/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 204
        elif how == "rotated":
            assert APIClient().post("/api/auth/token/rotate/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
        elif how == "password changed":
            user.password = make_password("a-new-pass-456")  # what set_password stores
            user.save()
        else:
            user.is_active = False
            user.save()

    async def scenario():
        communicator = ws(f"/ws/conversations/{conversation.pk}/", subprotocols=["ragsite.bearer", key])
        connected, _ = await communicator.connect()
        assert connected
        await communicator.send_json_to({"type": "ping"})
        assert await communicator.receive_json_from() == {"type": "pong"}
        assert await communicator.receive_nothing(timeout=0.6)  # the re-check passes while the token holds
        await in_worker_thread(end_token)
        closing = await communicator.receive_output(timeout=120)
        await communicator.disconnect()
        return closing

    closing = run(scenario)
    assert closing == {"type": "websocket.close", "code": 4401}


def test_an_open_websocket_closes_when_its_session_logs_out(user, quick_recheck):
    conversation = conversation_create(user=user)
    browser = Client()
    browser.force_login(user)
    cookie = f"sessionid={browser.cookies['sessionid'].value}".encode()

    async def scenario():
        communicator = ws(f"/ws/conversations/{conversation.pk}/", cookie=cookie)
        connected, _ = await communicator.connect()
        assert connected
        assert await communicator.receive_nothing(timeout=0.6)
        await in_worker_thread(lambda: browser.post("/accounts/logout/"))
        closing = await communicator.receive_output(timeout=120)
        await communicator.disconnect()
        return closing

    assert run(scenario) == {"type": "websocket.close", "code": 4401}


def test_through_daphne_the_token_travels_as_a_subprotocol_and_never_in_the_url(daphne, user):
    """The real server: daphne hands the offered subprotocols to the consumer, the handshake names
    `ragsite.bearer` (never the token), and a `?token=` URL ends with the close frame's reason."""
    import asyncio

    from tests.chat.wsclient import WebSocket

    conversation = conversation_create(user=user)
    key = token_create(user=user, name="test").key
    url = f"{daphne.url.replace('http', 'ws')}/ws/conversations/{conversation.pk}/"
    origin = {"Origin": daphne.url}

    async def scenario():
        socket = await WebSocket.connect(url, headers=origin, subprotocols=["ragsite.bearer", key])
        await socket.send_json({"type": "ping"})
        pong = await socket.receive_json()
        await socket.close()
        refused = await WebSocket.connect(f"{url}?token={key}", headers=origin)
        error = await refused.receive_json()
        with pytest.raises(ConnectionError):
            await refused.receive_json()
        await refused.close()
        return socket.head, pong, error, refused.close_code

    head, pong, error, code = asyncio.run(scenario())
    assert pong == {"type": "pong"}
    assert "sec-websocket-protocol: ragsite.bearer\r\n" in head.lower() and key not in head
    assert error["code"] == "token_in_url" and "Sec-WebSocket-Protocol" in error["message"]
    assert code == 4400
