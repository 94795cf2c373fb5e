"""chat's background tasks: what the chat worker cluster runs, and the one place they are queued.

The orchestrator does the work and never imports this module (the import contract forbids the
cycle); recovery gets the way to queue from the task. Queued through core.tasks, by function.
"""
from __future__ import annotations

from chat import orchestrator
from core.tasks import queue

CHAT_CLUSTER = "chat"  # answers have a cluster of their own (settings.Q_CLUSTER["ALT_CLUSTERS"])


def answer_conversation(conversation_id: int) -> str:
    """Answer the conversation's pending questions, one at a time, in order."""
    return orchestrator.answer_conversation(conversation_id)


def recover_interrupted_answers() -> int:
    """Scheduled every minute (migrations chat 0003/0005): queue again answers that waited or stalled too long."""
    return orchestrator.recover_interrupted_answers(enqueue=enqueue_answer)


def enqueue_answer(conversation_id: int, *, in_transaction: bool = False) -> None:
    """Queue the answering of the conversation's pending messages, after the commit.

    `in_transaction=True` is the one deliberate exception to after-commit queueing
    (chat.services.message_send: the task row commits with the question, see there).
    """
    queue(answer_conversation, conversation_id, cluster=CHAT_CLUSTER, task_name=f"answer conversation {conversation_id}",
          group="chat", in_transaction=in_transaction)
