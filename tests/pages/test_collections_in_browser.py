"""Collections in a real browser against a real ragsite (daphne, both django-q2 clusters, PostgreSQL):
the admin's multi-file upload into a collection and the library page's upload into one (progress,
then each document followed until it is indexed or clearly failed), and the chat header's collection
picker (saved, shown in the "Searching" line, used by the next question)."""
from __future__ import annotations

import re

import pytest

from chat.models import Conversation, Message
from documents.models import Document
from tests.knowledge.conftest import kb  # noqa: F401 - the fixture: a collection, its curator, a member
from tests.pages.test_browser_e2e import WATCH
from tests.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

GOOD = "Cider apples are picked after the first frost, when the starch has turned to sugar."
ANSWER = "The orchard is pruned in late February, before the buds swell. [S1]"


def _files(tmp_path, sample_data, prefix: str) -> tuple:
    good = tmp_path / f"{prefix}-cider.txt"
    good.write_text(GOOD + f" ({prefix})")
    broken = tmp_path / f"{prefix}-broken.pdf"  # the PDF magic, half a file: it uploads, then fails to index
    data = (sample_data / "pdf" / "pdflatex-4-pages.pdf").read_bytes()
    broken.write_bytes(data[: len(data) // 2 + len(prefix)])  # not the same bytes twice: no duplicate
    return good, broken


def _sign_in(page, url: str, username: str, password: str) -> None:
    page.goto(f"{url}/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$"))


def test_admin_and_library_uploads_into_a_collection_show_progress_and_reach_indexed_or_failed(
        live_site, kb, sample_data, tmp_path, browser, artifacts):  # noqa: F811
    from playwright.sync_api import expect

    from django.urls import reverse

    # No model permission: a curator reaches his collection's documents by the collection rule.
    assert not kb.curator.user_permissions.exists()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(120_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        _sign_in(page, live_site.url, "carol", "carol-pass-123")

        # The admin's upload page: two files at once, each with its progress bar and its outcome.
        page.goto(live_site.url + reverse("admin:documents_collection_upload", args=[kb.collection.pk]))
        page.evaluate(WATCH, ["#rs-uploads tbody td:last-child", "__results"])
        good, broken = _files(tmp_path, sample_data, "admin")
        page.set_input_files("#rs-files", [str(good), str(broken)])
        page.locator("#rs-upload-form [type=submit]").click()
        rows = page.locator("#rs-uploads tbody tr")
        expect(rows).to_have_count(2)
        good_row, broken_row = rows.filter(has_text=good.name), rows.filter(has_text=broken.name)
        expect(good_row.locator("td").last).to_have_text(re.compile(r"^#\d+: indexed \(1 chunk\)$"), timeout=120_000)
        expect(broken_row.locator("td").last).to_have_text(
            re.compile(r"^#\d+: failed: This PDF is damaged and cannot be read"), timeout=120_000)
        for row in (good_row, broken_row):
            assert row.locator("progress").evaluate("p => p.value") == 100
        results = page.evaluate("window.__results")
        assert any(r.startswith("uploaded, waiting to index") or "indexing…" in r for r in results), results
        page.screenshot(path=artifacts / "collection-admin-upload.png")
        # The page's own link to the collection's documents opens them (no 403 for a curator).
        with page.expect_navigation():
            page.get_by_role("link", name=re.compile("The collection's documents")).click()
        expect(page.locator("#result_list")).to_contain_text(good.stem)
        page.go_back()
        shared = Document.objects.filter(collection=kb.collection, original_filename__startswith="admin-")
        assert sorted((d.original_filename, d.status) for d in shared) == [
            (broken.name, "failed"), (good.name, "indexed")]
        assert all(d.owner_id == kb.curator.pk for d in shared)

        # The library page: the curator's "Add files to …" button of the collection's section.
        page.goto(f"{live_site.url}/library/")
        section = page.locator("section.collection", has_text="Orchard guides")
        expect(section).to_contain_text("Add files to Orchard guides")
        page.evaluate("window.__sameDocument = true")
        page.evaluate(WATCH, [".uploads .upload", "__uploads"])
        good, broken = _files(tmp_path, sample_data, "library")
        page.set_input_files("input[data-collection-upload=orchard]", [str(good), str(broken)])
        good_row = section.locator(".doc-row", has_text=good.stem)
        broken_row = section.locator(".doc-row", has_text=broken.stem)
        # Each row follows its document without a reload.
        expect(good_row.locator(".badge").first).to_have_text("Ready", timeout=120_000)
        expect(good_row.locator(".badge").first).to_have_attribute("title", "1 passage indexed")
        expect(broken_row.locator(".badge").first).to_contain_text("Failed — This PDF is damaged and cannot be read",
                                                                   timeout=120_000)
        assert page.evaluate("window.__sameDocument") is True
        uploads = page.evaluate("window.__uploads")
        # The upload rows showed their progress, then finished.
        assert any("Uploading…" in u for u in uploads) and any("Uploaded ✓" in u for u in uploads), uploads
        page.screenshot(path=artifacts / "collection-library-upload.png", full_page=True)
        shared = Document.objects.filter(collection=kb.collection, original_filename__startswith="library-")
        assert sorted((d.original_filename, d.status) for d in shared) == [
            (broken.name, "failed"), (good.name, "indexed")]
        assert not Document.objects.filter(collection__isnull=True, original_filename__startswith="library-").exists()
        assert not errors, errors
    finally:
        context.close()


def test_the_chat_header_narrows_a_conversation_to_one_collection(live_site, chat_server, kb, browser,  # noqa: F811
                                                                  artifacts):
    from playwright.sync_api import expect

    conversation = Conversation.objects.create(owner=kb.member, title="Pruning")
    chat_server.script_chat({"content": ANSWER, "piece_delay": 0.02})
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(120_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        _sign_in(page, live_site.url, "mia", "mia-pass-123")
        page.goto(f"{live_site.url}/c/{conversation.pk}/")
        picker = page.get_by_label("Search in")
        expect(picker).to_have_value("")
        expect(page.locator("#scope-chip")).to_have_text("Searching: all your documents and collections (1)")

        picker.select_option(label="Orchard guides")
        expect(page.locator("#scope-chip")).to_have_text("Searching: Orchard guides (1 document)")
        wait_for(lambda: Conversation.objects.get(pk=conversation.pk).collection_id == kb.collection.pk, timeout=10,
                 what="the collection saved")
        page.reload()
        expect(page.get_by_label("Search in")).to_have_value("orchard")
        expect(page.locator("#scope-chip")).to_have_text("Searching: Orchard guides (1 document)")

        page.get_by_label("Your question").fill("When is the quince orchard pruned?")
        page.keyboard.press("Enter")
        answer = page.locator(".msg-assistant").last
        expect(answer).to_have_attribute("data-status", "done")
        page.mouse.move(5, 400)
        page.screenshot(path=artifacts / "chat-collection.png")
        trace = Message.objects.get(conversation=conversation, role="assistant").metadata["retrieval"]
        assert trace["scope"] == "collection", trace
        assert [c["slug"] for c in trace["collections"]] == ["orchard"] and trace["own_documents"] is False

        page.get_by_label("Search in").select_option("")
        expect(page.locator("#scope-chip")).to_have_text("Searching: all your documents and collections (1)")
        wait_for(lambda: Conversation.objects.get(pk=conversation.pk).collection_id is None, timeout=10,
                 what="the collection cleared")

        # Narrowed to the collection, then removed from its group: the page no longer names it.
        Conversation.objects.filter(pk=conversation.pk).update(collection=kb.collection)
        kb.member.groups.remove(kb.readers)
        page.reload()
        expect(page.locator("#scope-chip")).to_have_text("Searching: a collection you can no longer read")
        expect(page.locator("#collection-select option:checked")).to_have_text("A collection you can no longer read")
        expect(page.locator("#chat-head")).not_to_contain_text("Orchard guides")
        page.get_by_label("Search in").select_option("")
        expect(page.locator("#scope-chip")).to_have_text("Searching: all your documents (0)")
        expect(page.locator("#collection-select option")).to_have_count(1)  # the placeholder is gone
        wait_for(lambda: Conversation.objects.get(pk=conversation.pk).collection_id is None, timeout=10,
                 what="the lost collection cleared")
        assert not errors, errors
    finally:
        context.close()
