"""Conversation titles made from what the conversation is about.

A new conversation is titled at once from its first question, shortened to what it asks about
(question words such as "Kolik je" or "What is" dropped, at most TITLE_WORDS words). Once the first
answer is written by a configured chat server, that server is asked once (CHAT_TITLE_REQUEST),
within CHAT_QUERY_REWRITE_TIMEOUT seconds, for a short title of the exchange in the question's language; without a server, or when
the call fails, the title from the question stays. A title the owner typed is never replaced.
"""
from __future__ import annotations

import logging
import re

from django.conf import settings
from django.db import transaction

from chat.models import Conversation, Message, MessageRole

logger = logging.getLogger(__name__)

TITLE_WORDS = 8
TITLE_CHARS = 60
TITLE_MAX_TOKENS = 24
# Openings that say a question is asked, not what about (Czech, English, German, Slovak; lower case).
_OPENINGS = [  # only openings that end in "is"/"are" (or say "how many"): what follows them is the subject
    "kolik je", "jaký je", "jaká je", "jaké je", "jaké jsou", "kdo je", "co je to", "co je", "kde je", "kdy je",
    "what is the", "what are the", "what is", "what are", "who is", "where is", "when is", "how much is the",
    "how much is", "how many", "is there a", "is there", "are there", "was ist der", "was ist die", "was ist das",
    "was ist", "wie viel", "koľko je", "aký je", "aká je",
]
_OPENING_RE = re.compile(r"^(?:" + "|".join(re.escape(o) for o in sorted(_OPENINGS, key=len, reverse=True))
                         + r")\b[\s,:]*", re.IGNORECASE)


def title_from_question(question: str) -> str:
    """A short title from a question: its subject, not its question words ("Kolik je stravné při cestě
    delší než 18 h?" → "Stravné při cestě delší než 18 h")."""
    text = " ".join((question or "").split()).strip()
    subject = _OPENING_RE.sub("", text).strip(" ?!.,;:¿¡") or text.strip(" ?!.")
    words = subject.split()
    short = " ".join(words[:TITLE_WORDS])
    if len(short) > TITLE_CHARS:
        short = short[:TITLE_CHARS].rsplit(" ", 1)[0] or short[:TITLE_CHARS]
    if len(short) < len(subject):
        short = short.rstrip(" ,;:-") + "…"
    return short[:1].upper() + short[1:]


def _clean_model_title(text: str) -> str:
    line = next((line for line in (text or "").splitlines() if line.strip()), "")
    line = re.sub(r"^(?:title|název|titel)\s*:\s*", "", line.strip(), flags=re.IGNORECASE)
    line = line.strip(" \"'„“”«»*#.")
    return line[:TITLE_CHARS * 2].strip()


def title_after_first_answer(*, answer: Message, server) -> str | None:
    """After the conversation's first answer: one short title call to `server` (None: no call). Sets and
    returns the new title, or None when nothing changed (not the first answer, a title typed by the
    owner, no server, or the call failed)."""
    question_id = (answer.metadata or {}).get("question_id")
    question = Message.objects.filter(pk=question_id, role=MessageRole.USER).first() if question_id else None
    if question is None or server is None or not settings.CHAT_TITLE_REQUEST:
        return None
    if Message.objects.filter(conversation_id=answer.conversation_id, role=MessageRole.USER).exclude(
            pk=question.pk).exclude(metadata__version_of=question.pk).exists():
        return None  # not the first exchange (or an edit of a later question)
    automatic = title_from_question(question.content)
    conversation = Conversation.objects.filter(pk=answer.conversation_id).only("title").first()
    if conversation is None or conversation.title != automatic:
        return None
    timeout = float(settings.CHAT_QUERY_REWRITE_TIMEOUT or 0)
    if timeout <= 0:
        return None
    from retrieval.ai.clients import condenser_for

    prompt = [
        {"role": "system", "content": "Write a title of at most six words for the conversation below, in the language "
                                      "of the question. Name its subject; no quotes, no full stop, nothing else."},
        {"role": "user", "content": f"Question: {question.content[:1000]}\n\nAnswer: {(answer.content or '')[:1500]}"},
    ]
    try:
        text = condenser_for(server, timeout=timeout).complete(prompt, max_tokens=TITLE_MAX_TOKENS, temperature=0.0).text
    except Exception:  # noqa: BLE001 - a title is a nicety: the one from the question stays
        logger.info("conversation title call failed", extra={"conversation_id": answer.conversation_id}, exc_info=True)
        return None
    title = _clean_model_title(text)
    if len(title) < 2:
        return None
    with transaction.atomic():
        updated = Conversation.objects.filter(pk=answer.conversation_id, title=automatic).update(title=title[:200])
    return title[:200] if updated else None
