"""In a real browser: dark mode and the user menu (theme toggle shared with the admin, change password).

One real ragsite for the story: the chat page follows the system's colour scheme; the toggle in the
user menu picks light or dark and the Django admin, which keeps its choice in the same place
(localStorage "theme"), shows the same, and the other way round; a PDF page stays light on the dark
surround; the menu fits a 390×844 phone; the password change page refuses a wrong current password
and changes it with the right one.
"""
from __future__ import annotations

import pytest
from django.test import Client

from chat.models import Conversation, Message

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

# Relative luminance (0 black … 1 white) of an element's computed background colour.
LUMINANCE = """(selector) => {
  const el = selector === 'body' ? document.body : document.querySelector(selector);
  const [r, g, b] = getComputedStyle(el).backgroundColor.match(/\\d+/g).map(Number);
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}"""

SHEET = """() => {
  const sheet = document.createElement('div');
  sheet.className = 'pdf-sheet';
  sheet.id = 'probe-sheet';
  document.body.append(sheet);
}"""


def _context(browser, live_site, user, scheme, width=1280, height=800):
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    context.set_default_timeout(120_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_site.url}])
    return context


def test_dark_mode_follows_the_system_and_the_toggle_shared_with_the_admin(live_site, user, browser, artifacts):
    from playwright.sync_api import expect

    user.is_staff = True
    user.is_superuser = True
    user.save()
    conversation = Conversation.objects.create(owner=user, title="Crane")
    Message.objects.create(conversation=conversation, role="user", content="What can it lift?")
    Message.objects.create(conversation=conversation, role="assistant", status="done",
                           content="| Wind | Load |\n| --- | --- |\n| calm | 12 t |",
                           metadata={"mode": "general", "sections": [{"text": "| Wind | Load |\n| --- | --- |\n| calm | 12 t |"}]})
    chat = f"{live_site.url}/c/{conversation.pk}/"
    errors: list[str] = []

    # The system is dark and nothing was chosen: dark, "auto".
    dark = _context(browser, live_site, user, "dark")
    try:
        page = dark.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(chat)
        assert page.evaluate("document.documentElement.dataset.theme") == "auto"
        assert page.evaluate(LUMINANCE, "body") < 0.05
        assert page.evaluate(LUMINANCE, ".msg-assistant .bubble") < 0.05
        # A PDF page stays light on the dark surround.
        page.evaluate(SHEET)
        assert page.evaluate(LUMINANCE, "#probe-sheet") > 0.9
        page.evaluate("document.getElementById('probe-sheet').remove()")
        page.screenshot(path=artifacts / "theme-auto-dark.png")
    finally:
        dark.close()

    light = _context(browser, live_site, user, "light")
    try:
        page = light.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(chat)
        assert page.evaluate(LUMINANCE, "body") > 0.8
        menu = page.get_by_label("Account menu of alice")
        menu.click()
        expect(page.get_by_role("button", name="Theme: as the system")).to_be_visible()
        toggle = page.locator(".user-menu .theme-toggle")
        toggle.click()  # on a light system: auto → dark, as the admin's toggle cycles
        expect(toggle).to_have_text("Theme: dark")
        assert page.evaluate("[document.documentElement.dataset.theme, localStorage.getItem('theme')]") == ["dark", "dark"]
        assert page.evaluate(LUMINANCE, "body") < 0.05
        page.keyboard.press("Escape")
        expect(toggle).to_be_hidden()
        page.reload()
        assert page.evaluate(LUMINANCE, "body") < 0.05  # kept, from the first frame (theme.js runs in <head>)

        # The admin shows the same choice; changing it there changes it here.
        page.goto(f"{live_site.url}/admin/")
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        page.locator("button.theme-toggle").first.click()  # the admin's: dark → light on a light system
        assert page.evaluate("localStorage.getItem('theme')") == "light"
        page.goto(chat)
        assert page.evaluate("document.documentElement.dataset.theme") == "light"
        assert page.evaluate(LUMINANCE, "body") > 0.8
        page.get_by_label("Account menu of alice").click()
        expect(page.get_by_role("button", name="Theme: light")).to_be_visible()
    finally:
        light.close()

    # On a phone the menu opens inside the screen; the password change page is one click away.
    phone = _context(browser, live_site, user, "dark", 390, 844)
    try:
        page = phone.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(chat)
        page.get_by_label("Account menu of alice").click()
        items = page.locator(".user-menu-items")
        expect(items).to_be_visible()
        box = items.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=artifacts / "user-menu-phone.png")
        page.get_by_role("link", name="Change password").click()
        expect(page.get_by_role("heading", name="Change password")).to_be_visible()
        page.get_by_label("Old password").fill("not-my-password")
        page.get_by_label("New password", exact=True).fill("a-new-pass-4567")
        page.get_by_label("New password confirmation").fill("a-new-pass-4567")
        page.get_by_role("button", name="Change my password").click()
        expect(page.get_by_role("alert")).to_contain_text("Your old password was entered incorrectly")
        user.refresh_from_db()
        assert user.check_password("alice-pass-123")
        page.get_by_label("Old password").fill("alice-pass-123")
        page.get_by_label("New password", exact=True).fill("a-new-pass-4567")
        page.get_by_label("New password confirmation").fill("a-new-pass-4567")
        page.get_by_role("button", name="Change my password").click()
        expect(page.get_by_role("heading", name="Password changed")).to_be_visible()
        user.refresh_from_db()
        assert user.check_password("a-new-pass-4567")
        page.get_by_role("link", name="Back to your conversations").click()  # still signed in
        expect(page.get_by_label("Account menu of alice")).to_be_visible()
    finally:
        phone.close()
    assert not errors, errors


