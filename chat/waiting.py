"""A question asked while attached documents are still being indexed waits for them.

The rule: it waits when it names an attached document that cannot be searched yet (title or file
name), or — naming none — when some attached document is still waiting or being indexed and the
indexed part does not answer it (no passage within the document distance threshold, no approved
Q&A pair within the Q&A threshold). "Summarise this PDF" right after the upload waits; a question
the indexed documents already answer is not held up by an unrelated upload. A document that
failed is reported when named and otherwise left out (it will not become ready by waiting).
The answer says which documents are still indexing, with their progress, and is answered again
automatically when their indexing ends (chat.services.waiting_answers_requeue).
"""
from __future__ import annotations

import re
from pathlib import PurePath
from typing import Callable

from django.utils.formats import number_format
from django.utils.translation import gettext, ngettext

from chat.selectors import conversation_documents
from documents.models import Document, DocumentStatus

MIN_NAME_CHARS = 3  # a document called "a" or "it" must not match every question
_WORDS_RE = re.compile(r"[\W_]+")
_NOT_READY = (DocumentStatus.UPLOADED, DocumentStatus.PROCESSING, DocumentStatus.REINDEXING, DocumentStatus.FAILED)


def _words(text: str) -> str:
    """Lowercase words joined by single spaces: "Annual_Report-2023.PDF" -> "annual report 2023 pdf"."""
    return " ".join(w for w in _WORDS_RE.split((text or "").lower()) if w)


def document_names(document: Document) -> set[str]:
    """The ways a question may name the document: title and file name, each with and without extension."""
    names = set()
    for name in (document.title, document.original_filename):
        if name:
            names.update({_words(name), _words(PurePath(name).stem)})
    return {n for n in names if len(n) >= MIN_NAME_CHARS}


def names_document(question: str, document: Document) -> bool:
    """Whether the question names the document (case-insensitive, whole words, extension optional)."""
    padded = f" {_words(question)} "
    return any(f" {name} " in padded for name in document_names(document))


def not_searchable(document: Document) -> bool:
    """Not indexed yet (or failed): nothing of it can be found. A re-indexing document with chunks still answers."""
    return document.chunk_count == 0 and document.status in _NOT_READY


def documents_waited_for(conversation, question: str, *,
                         indexed_part_answers: Callable[[], bool] | None = None) -> list[Document]:
    """Attached documents the answer must wait for (the rule above); `indexed_part_answers()` searches
    the indexed part and says whether it answers the question (only called when it matters)."""
    attached = [d for d in conversation_documents(conversation=conversation) if not_searchable(d)]
    named = [d for d in attached if names_document(question, d)]
    if named:
        return named
    pending = [d for d in attached if d.status != DocumentStatus.FAILED]
    if pending and indexed_part_answers is not None and not indexed_part_answers():
        return pending
    return []


def progress_words(document: Document) -> str:
    """How far indexing got, in words: "37 of 120 pages", or "" when nothing is known yet."""
    if document.chunks_total:
        return gettext("%(done)s of %(total)s passages embedded") % {
            "done": number_format(document.chunks_embedded, force_grouping=True),
            "total": number_format(document.chunks_total, force_grouping=True)}
    if document.pages_total:
        return gettext("%(done)s of %(total)s pages") % {
            "done": number_format(document.pages_done, force_grouping=True),
            "total": number_format(document.pages_total, force_grouping=True)}
    return ""


def waiting_answer(documents: list[Document]) -> tuple[str, list[dict]]:
    """The plain answer for documents waited for, and what `metadata.waiting_for_documents` keeps."""
    lines = []
    for d in documents:
        name = f"“{d.original_filename}”"
        if d.status == DocumentStatus.FAILED:
            reason = (d.index_error_text or gettext("no reason was recorded")).strip().rstrip(".")
            lines.append(gettext("%(name)s could not be indexed: %(reason)s. Re-index it from your library, then ask "
                                 "again.") % {"name": name, "reason": reason})
        elif d.status == DocumentStatus.UPLOADED:
            lines.append(gettext("%(name)s is waiting to be indexed, so it cannot be searched yet.") % {"name": name})
        else:
            progress = progress_words(d)
            lines.append((gettext("%(name)s is still being indexed (%(progress)s), so it cannot be searched yet.")
                          if progress else gettext("%(name)s is still being indexed, so it cannot be searched yet."))
                         % {"name": name, "progress": progress})
    pending = sum(d.status != DocumentStatus.FAILED for d in documents)
    if pending:
        lines.append(ngettext(
            "This question will be answered here automatically when it is ready, so that the answer comes from "
            "the document itself.",
            "This question will be answered here automatically when they are ready, so that the answer comes "
            "from the documents themselves.", pending))
    waited = [{"document_id": d.pk, "name": d.original_filename, "status": d.status,
               **({"index_error": d.index_error} if d.status == DocumentStatus.FAILED else {}),
               **({"progress": progress_words(d)} if progress_words(d) else {})}
              for d in documents]
    return "\n\n".join(lines), waited
