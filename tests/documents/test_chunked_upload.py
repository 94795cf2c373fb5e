"""A multipart upload sent with `Transfer-Encoding: chunked` (no Content-Length), through httpx against a
live daphne: the ASGI edge (core/asgi_limits.py) reads the body, up to the limit, and hands it on with
its length, so the file arrives; past the limit it is 413 before the app runs."""
from __future__ import annotations

import httpx
import pytest

from tests.chat.conftest import daphne  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

BOUNDARY = "ragsite-chunked-test"


def _multipart(name: str, data: bytes) -> list[bytes]:
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n").encode()
    return [head, data[: len(data) // 2], data[len(data) // 2:], f"\r\n--{BOUNDARY}--\r\n".encode()]


def test_a_chunked_multipart_upload_of_a_small_file_is_accepted(daphne, user):
    from documents.models import Document
    from identity.tokens import token_create

    key = token_create(user=user, name="test").key
    text = b"The pump in hall B runs on Tuesdays and Thursdays."
    with httpx.Client(base_url=daphne.url, timeout=30,
                      headers={"Authorization": f"Token {key}",
                               "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}) as client:
        request = client.build_request("POST", "/api/documents/", content=iter(_multipart("pump.txt", text)))
        assert request.headers.get("transfer-encoding") == "chunked" and "content-length" not in request.headers
        response = client.send(request)
        assert response.status_code == 201, response.text
        document = Document.objects.get(pk=response.json()["id"])
        assert document.original_filename == "pump.txt" and document.owner_id == user.pk

        # An empty chunked body is an ordinary 400, and a JSON body sent chunked is read whole too.
        empty = client.send(client.build_request("POST", "/api/documents/", content=iter([b""])))
        assert empty.status_code == 400, empty.text
        conversation = client.send(client.build_request(
            "POST", "/api/conversations/", headers={"Content-Type": "application/json"},
            content=iter([b'{"title": "chun', b'ked"}'])))
        assert conversation.status_code == 201 and conversation.json()["title"] == "chunked", conversation.text
