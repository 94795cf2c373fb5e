from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _sources_key(settings):
    settings.SOURCES_KEY = "ragsite-tests-sources-key"


@pytest.fixture(params=["s3"])
def place(request):
    """A fresh folder on one kind's real server (the server itself lives for the session)."""
    from tests.sources import servers

    if request.param == "s3":
        return servers.s3_place(request.getfixturevalue("seaweed"))
    raise AssertionError(request.param)
