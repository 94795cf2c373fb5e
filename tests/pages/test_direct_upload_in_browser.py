"""The library page, and a file dropped onto a conversation, send a big file straight to the bucket
(real Chromium, daphne, worker, SeaweedFS)."""
from __future__ import annotations

import re

import pytest

from documents.models import Document
from tests.pages.test_browser_e2e import _drop

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def direct_uploads(s3_storage, monkeypatch):
    """Object storage for the live site, every file counted as big (set before live_site starts)."""
    monkeypatch.setenv("DIRECT_UPLOAD_MIN_SIZE", "1")
    return s3_storage


def test_a_big_file_goes_to_the_bucket_and_is_indexed(direct_uploads, live_site, fake_embedder, user,
                                                     sample_data, browser):
    from playwright.sync_api import expect

    pdf = sample_data / "pdf" / "pdflatex-4-pages.pdf"
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.set_default_timeout(120_000)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_site.url}/library/")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill("alice-pass-123")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{live_site.url}/library/")
    expect(page.get_by_text("Your library is empty.")).to_be_visible()  # library.js has run

    _drop(page, pdf)
    row = page.locator(".doc", has_text="pdflatex-4-pages")
    expect(row.locator(".badge")).to_have_text("Ready", timeout=120_000)
    expect(row.locator(".badge")).to_have_attribute("title", re.compile(r"^\d+ passages? indexed$"))
    assert not errors, errors
    api_posts = [u.removeprefix(live_site.url) for u in posts if u.startswith(live_site.url)]
    assert "/api/documents/upload-url/" in api_posts and "/api/documents/finalize/" in api_posts
    assert "/api/documents/" not in api_posts  # the bytes never went through daphne...
    assert any(u.startswith(direct_uploads.server.endpoint) for u in posts)  # ...but to the bucket
    document = Document.objects.get(owner=user, original_filename="pdflatex-4-pages.pdf")
    assert document.mime_type == "application/pdf" and document.status == "indexed"
    assert direct_uploads.keys() == [document.file.name]

    # Dropped onto a conversation: to the bucket too, then attached.
    from chat.models import Conversation

    conversation = Conversation.objects.create(owner=user, title="Scaffolds")
    posts.clear()
    page.goto(f"{live_site.url}/c/{conversation.pk}/")
    dropped = page.evaluate_handle("""() => { const data = new DataTransfer();
        data.items.add(new File(["Scaffolds are inspected every seven days."], "scaffold-rules.txt",
                                { type: "text/plain" }));
        return data; }""")
    page.dispatch_event("#chat-section", "drop", {"dataTransfer": dropped})
    expect(page.locator("#pills .pill")).to_have_count(1)
    assert list(conversation.documents.values_list("original_filename", flat=True)) == ["scaffold-rules.txt"]
    api_posts = [u.removeprefix(live_site.url) for u in posts if u.startswith(live_site.url)]
    assert "/api/documents/upload-url/" in api_posts and "/api/documents/finalize/" in api_posts
    assert "/api/documents/" not in api_posts
    assert any(u.startswith(direct_uploads.server.endpoint) for u in posts)
    dropped_doc = Document.objects.get(owner=user, original_filename="scaffold-rules.txt")
    assert sorted(direct_uploads.keys()) == sorted([document.file.name, dropped_doc.file.name])
    assert not errors, errors
