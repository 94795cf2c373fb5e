"""A temporary database error must not fail an answer (issue #20).

The answering session's PostgreSQL backend is really terminated (pg_terminate_backend from a
second connection) while the answer waits for the chat server: the answer is produced again, once,
on a new session that takes the conversation's lock again; only the last attempt fails, with a
sentence a user can read. Transactional tests: the answering connection is closed and reopened,
which the test-case transaction of the plain `django_db` mark would not survive.
"""
from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from chat import orchestrator
from chat.orchestrator import LOCK_NAMESPACE, answer_conversation
from chat.services import conversation_create, message_send
from tests.chat.helpers import indexed
from tests.dbfaults import backend_pid, terminate_when

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

HARBOUR = ("The harbour master assigns berths to arriving ships. Tide tables are published every Monday. "
           "Pilots must board ships longer than 80 metres.")
ANSWER = "Pilots board ships longer than 80 metres [S1]."


def _ask_with_connection_killed(user, chat_ai):
    document = indexed(user, HARBOUR, "harbour.txt")
    conversation = conversation_create(user=user, document_ids=[document.pk])
    _, answer = message_send(conversation_id=conversation.pk, user=user, content="Who must board long ships?",
                             enqueue=False)
    chat_ai.reset()
    chat_ai.script_chat(ANSWER, ANSWER)
    chat_ai.fail_next("/v1/chat/completions", {"delay_first_byte": 1.0})
    pid = backend_pid()
    # Killed once the (slow) chat request has arrived, before its answer comes.
    killer = terminate_when(lambda: bool(chat_ai.requests_to("/v1/chat/completions")), pid)
    try:
        answer_conversation(conversation.pk)
    finally:
        killer.join()
    assert backend_pid() != pid  # the answering session really was the one terminated, and replaced
    answer.refresh_from_db()
    return conversation, answer


def _advisory_locks_held(conversation) -> int:
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        return other.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s "
                             "AND objid = %s", (LOCK_NAMESPACE, conversation.pk)).fetchone()[0]


def test_session_terminated_while_answering_answers_again_once(user, chat_ai):
    conversation, answer = _ask_with_connection_killed(user, chat_ai)
    assert answer.status == "done", answer.error
    assert answer.content == ANSWER  # the second answer only: nothing of the first is repeated
    assert answer.metadata["attempts"] == 2
    assert answer.metadata["citations"][0]["document_name"] == "harbour.txt"
    assert len(chat_ai.requests_to("/v1/chat/completions")) == 2
    assert _advisory_locks_held(conversation) == 0


def test_the_last_attempt_fails_with_a_readable_reason(user, chat_ai, monkeypatch):
    monkeypatch.setattr(orchestrator, "MAX_ATTEMPTS", 1)
    conversation, answer = _ask_with_connection_killed(user, chat_ai)
    assert answer.status == "failed"
    assert answer.error == ("The answer was interrupted because the database connection was closed by the "
                            "server (attempt 1 of 1); try again later.")
    assert len(chat_ai.requests_to("/v1/chat/completions")) == 1
    assert _advisory_locks_held(conversation) == 0
