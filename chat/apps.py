import os
import sys

from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"

    def ready(self):
        from django_q.signals import post_spawn

        post_spawn.connect(warm_up_chat_worker, dispatch_uid="ragsite-warm-up-chat-worker")
        if os.environ.get("Q_CLUSTER_NAME") == "chat" and "qcluster" in sys.argv:
            preload()


def preload() -> None:
    """Load what an answer needs once, in the chat cluster's first process, before it forks its
    workers: they share it instead of each building its own (the tokenizer alone is ~70 MB), and
    the first answer is as quick as the others (imports ~0.2 s, the tokenizer ~1 s)."""
    import gc

    from chat.orchestrator import answer_conversation  # noqa: F401 - the import is the point
    from chat.prompts import resolve_token_counter

    resolve_token_counter()("warm up")
    gc.freeze()  # the garbage collector would otherwise write to (and so copy) the shared pages


def warm_up_chat_worker(**kwargs) -> None:
    """django-q2 post_spawn: make sure a chat worker is warm (a no-op after `preload`)."""
    import logging

    from django_q.conf import Conf

    if Conf.CLUSTER_NAME != "chat":
        return
    try:
        preload()
    except Exception:  # never keep a worker from starting
        logging.getLogger(__name__).exception("chat worker warm-up failed")
