"""The thread a conversation shows: which version of each question and of each answer, along one branch.

A question edited into a new version (`metadata.version_of`: its first version's id) branches the
conversation as a regenerated answer's versions do: every question records the question version it
followed (`metadata.after`, absent for a conversation's first question; questions saved before it
was recorded follow the newest earlier question of another turn). The thread starts at the first
turn and, at each turn, shows the question version whose answer the reader chose (`metadata.chosen`),
else the newest; then the turn asked after that version, and so on. Of each question's answers
(`metadata.question_id`) it shows the chosen one, else the newest.

The chat page (chat/static/chat/versions.js), the exports and the history a model is given follow
the same rule. Pure functions over message rows (objects with `pk`, `role`, `metadata`).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

USER = "user"
ASSISTANT = "assistant"


def root_of(message: Any) -> int:
    """The first version's id of a question (its own id when it was never edited)."""
    return (message.metadata or {}).get("version_of") or message.pk


def parents(messages: Iterable[Any]) -> dict[int, int | None]:
    """Each question's id -> the id of the question version it followed (None: the first turn)."""
    questions = sorted((m for m in messages if m.role == USER), key=lambda m: m.pk)
    result: dict[int, int | None] = {}
    for index, question in enumerate(questions):
        meta = question.metadata or {}
        if "after" in meta:
            result[question.pk] = meta["after"]
            continue
        root = root_of(question)
        if meta.get("version_of") and meta["version_of"] in result:
            result[question.pk] = result[meta["version_of"]]  # a version follows what its first version followed
            continue
        earlier = [q for q in questions[:index] if root_of(q) != root]
        result[question.pk] = earlier[-1].pk if earlier else None
    return result


def answers_by_question(messages: Iterable[Any]) -> dict[int, list[Any]]:
    """Each question's id -> its answers (versions), oldest first. An answer that names no question (a
    turn a /v1 or MCP client sent along) answers the question before it."""
    found: dict[int, list[Any]] = {}
    last_question = None
    for m in sorted(messages, key=lambda m: m.pk):
        if m.role == USER:
            last_question = m.pk
            continue
        if m.role != ASSISTANT:
            continue
        asked = (m.metadata or {}).get("question_id") or last_question
        if asked:
            found.setdefault(asked, []).append(m)
    return found


def shown_answer(answers: list[Any]) -> Any | None:
    """The chosen answer, else the newest."""
    if not answers:
        return None
    return next((a for a in answers if (a.metadata or {}).get("chosen")), max(answers, key=lambda a: a.pk))


def thread_path(messages: list[Any]) -> list[Any]:
    """The questions and answers the page shows, in order (see the module's docstring)."""
    by_id = {m.pk: m for m in messages}
    by_parent: dict[int | None, list[Any]] = {}
    for question_id, followed in parents(messages).items():
        by_parent.setdefault(followed, []).append(by_id[question_id])
    answers = answers_by_question(messages)
    path: list[Any] = []
    parent: int | None = None
    seen: set[int] = set()
    while by_parent.get(parent):
        siblings = by_parent[parent]
        newest_root = max(root_of(q) for q in siblings)  # one turn follows a version; the newest if ever several
        versions = [q for q in siblings if root_of(q) == newest_root]
        chosen = next((q for q in versions if any((a.metadata or {}).get("chosen") for a in answers.get(q.pk, []))), None)
        question = chosen or max(versions, key=lambda q: q.pk)
        if question.pk in seen:
            break
        seen.add(question.pk)
        path.append(question)
        answer = shown_answer(answers.get(question.pk, []))
        if answer is not None:
            path.append(answer)
        parent = question.pk
    return path


def ancestors(question: Any, messages: list[Any]) -> list[Any]:
    """The questions the given one followed, oldest first (the branch it was asked on)."""
    links = parents(messages)
    by_id = {m.pk: m for m in messages}
    chain: list[Any] = []
    parent = links.get(question.pk)
    while parent is not None and parent in by_id and len(chain) < len(by_id):
        chain.append(by_id[parent])
        parent = links.get(parent)
    return list(reversed(chain))
