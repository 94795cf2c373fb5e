"""Fair indexing (issue #29: one user held the only indexing worker for 25 minutes with a 20,000-chunk
file while 26 other people's uploads waited): a per-owner limit on running jobs while others wait,
a per-document chunk ceiling with a readable failure, and the hook for per-group page quotas."""
from __future__ import annotations

import pytest
from django_q.models import OrmQ

from documents.models import Chunk, Document, DocumentStatus
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes
from tests.pdfgen import text_pdf

pytestmark = pytest.mark.django_db

ASKED: list[tuple[int, int | None]] = []


def refuse_more_than_one_page(*, document, pages):
    """A quota hook as the curation issue will write one: its group may index one more page today."""
    ASKED.append((document.pk, pages))
    return "Your group has indexed its 500 pages for today; the rest waits until tomorrow." if (pages or 0) > 1 else None


def _queued_document_ids() -> list[int]:
    from django_q.signing import SignedPackage

    return [SignedPackage.loads(q.payload)["args"][0] for q in OrmQ.objects.all()]


def test_an_owner_with_a_job_running_goes_behind_other_peoples_documents(user, other_user, fake_embedder,
                                                                         django_capture_on_commit_callbacks):
    running = upload_bytes(user, b"Alice's first manual, being indexed.", "first.txt")
    Document.objects.filter(pk=running.pk).update(status=DocumentStatus.PROCESSING, index_attempts=1)
    second = upload_bytes(user, b"Alice's second manual: the valves are blue.", "second.txt")
    bobs = upload_bytes(other_user, b"Bob's only manual: the pump is green.", "bob.txt")
    OrmQ.objects.all().delete()

    with django_capture_on_commit_callbacks(execute=True):
        outcome = index_document(second.pk)
    assert outcome.startswith("deferred"), outcome
    assert Document.objects.get(pk=second.pk).status == DocumentStatus.UPLOADED  # not claimed, not failed
    assert _queued_document_ids() == [second.pk]  # at the back of the queue, behind Bob's

    assert index_document(bobs.pk).startswith("indexed")
    # Nobody else waits now: Alice's second job takes the free worker beside her first one.
    assert index_document(second.pk).startswith("indexed")
    assert Document.objects.get(pk=second.pk).status == DocumentStatus.INDEXED


def test_a_document_over_the_chunk_ceiling_fails_readably_with_nothing_stored(user, fake_embedder, settings):
    settings.MAX_CHUNKS_PER_DOCUMENT = 3
    text = "\n\n".join(f"# Heading {i}\n\nParagraph {i} about valves and pumps." for i in range(40))
    document = upload_bytes(user, text.encode(), "many.md")
    assert index_document(document.pk).startswith("failed")
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED
    assert "more than 3 chunks" in document.index_error and "MAX_CHUNKS_PER_DOCUMENT" in document.index_error
    assert not Chunk.objects.filter(document=document).exists()


def test_the_quota_hook_is_asked_with_the_pages_and_its_reason_fails_the_document(user, fake_embedder, settings):
    settings.INDEXING_QUOTA_CHECK = f"{__name__}.refuse_more_than_one_page"
    ASKED.clear()
    big = upload_bytes(user, text_pdf([["The turbine spins."], ["The dam holds."]]), "two.pdf")
    small = upload_bytes(user, text_pdf([["The sluice opens."]]), "one.pdf")
    assert index_document(big.pk).startswith("failed")
    assert index_document(small.pk).startswith("indexed")
    assert ASKED == [(big.pk, 2), (small.pk, 1)]
    big.refresh_from_db()
    assert big.status == DocumentStatus.FAILED and "500 pages for today" in big.index_error
    assert not Chunk.objects.filter(document=big).exists()


def test_a_document_waiting_for_its_retry_does_not_hold_anyone_back(user, other_user, fake_embedder):
    """Bob's document waits for a scheduled retry, which no worker can take now: Alice's second job
    runs at once instead of going round the queue."""
    running = upload_bytes(user, b"Alice's first manual, being indexed.", "first.txt")
    Document.objects.filter(pk=running.pk).update(status=DocumentStatus.PROCESSING, index_attempts=1)
    second = upload_bytes(user, b"Alice's second manual: the valves are blue.", "second.txt")
    bobs = upload_bytes(other_user, b"Bob's only manual: the pump is green.", "bob.txt")
    Document.objects.filter(pk=bobs.pk).update(
        index_attempts=1, index_error="Temporary problem, retrying in 30 s (attempt 2 of 3): server busy.")
    assert index_document(second.pk).startswith("indexed")
