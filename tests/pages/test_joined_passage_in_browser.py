"""In a real browser (issue #31): a passage joined with its neighbour (retrieval/search/neighbours.py) is
one citation whose link opens the viewer with both chunks highlighted (daphne, the clusters, PostgreSQL,
chromium)."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.services import conversation_create
from documents.models import Chunk, Document
from retrieval.search import retrieve
from tests.browser import signed_in_page
from tests.documents.factories import upload_bytes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

FILLER = "The cafeteria serves soup on weekdays. Visitors sign the book at reception. "
FACT = ("The alarm code for the north warehouse door is 7391, and it is changed by the facility manager "
        "on the first Monday of every quarter, after the night shift has signed the handover sheet at the "
        "gate, so that every guard on the evening rota receives the new code before it applies.")


def test_a_joined_passage_opens_in_the_viewer_with_both_chunks_highlighted(live_site, fake_embedder, user, browser,
                                                                            artifacts):
    from playwright.sync_api import expect

    from chat.citations import make_citation
    from retrieval.models import RetrievalSettings
    from tests.processes import wait_for

    RetrievalSettings.objects.filter(pk=1).update(chunk_size=40, chunk_overlap=0)  # the fact is cut in two
    document = upload_bytes(user, (FILLER * 2 + FACT + " " + FILLER * 2).encode(), "security.txt")
    wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=180,
             interval=0.5, what="indexing", process=live_site.processes[1])
    [top, *_] = retrieve(user, "alarm code north warehouse door changed facility manager first Monday quarter").segments
    first, second = (Chunk.objects.get(pk=pk) for pk in top["joined_chunk_ids"])
    citation = make_citation("S1", top)
    conversation = conversation_create(user=user, document_ids=[document.pk])
    Message.objects.create(conversation=conversation, role="user", content="What is the north door's code?")
    Message.objects.create(conversation=conversation, role="assistant", content="It is 7391 [S1].",
                           sources=[], metadata={"mode": "documents", "citations": [citation], "sections": [
                               {"text": "It is 7391 [S1].", "source_ids": ["S1"], "citations": [citation]}]})
    page = signed_in_page(browser, live_site.url, user)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        marker = page.locator(".cite").first
        expect(marker).to_have_attribute(
            "href", f"/documents/{document.pk}/?version=1#chunk-{first.chunk_index}-{second.chunk_index}")
        marker.click()
        highlighted = page.locator(".seg.hl")
        expect(highlighted.first).to_be_visible()
        shown = " ".join(" ".join(highlighted.all_inner_texts()).split())
        assert " ".join(FACT.split()) in shown  # both halves of the cut fact, marked as the cited passage
        page.screenshot(path=artifacts / "joined-passage-in-viewer.png")
        assert errors == []
    finally:
        page.context.close()
