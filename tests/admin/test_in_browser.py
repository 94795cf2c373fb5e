"""The admin in a real browser (headless Chromium via tests/browser.py): the per-kind AI server form and the test page."""
from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def signed_in_page(live_server, django_user_model, monkeypatch):
    from tests.browser import chromium, desktop_page, login

    django_user_model.objects.create_superuser("boss", "boss@example.org", "boss-pass-123")
    # Playwright's sync API runs an event loop on this thread; the ORM calls of the test stay sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from django.db import connections

    with chromium() as browser:
        page = desktop_page(browser, base_url=live_server.url)
        login(page, "boss", "boss-pass-123")
        yield page
        # ORM calls made while Playwright's loop runs got a connection of their own: close it here.
        connections.close_all()


def test_the_server_form_shows_the_fields_of_the_chosen_kind(signed_in_page):
    page = signed_in_page
    page.goto(reverse("admin:retrieval_aiserver_add"))
    connection = page.locator("fieldset.rs-remote").first
    assert connection.is_visible()
    page.select_option("#id_kind", "builtin")
    assert not connection.is_visible() and page.locator("#id_embedding_model").is_disabled()
    page.select_option("#id_kind", "ollama")
    assert connection.is_visible() and page.locator("#id_embedding_model").is_enabled()


def test_the_retrieval_test_page_renders_a_search_in_the_browser(signed_in_page, user, fake_embedder):
    from tests.admin.conftest import indexed

    document = indexed(user, "The suspension bridge over the river was opened in 1932.", "bridge.txt")
    page = signed_in_page
    page.goto(reverse("admin:retrieval_test"))
    page.fill("#id_q", "When was the bridge opened?")
    page.fill("#id_user", "alice")
    page.click("input[type=submit][value=Retrieve]")
    page.wait_for_load_state("networkidle")
    rows = page.locator("#rs-segments tbody tr")
    assert rows.count() == 1
    assert rows.first.get_attribute("data-chunk-id") == str(document.chunks.get().pk)
    assert "bridge.txt" in rows.first.inner_text()
