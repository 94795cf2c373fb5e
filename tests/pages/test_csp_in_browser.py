"""The Content-Security-Policy (core/csp.py) in a real browser: every page answers with it, and the
library, the PDF viewer (PDF.js and its worker), a chat answer streamed over the WebSocket, the
admin (its server form's script a static file) and the API docs run without one violation;
an injected inline script is refused (issue #29)."""
from __future__ import annotations

import re

import pytest

from documents.models import Document

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

LISTEN = """window.__csp = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));"""


def test_pages_work_under_the_csp_without_a_violation(live_site, chat_server, user, staff_user, sample_data, browser):
    from playwright.sync_api import expect

    from chat.services import conversation_create
    from tests.documents.factories import upload_path
    from tests.processes import wait_for

    document = upload_path(user, sample_data / "pdf" / "pdflatex-4-pages.pdf")
    wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=180,
             interval=0.5, what="indexing", process=live_site.processes[1])
    conversation = conversation_create(user=user, document_ids=[document.pk])
    chat_server.script_chat({"content": "A blind text shows the look of a font. [S1]", "piece_delay": 0.05})

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(120_000)
    context.add_init_script(LISTEN)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    policies: dict[str, str] = {}
    page.on("response", lambda r: policies.setdefault(r.url, r.headers.get("content-security-policy", ""))
            if r.request.resource_type == "document" else None)
    violations: dict[str, list] = {}

    def visit(name: str, path: str, ready) -> None:
        page.goto(f"{live_site.url}{path}")
        ready()
        violations[name] = page.evaluate("window.__csp")

    try:
        page.goto(f"{live_site.url}/accounts/login/")
        page.get_by_label("User name").fill("alice")
        page.get_by_label("Password").fill("alice-pass-123")
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(f"{live_site.url}/")

        visit("library", "/library/",
              lambda: expect(page.locator(".doc .badge").first).to_have_text(re.compile(r"^Ready")))
        visit("pdf viewer", f"/documents/{document.pk}/",
              lambda: expect(page.locator(".pdf-page canvas").first).to_be_visible())
        expect(page.locator(".textLayer span").first).to_be_attached()  # PDF.js's worker did its part

        def ask() -> None:
            page.get_by_label("Your question").fill("What does a blind text show?")
            page.keyboard.press("Enter")
            expect(page.locator(".msg-assistant").last).to_have_attribute("data-status", "done", timeout=120_000)
            expect(page.locator(".msg-assistant").last).to_contain_text("look of a font")

        visit("chat", f"/c/{conversation.pk}/", ask)

        # An injected inline script does not run, and the listener sees the refusal.
        injected = page.evaluate("""() => { window.__ran = false; const s = document.createElement('script');
            s.textContent = 'window.__ran = true'; document.body.appendChild(s); return window.__ran; }""")
        assert injected is False
        wait_for(lambda: page.evaluate("window.__csp.length") > 0, timeout=5, what="the violation event")
        assert "script-src" in page.evaluate("window.__csp")[0]

        context.clear_cookies()
        page.goto(f"{live_site.url}/admin/login/")
        page.fill("input[name=username]", "staff")
        page.fill("input[name=password]", "staff-pass-123")
        page.click("[type=submit]")
        expect(page).to_have_url(f"{live_site.url}/admin/")
        from retrieval.models import AiServer

        builtin = AiServer.objects.get(kind="builtin")
        # Its script (a static file under the policy) hides the remote server's fields for the built-in one.
        visit("admin server form", f"/admin/retrieval/aiserver/{builtin.pk}/change/",
              lambda: expect(page.locator("fieldset.rs-remote").first).to_be_hidden())
        visit("api docs", "/api/docs/", lambda: expect(page.locator(".swagger-ui .info")).to_be_visible())
    finally:
        context.close()

    assert violations == {name: [] for name in violations}, violations
    refusals = [m for m in console if "Content Security Policy" in m]
    assert len(refusals) == 1 and "inline script" in refusals[0], refusals  # the injected script only
    assert policies and all("script-src 'self' 'nonce-" in p for p in policies.values()), policies
    nonces = {re.search(r"'nonce-([^']+)'", p).group(1) for p in policies.values()}
    assert len(nonces) == len(policies)  # a fresh nonce for every page
