"""schemathesis (PyPI) over /api/schema/ against a live daphne, with each of two users' tokens.

Every check is on (no 500, status codes, content types, headers and bodies as documented, errors
in the documented `{"code", "message", "extra"}` shape, auth enforced, ...); the exceptions are in
schemathesis.toml beside this file and in the README. A fixed seed per token keeps runs
repeatable; examples per operation are bounded (generation.max-examples).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Left out: they end the run's own token (tests/ragsite/test_api_tokens.py and tests/identity/test_tokens.py
# cover them; a fuzzed token id may well be the run's own).
SIGNS_OUT = {("/api/auth/token/", "delete"), ("/api/auth/token/rotate/", "post"),
             ("/api/auth/tokens/{token_id}/", "delete"), ("/api/auth/tokens/{token_id}/rotate/", "post")}
SIGNS_OUT_IDS = ["--exclude-operation-id", "auth_token_destroy", "--exclude-operation-id", "auth_token_rotate_create",
                 "--exclude-operation-id", "auth_tokens_destroy", "--exclude-operation-id", "auth_tokens_rotate_create"]


def test_schemathesis_finds_nothing_for_either_user(fake_embedder, daphne, user, other_user, tokens, tmp_path):
    from chat.services import conversation_create, message_send
    from tests.chat.helpers import indexed

    for owner, text in ((user, "Scaffolds are inspected every seven days."), (other_user, "Prune raspberries.")):
        document = indexed(owner, text, "notes.txt")
        conversation = conversation_create(user=owner, title="Notes", document_ids=[document.pk])
        message_send(conversation_id=conversation.pk, user=owner, content="When?", enqueue=False)

    cli = Path(sys.executable).with_name("schemathesis")
    for seed, token in enumerate(tokens, start=1):
        run = subprocess.run(
            [str(cli), "--config-file", str(CONFIG), "run", f"{daphne.url}/api/schema/",
             "-H", f"Authorization: Token {token}", "--phases", "examples,coverage,fuzzing", "--seed", str(seed),
             "--request-timeout", "20", "--no-color", *SIGNS_OUT_IDS],
            cwd=tmp_path, capture_output=True, text=True, timeout=240,
            env={**os.environ, "NO_COLOR": "1"},
        )
        output = run.stdout + run.stderr
        assert run.returncode == 0, output[-6000:]
        operations = sum(1 for path, methods in httpx.get(f"{daphne.url}/api/schema/?format=json").json()["paths"].items()
                         for method in methods if method in ("get", "post", "put", "patch", "delete")
                         and (path, method) not in SIGNS_OUT)
        assert f"Tested: {operations}" in output and " passed" in output, output[-3000:]  # every operation ran
