from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"

    def ready(self):
        from django_q.signals import post_spawn

        post_spawn.connect(warm_up_chat_worker, dispatch_uid="ragsite-warm-up-chat-worker")


def warm_up_chat_worker(**kwargs) -> None:
    """A chat worker loads what an answer needs before the first question (imports: ~0.2 s,
    the tokenizer: ~1 s), so the first answer is as quick as the others."""
    import logging

    from django_q.conf import Conf

    if Conf.CLUSTER_NAME != "chat":
        return
    try:
        from chat.orchestrator import answer_conversation  # noqa: F401 - the import is the point
        from chat.prompts import resolve_token_counter

        resolve_token_counter()("warm up")
    except Exception:  # never keep a worker from starting
        logging.getLogger(__name__).exception("chat worker warm-up failed")
