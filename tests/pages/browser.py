"""Kept for the page tests' imports: the shared launcher in tests/browser.py installs Chromium."""
from tests.browser import ensure_chromium  # noqa: F401
