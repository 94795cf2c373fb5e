"""Helpers for chat tests: indexed documents, async scenarios, WebSocket clients."""
from __future__ import annotations


def indexed(owner, text: str, name: str = "doc.txt", **kwargs):
    """A document uploaded and indexed through the real services (use with `fake_embedder`)."""
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_bytes

    document = upload_bytes(owner, text.encode(), name, **kwargs)
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    return document


def safety_manual_conversation(user, tmp_path):
    """A two-page PDF (ladders, scaffolding) in 24-token chunks, indexed and attached: (conversation, document)."""
    from chat.services import conversation_create
    from retrieval.tasks import index_document
    from retrieval.models import RetrievalSettings
    from tests.documents.factories import upload_path
    from tests.pdfgen import text_pdf

    RetrievalSettings.objects.filter(pk=1).update(chunk_size=24, chunk_overlap=0)
    pdf = tmp_path / "safety.pdf"
    pdf.write_bytes(text_pdf([["Ladders.", "Inspect every ladder before use and never stand on the top rungs."],
                              ["Scaffolding.", "A competent person inspects the scaffold every seven days."]]))
    document = upload_path(user, pdf)
    index_document(document.pk)
    return conversation_create(user=user, document_ids=[document.pk]), document


def run(scenario, *args):
    """Run an async scenario in a fresh event loop (sync code it calls stays on this thread),
    then close the channel layer's connections of that loop."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    async def wrapped():
        try:
            return await scenario(*args)
        finally:
            await get_channel_layer().aclose()

    return async_to_sync(wrapped)()


def session_cookie(user) -> bytes:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def ws(path: str, *, cookie: bytes | None = None, headers: list | None = None, subprotocols: list | None = None):
    from channels.testing import WebsocketCommunicator

    from ragsite.asgi import application

    base = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    if cookie:
        base.append((b"cookie", cookie))
    return WebsocketCommunicator(application, path, headers=base + (headers or []), subprotocols=subprotocols)


async def events_until_final(communicator, message_id: int, timeout: float = 120) -> list[dict]:
    """Every event the WebSocket sends until the answer `message_id` is done or failed."""
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=timeout)
        events.append(event)
        if (event["type"] == "message.status_updated" and event["message"]["id"] == message_id
                and event["message"]["status"] in ("done", "failed")):
            return events


def streamed_text(events: list[dict], message_id: int) -> str:
    """The concatenated token deltas of one message, checking they join without gap or overlap."""
    text = ""
    for event in events:
        if event["type"] == "token" and event["message_id"] == message_id:
            assert event["offset"] == len(text), (event, len(text))
            text += event["delta"]
    return text


def in_worker_thread(function, *args):
    """Run sync `function` in a thread of its own, like a chat worker (its own database connection,
    so the test must be transactional), while the event loop keeps serving clients."""
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connection

    def call():
        try:
            return function(*args)
        finally:
            connection.close()

    return asyncio.ensure_future(sync_to_async(call, thread_sensitive=False)())
