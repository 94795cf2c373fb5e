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
    context.set_default_timeout(20_000)
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
