"""The one rule for "may this person see this question, answer or passage" (docs/security.md#who-sees-an-answer).

An answer quotes the passages it drew on, and its question names what the asker looked for. Both
are shown to someone other than the asker only when every document the answer drew on (cited,
given to the model, or retrieved for it) is one the viewer may read (`Document.objects.visible_to`),
and the viewer is staff who reads others' answers:

- holders of `chat.view_message` (who read messages in the admin), or
- Q&A curators (`retrieval.curate_knowledgeentry`, the `curator` group) — for answers that drew on at
  least one document (the documents say whose collection the question belongs to), or that the asker
  shared with the curators on 👎 (`Feedback.shared`).

It lives here, below retrieval and chat, because it is about documents and every layer above needs
it: the Q&A prefill (retrieval's admin), the gap inbox, the message admin and exports (chat), the
evaluation's "from answers" page and the gold passages it copies (evaluation). The messages
themselves are given as plain values (owner, sources, metadata): this layer knows no chat model.
"""
from __future__ import annotations

from collections.abc import Iterable

from documents.models import Document

VIEW_MESSAGE = "chat.view_message"
CURATE_PERMISSION = "retrieval.curate_knowledgeentry"


def answer_document_ids(sources, metadata) -> set[int]:
    """Every document an answer drew on: its cited sources, and the sources given to the model or
    retrieved for it (all of them quote passages)."""
    metadata = metadata if isinstance(metadata, dict) else {}
    rows = [*(sources or []), *(metadata.get("sources") or []), *(metadata.get("context_sources") or []),
            *(metadata.get("retrieved_segments") or [])]
    found = set()
    for row in rows:
        if isinstance(row, dict) and row.get("document_id") not in (None, ""):
            try:
                found.add(int(row["document_id"]))
            except (TypeError, ValueError):
                continue
    return found


def readable_document_ids(user, ids: Iterable[int]) -> set[int]:
    """Those of `ids` that `user` may read (one query; none for an empty set)."""
    ids = set(ids)
    if not ids or not user or not user.is_authenticated:
        return set()
    return set(Document.objects.visible_to(user).filter(pk__in=ids).values_list("pk", flat=True))


def reads_others_answers(user) -> bool:
    """Staff who may be shown other people's answers at all (then only under `may_see_answer`)."""
    return bool(user and user.is_authenticated and user.is_active and user.is_staff
                and (user.has_perm(VIEW_MESSAGE) or user.has_perm(CURATE_PERMISSION)))


def may_see_answer(user, *, owner_id: int | None, document_ids: Iterable[int], shared: bool = False,
                   readable: set[int] | None = None) -> bool:
    """May `user` see this question, its answer and the passages the answer quoted?

    `owner_id`: the asker; `document_ids`: every document the answer drew on (`answer_document_ids`);
    `shared`: the asker shared it with the curators on 👎; `readable`: the documents `user` may read
    when the caller read them for many answers at once (`readable_document_ids`), else one query."""
    if not user or not user.is_authenticated or not user.is_active:
        return False
    if owner_id is not None and owner_id == user.pk:
        return True
    if not reads_others_answers(user):
        return False
    documents = set(document_ids)
    if documents - (readable if readable is not None else readable_document_ids(user, documents)):
        return False  # never text from a document the viewer may not read
    if user.has_perm(VIEW_MESSAGE):
        return True
    return bool(documents) or shared  # a Q&A curator: by the documents' collections, or shared with curators
