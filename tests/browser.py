"""Headless Chromium for screenshots and browser tests: Debian's chromium driven by Playwright.

Playwright's own browser download is not used; the system browser is (`apt-get install chromium`):

    from tests.browser import chromium, desktop_page, login

    with chromium() as browser:
        page = desktop_page(browser, base_url="http://127.0.0.1:8000")
        login(page, "admin", "secret")
        page.goto("/admin/")
        page.screenshot(path="admin.png", full_page=True)

Playwright's sync API runs an event loop in the calling thread: Django ORM calls made from that
thread while a browser is open are refused as "async-unsafe". Serve the site from another thread
or process, or set DJANGO_ALLOW_ASYNC_UNSAFE=true in tests that must mix both.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
DESKTOP = {"width": 1440, "height": 900}


class BrowserUnavailable(RuntimeError):
    """No usable Chromium or Playwright; the message says how to install it."""


def _find_chromium() -> str | None:
    candidates = [os.environ.get("CHROMIUM_PATH"), "/usr/bin/chromium", shutil.which("chromium"),
                  shutil.which("chromium-browser")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def ensure_chromium() -> str:
    """Chromium's path, after `apt-get update && apt-get install -y chromium` when it is missing.

    CI runs as root on a possibly fresh machine, and Playwright's own browser download is not
    available here, so the test setup installs Debian's package itself.
    """
    found = _find_chromium()
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise BrowserUnavailable("Chromium is not installed: run `apt-get update && apt-get install -y chromium` "
                                 "(or set CHROMIUM_PATH to a Chromium executable).")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise BrowserUnavailable(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    found = _find_chromium()
    if not found:
        raise BrowserUnavailable("apt-get installed chromium but no chromium executable was found.")
    return found


def chromium_path() -> str:
    """The Chromium executable: $CHROMIUM_PATH, /usr/bin/chromium, or chromium(-browser) on PATH (installed if missing)."""
    return ensure_chromium()


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium browser, closed on exit."""
    path = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise BrowserUnavailable("Playwright is not installed: `.venv/bin/pip install playwright==1.65.2` "
                                 "(its browser download is not needed).") from None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def desktop_page(browser: Browser, *, base_url: str | None = None, width: int = DESKTOP["width"],
                 height: int = DESKTOP["height"]) -> Page:
    """A new page in a fresh context (own cookies) at desktop size."""
    context = browser.new_context(viewport={"width": width, "height": height}, base_url=base_url,
                                  device_scale_factor=1)
    return context.new_page()


def signed_in_page(browser: Browser, site_url: str, user, *, width: int = 1280, height: int = 800,
                   timeout_ms: int = 120_000) -> Page:
    """A new page in a fresh context carrying `user`'s session for the live site at `site_url`
    (signed in through Django's test client, no login form); close it with `page.context.close()`."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(timeout_ms)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site_url}])
    return context.new_page()


def login(page: Page, username: str, password: str, *, path: str = "/admin/login/") -> None:
    """Sign in through the Django login form (admin or site login)."""
    page.goto(path)
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("[type=submit]")
    page.wait_for_load_state("networkidle")
    if page.url.rstrip("/").endswith(path.rstrip("/")):
        raise AssertionError(f"login as {username!r} failed at {path}")
