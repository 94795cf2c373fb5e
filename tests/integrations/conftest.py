"""Integrations fixtures: the chat stack of tests/chat (fake AI, chat worker, daphne), two users
with API tokens, and a daphne started with environment variables of the test's choice."""
from __future__ import annotations

import pytest

from tests.chat.conftest import _close_stream_writer, _free_port, chat_ai, chat_qcluster, daphne  # noqa: F401

ALICE_TEXT = ("Scaffolding. A competent person inspects the scaffold every seven days. "
              "Ladders must be checked before each use.")
BOB_TEXT = "Bob's garden notes. Raspberries are pruned in late winter, blackberries after harvest."


@pytest.fixture
def tokens(user, other_user):
    from identity.tokens import token_create

    return token_create(user=user, name="test").key, token_create(user=other_user, name="test").key


@pytest.fixture
def stack(chat_ai, chat_qcluster, daphne, user, other_user, tokens):
    """Alice and Bob each own one indexed document; the fake server embeds and answers."""
    from tests.chat.helpers import indexed

    chat_ai.alice_doc = indexed(user, ALICE_TEXT, "safety.txt")
    chat_ai.bob_doc = indexed(other_user, BOB_TEXT, "garden.txt")
    chat_ai.daphne = daphne
    chat_ai.tokens = tokens
    return chat_ai


@pytest.fixture
def daphne_with(database_url):
    """Start daphne with extra environment variables: `daphne_with({"THROTTLE_QUESTIONS": "2/minute"})`."""

    from tests.processes import ManagedProcess, wait_for_http

    started = []

    def start(env: dict) -> ManagedProcess:
        port = _free_port()
        proc = ManagedProcess(["-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ragsite.asgi:application"],
                              database_url=database_url, name="daphne", env=env)
        proc.start()
        started.append(proc)
        proc.url = f"http://127.0.0.1:{port}"
        wait_for_http(f"{proc.url}/api/me/", statuses=(401,), timeout=30, what="daphne", process=proc)
        return proc

    yield start
    for proc in started:
        proc.stop()
