"""Through real processes: daphne (HTTP + WebSocket), the indexing worker and the chat worker."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from identity.tokens import token_create
from retrieval.models import AiServer, RetrievalSettings
from tests.chat.helpers import streamed_text
from tests.chat.wsclient import WebSocket
from tests.pdfgen import text_pdf
from tests.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PAGES = [
    ["Ladders.", "Inspect every ladder before use and never stand on the top two rungs."],
    ["Scaffolding.", "The scaffold must be inspected by a competent person every seven days."],
]


def test_upload_index_attach_ask_and_stream_through_real_processes(broker, user, fake_ai, qcluster, chat_qcluster,
                                                                   daphne):
    server = AiServer.objects.create(name="fake", kind="openai", base_url=fake_ai.url, read_timeout=10,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384, "chat": True, "chat_model": "fake-chat"})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server, default_chat_server=server,
                                                  chunk_size=24, chunk_overlap=0)
    token = token_create(user=user, name="test").key
    http = httpx.Client(base_url=daphne.url, headers={"Authorization": f"Token {token}"}, timeout=120)

    upload = http.post("/api/documents/", files={"file": ("safety.pdf", text_pdf(PAGES), "application/pdf")})
    assert upload.status_code == 201, upload.text
    document_id = upload.json()["id"]
    wait_for(lambda: http.get(f"/api/documents/{document_id}/").json()["status"] in ("indexed", "failed"),
             timeout=60, what="indexing", process=qcluster)
    conversation = http.post("/api/conversations/", json={"title": "Safety"}).json()
    attached = http.post(f"/api/conversations/{conversation['id']}/documents/", json={"document_id": document_id})
    assert attached.status_code == 201 and attached.json()["status"] == "indexed"

    answer = "Scaffolds are inspected every seven days [S1] [S7]."
    fake_ai.script_chat({"content": answer, "piece_delay": 0.02})

    async def ask() -> tuple[dict, list[dict], list[dict]]:
        socket = await WebSocket.connect(f"{daphne.url.replace('http', 'ws')}/ws/conversations/{conversation['id']}/",
                                         headers={"Authorization": f"Token {token}", "Origin": daphne.url})
        async with httpx.AsyncClient(base_url=daphne.url, headers={"Authorization": f"Token {token}"},
                                     timeout=20) as client:
            posted = (await client.post(f"/api/conversations/{conversation['id']}/messages/",
                                        json={"content": "How often is the scaffold inspected?"})).json()
            message_id = posted["assistant_message"]["id"]
            assert posted["assistant_message"]["status"] == "pending"
            sse_events = []
            async with client.stream("GET", posted["stream_url"]) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        sse_events.append(json.loads(line[6:]))
        ws_events = []
        while not (ws_events and ws_events[-1]["type"] == "message.status_updated"
                   and ws_events[-1]["message"]["status"] in ("done", "failed")):
            ws_events.append(await socket.receive_json(timeout=120))
        await socket.close()
        return posted, sse_events, ws_events

    posted, sse_events, ws_events = asyncio.run(ask())
    message_id = posted["assistant_message"]["id"]
    assert streamed_text(ws_events, message_id) == answer
    assert streamed_text(sse_events, message_id) == answer
    assert sse_events[-1]["message"]["status"] == "done", sse_events[-1]
    stored = http.get(f"/api/conversations/{conversation['id']}/messages/{message_id}/").json()
    assert stored["status"] == "done"
    assert stored["content"] == "Scaffolds are inspected every seven days [S1]."
    assert stored["metadata"]["invalid_citations"] == 1
    [citation] = stored["metadata"]["citations"]
    assert citation["document_id"] == document_id and citation["page_number"] == 2
    assert stored["sources"][0]["document_id"] == document_id
    assert stored["metadata"]["llm_usage"]["model"] == "fake-chat"
    assert stored["metadata"]["retrieved_segments"]
    if broker is not None:  # the queue and the live events really went through Redis
        stats = broker.client().info("commandstats")
        assert stats.get("cmdstat_rpush", {}).get("calls", 0) >= 2, stats  # indexing task and answer task
        assert stats.get("cmdstat_blpop", {}).get("calls", 0) > 0, stats  # workers waiting on the lists
        assert any(name in stats for name in ("cmdstat_bzpopmin", "cmdstat_evalsha", "cmdstat_eval")), stats


# Front matter numbered i, ii, iii, then the body from 1 (the PDF's /PageLabels): no page's label is its index.
LABELLED_PAGES = [
    ["Foreword.", "This handbook explains the travel rules of the institute for all of its staff."],
    ["Contents.", "Travel, meal allowance, accommodation and the forms to fill in after a trip."],
    ["Preface.", "The rules apply to every business trip that starts after the first of January."],
    ["Meal allowance.", "A trip longer than eighteen hours is paid a meal allowance of 400 crowns."],
    ["Accommodation.", "Hotels are booked by the travel office; a receipt is needed for every night."],
]
LABELS = {1: "i", 2: "ii", 3: "iii", 4: "1", 5: "2"}


def test_a_citation_names_the_label_printed_on_its_page(user, fake_ai, qcluster, chat_qcluster, daphne):
    server = AiServer.objects.create(name="fake", kind="openai", base_url=fake_ai.url, read_timeout=10,
                                     capabilities={"embeddings": True, "embedding_model": "fake-embed",
                                                   "embedding_dim": 384, "chat": True, "chat_model": "fake-chat"})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=server, default_chat_server=server,
                                                  chunk_size=24, chunk_overlap=0)
    token = token_create(user=user, name="test").key
    http = httpx.Client(base_url=daphne.url, headers={"Authorization": f"Token {token}"}, timeout=120)
    pdf = text_pdf(LABELLED_PAGES, page_labels="0 << /S /r >> 3 << /S /D >>")
    upload = http.post("/api/documents/", files={"file": ("travel.pdf", pdf, "application/pdf")})
    assert upload.status_code == 201, upload.text
    document_id = upload.json()["id"]
    wait_for(lambda: http.get(f"/api/documents/{document_id}/").json()["status"] in ("indexed", "failed"),
             timeout=60, what="indexing", process=qcluster)
    conversation = http.post("/api/conversations/", json={"title": "Travel"}).json()
    http.post(f"/api/conversations/{conversation['id']}/documents/", json={"document_id": document_id})
    fake_ai.script_chat("A trip over eighteen hours is paid 400 crowns [S1].")

    posted = http.post(f"/api/conversations/{conversation['id']}/messages/",
                       json={"content": "How much is the meal allowance?"}).json()
    message_id = posted["assistant_message"]["id"]
    url = f"/api/conversations/{conversation['id']}/messages/{message_id}/"
    wait_for(lambda: http.get(url).json()["status"] in ("done", "failed"), timeout=60, what="the answer",
             process=chat_qcluster)
    stored = http.get(url).json()
    assert stored["status"] == "done", stored
    [citation] = stored["metadata"]["citations"]
    page = citation["page_number"]
    # The printed label, alongside the PDF's own page index; never the index under the label's name.
    assert citation["page_label"] == LABELS[page] != str(page)
    assert stored["sources"][0]["page_label"] == LABELS[page]
    given = {s["source_id"]: s for s in stored["metadata"]["context_sources"]}
    assert given["S1"]["page_label"] == LABELS[given["S1"]["page_number"]]
    # The document's chunks say it too.
    chunks = http.get(f"/api/documents/{document_id}/chunks/").json()["results"]
    assert chunks and all(c["page_label"] == LABELS[c["page_number"]] for c in chunks), chunks