# axe-core (vendored in the pinned axe-playwright-python wheel, MPL-2.0) on the page as it is now:
# the violations of impact "serious" or "critical", one line each.
def _serious_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [f"{v['id']} ({v['impact']}): " + "; ".join(" ".join(n["target"]) for n in v["nodes"][:4])
            for v in results.response["violations"] if v["impact"] in ("serious", "critical")]


def test_chat_library_and_viewer_pass_axe_in_both_themes_and_fit_a_phone(
        live_site, fake_embedder, user, browser, artifacts):
    """No serious or critical axe-core violation on the chat (with an answer, its sources and the
    attach picker open), library and viewer pages, light and dark, at 1280×800 and 390×844; on the
    phone the attach picker and the sources sheet keep the screen's width, names on whole lines."""
    from playwright.sync_api import expect

    from documents.models import Document
    from tests.documents.factories import upload_bytes
    from tests.pdfgen import text_pdf
    from tests.processes import wait_for

    long_name = "Quarterly_safety_inspection_report_for_the_northern_depot_2026.pdf"
    document = upload_bytes(user, text_pdf([["Crane safety", "Lower the boom when the wind passes 60 km/h."],
                                            ["Brakes", "The brake is tested every month by the depot."]]), long_name)
    wait_for(lambda: Document.objects.get(pk=document.pk).status in ("indexed", "failed"), timeout=120,
             interval=0.5, what="indexing", process=live_site.processes[1])
    assert Document.objects.get(pk=document.pk).status == "indexed"
    conversation = Conversation.objects.create(owner=user, title="Crane")
    Message.objects.create(conversation=conversation, role="user", content="When is the boom lowered?")
    cite = {"document_id": document.pk, "document_name": long_name, "chunk_index": 0, "page_number": 1,
            "source_type": "document", "heading_path": ["Crane safety"]}
    answer = "Lower the boom above **60 km/h** [S1]; the brake is tested monthly [S2].\n\n| Wind | Load |\n| --- | --- |\n| calm | 12 t |"
    Message.objects.create(conversation=conversation, role="assistant", status="done", content=answer,
                           sources=[{"source_id": "S1", "score": 0.9}, {"source_id": "S2", "score": 0.8}],
                           metadata={"mode": "documents", "sections": [{"text": answer, "source_ids": ["S1", "S2"]}],
                                     "citations": [{**cite, "source_id": "S1", "snippet_preview": "Lower the boom when the wind passes 60 km/h."},
                                                   {**cite, "source_id": "S2", "page_number": 2, "chunk_index": 1,
                                                    "snippet_preview": "The brake is tested every month by the depot."}]})
    found: dict[str, list[str]] = {}
    errors: list[str] = []
    for scheme in ("light", "dark"):
        for width, height in ((1280, 800), (390, 844)):
            context = _context(browser, live_site, user, scheme, width, height)
            try:
                page = context.new_page()
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                where = f"{scheme} {width}"
                page.goto(f"{live_site.url}/library/")
                expect(page.locator(".doc", has_text="Quarterly_safety").locator(".badge")).to_have_text("Ready")
                found[f"library {where}"] = _serious_violations(page)
                if len(found) == 1:  # the check is live: an unnamed button and an image without a text are caught
                    page.evaluate("document.querySelector('main').insertAdjacentHTML('beforeend', "
                                  "'<button id=probe-a></button><img id=probe-b src=/static/none.png>')")
                    assert {v.split(" ")[0] for v in _serious_violations(page)} == {"button-name", "image-alt"}
                    page.evaluate("document.getElementById('probe-a').remove(); document.getElementById('probe-b').remove()")
                page.goto(f"{live_site.url}/documents/{document.pk}/?page=1")
                expect(page.get_by_role("region", name="Page 1")).to_be_visible()
                page.wait_for_function("document.querySelector('.pdf-sheet canvas')")
                found[f"viewer {where}"] = _serious_violations(page)
                page.goto(f"{live_site.url}/c/{conversation.pk}/")
                reply = page.locator(".msg-assistant").last
                expect(reply.locator("table td").first).to_have_text("calm")
                found[f"chat {where}"] = _serious_violations(page)
                page.evaluate("document.activeElement.blur()")
                page.keyboard.press("s")  # the last answer's sources
                panel = page.locator("#sources-panel")
                expect(panel).to_be_visible()
                found[f"chat sources {where}"] = _serious_violations(page)
                if width == 390:
                    box = panel.bounding_box()
                    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
                    name = panel.locator(".source-name").first
                    line = float(name.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 20"))
                    assert name.bounding_box()["width"] > 250 and name.bounding_box()["height"] <= 3.2 * line
                    assert page.evaluate("document.documentElement.scrollWidth") <= 390
                    page.screenshot(path=artifacts / f"chat-sources-sheet-{scheme}-phone.png")
                page.keyboard.press("Escape")
                expect(panel).to_be_hidden()
                page.get_by_role("button", name="Attach documents from my library").click()
                dialog = page.get_by_role("dialog", name="Choose from my library")
                item = dialog.locator(".picker-item", has_text="Quarterly_safety")
                expect(item.locator(".badge")).to_have_text("Ready")
                found[f"chat picker {where}"] = _serious_violations(page)
                if width == 390:
                    box = dialog.bounding_box()
                    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
                    meta = item.locator(".p-meta")
                    line = float(meta.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
                    assert meta.bounding_box()["height"] <= 3.2 * line and meta.bounding_box()["width"] > 250
                    for button in dialog.locator(".dialog-foot .btn").all():
                        assert button.bounding_box()["height"] < 2.2 * line  # "Cancel" / "Attach" on one line
                    assert page.evaluate("document.documentElement.scrollWidth") <= 390
                    page.screenshot(path=artifacts / f"chat-picker-{scheme}-phone.png")
            finally:
                context.close()
    assert {k: v for k, v in found.items() if v} == {}
    assert not errors, errors
