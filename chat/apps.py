import os
import sys

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    verbose_name = _("Chat")
    name = "chat"

    def ready(self):
        from django_q.signals import post_spawn

        from documents.signals import index_finished
        from retrieval.knowledge.services import gap_answered

        # (A conversation's scope reaches retrieval's search API through the CONVERSATION_SCOPE
        # setting, named in ragsite/settings.py: see retrieval/search/scope.py.)

        index_finished.connect(_answer_waiting_again, dispatch_uid="ragsite-answer-waiting-again")
        gap_answered.connect(_close_answered_gap, dispatch_uid="ragsite-close-answered-gap")
        post_spawn.connect(warm_up_chat_worker, dispatch_uid="ragsite-warm-up-chat-worker")
        if os.environ.get("Q_CLUSTER_NAME") == "chat" and "qcluster" in sys.argv:
            preload()


def _answer_waiting_again(sender, document_id: int, **kwargs) -> None:
    """A document finished indexing: the answers that waited for it are answered again (chat.services)."""
    from chat.services import waiting_answers_requeue

    waiting_answers_requeue(document_id=document_id)


def _close_answered_gap(sender, group_id: int, entry_id: int, user, **kwargs) -> None:
    """An approved pair was written from a knowledge gap (the Q&A admin's add form): the gap is closed."""
    from chat.gaps import gap_answered_by_pair

    gap_answered_by_pair(group_id=group_id, entry_id=entry_id, user=user)


def preload() -> None:
    """Load what an answer needs once, in the chat cluster's first process, before it forks its
    workers: they share it instead of each building its own (the tokenizer alone is ~70 MB), and
    the first answer is as quick as the others (imports ~0.2 s, the tokenizer ~1 s)."""
    import gc

    from chat.tasks import answer_conversation  # noqa: F401 - the import is the point
    from chat.prompts import resolve_token_counter
    from retrieval.ai.builtin import get_model

    resolve_token_counter()("warm up")
    get_model()  # the built-in embedder's weights (no OpenMP thread starts before the fork)
    gc.freeze()  # the garbage collector would otherwise write to (and so copy) the shared pages


def warm_process() -> None:
    """In each chat worker after the fork, build what a process cannot share before its first question:
    its database connection, the HTTP clients of the default embedding and chat servers (25-50 ms each
    to build) and the full-text arm's statistics and function. Measured: without it, a worker's first
    answer spent 150-200 ms in retrieval instead of 45 (bench/chat.py, 20 workers)."""
    from django.db import connection

    from chat.generation import chat_client, chat_server
    from retrieval.search import arms
    from retrieval.ai.clients import query_embedder_for
    from retrieval.selectors import default_embedding_server, retrieval_settings_get

    rs = retrieval_settings_get()
    server = default_embedding_server(rs)
    clients = [query_embedder_for(server)] if server is not None else []
    chat = chat_server(rs)
    if chat is not None:
        clients.append(chat_client(chat))
    for client in clients:
        getattr(client, "http", None)  # HTTP clients are built on first use: build them now
    arms.lexeme_stats()
    with connection.cursor() as cursor:  # compiles the plpgsql function in this session (no user: no rows)
        cursor.execute("SELECT count(*) FROM ragsite_fts_search('simple', 'warm', 'warm', NULL, 1, 'ts_rank', '{}', true)")


def warm_up_chat_worker(**kwargs) -> None:
    """django-q2 post_spawn: make sure a chat worker is warm (`preload` is a no-op after the parent's)."""
    import logging

    from django_q.conf import Conf

    if Conf.CLUSTER_NAME != "chat":
        return
    try:
        preload()
        warm_process()
    except Exception:  # never keep a worker from starting; the first answer builds what is missing
        logging.getLogger(__name__).exception("chat worker warm-up failed")
