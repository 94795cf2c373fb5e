from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _sources_key(settings):
    settings.SOURCES_KEY = "ragsite-tests-sources-key"


@pytest.fixture(scope="session")
def webdav_server():
    """A real WebDAV server (WsgiDAV on cheroot) for the session."""
    from tests.webdav_server import WebDAVServer

    server = WebDAVServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def website_server():
    """A real HTTP server (http.server, basic auth, robots.txt) for the session."""
    from tests.website_server import WebsiteServer

    server = WebsiteServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def samba_server():
    """A real SMB share (Debian's smbd, its own smb.conf, a high port) for the session."""
    from tests.samba import SambaServer

    server = SambaServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def dovecot_server():
    """A real IMAP server (Debian's Dovecot, its own configuration, a high port) for the session."""
    from tests.dovecot import DovecotServer

    server = DovecotServer().start()
    yield server
    server.stop()


@pytest.fixture(params=["s3", "webdav", "website", "smb", "imap"])
def place(request):
    """A fresh folder on one kind's real server (the server itself lives for the session)."""
    from tests.sources import servers

    if request.param == "s3":
        return servers.s3_place(request.getfixturevalue("seaweed"))
    if request.param == "webdav":
        return servers.webdav_place(request.getfixturevalue("webdav_server"))
    if request.param == "website":
        return servers.website_place(request.getfixturevalue("website_server"))
    if request.param == "smb":
        return servers.smb_place(request.getfixturevalue("samba_server"))
    if request.param == "imap":
        return servers.imap_place(request.getfixturevalue("dovecot_server"))
    raise AssertionError(request.param)
