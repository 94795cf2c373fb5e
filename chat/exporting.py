"""A conversation as a Markdown file: its questions and answers, each answer with the sources it cited.

A cited source names the document's title and page only when the reader may still read the
document; otherwise it says so, without the name (a conversation outlives access to a collection).
"""
from __future__ import annotations

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext

from chat.models import Conversation, MessageRole, MessageStatus
from chat.selectors import message_list
from documents.models import Document


def conversation_markdown(*, conversation: Conversation, user) -> str:
    """The conversation (already checked to be the user's) as Markdown."""
    messages = list(message_list(conversation=conversation))
    cited = {s.get("document_id") for m in messages for s in m.sources or [] if s.get("document_id")}
    titles = dict(Document.objects.visible_to(user).filter(pk__in=cited).values_list("pk", "title"))
    title = conversation.title or gettext("New conversation")
    lines = [f"# {_inline(title)}", "",
             "_" + gettext("Exported from ragsite on %(date)s.") % {
                 "date": date_format(timezone.localtime(), "DATETIME_FORMAT")} + "_", ""]
    for message in messages:
        when = date_format(timezone.localtime(message.created_at), "DATETIME_FORMAT")
        if message.role == MessageRole.USER:
            lines += [f"## {gettext('Question')} ({when})", "", message.content.strip(), ""]
            continue
        if message.role != MessageRole.ASSISTANT:
            continue
        lines += [f"### {gettext('Answer')}", ""]
        if message.content.strip():
            lines += [message.content.strip(), ""]
        if (message.metadata or {}).get("stopped"):
            lines += ["_" + gettext("Stopped before the end.") + "_", ""]
        if message.status == MessageStatus.FAILED:
            lines += ["_" + gettext("The answer failed: %(error)s") % {"error": message.error_text} + "_", ""]
        elif message.status != MessageStatus.DONE:
            lines += ["_" + gettext("Still being written when exported.") + "_", ""]
        if message.sources:
            lines += [f"**{gettext('Sources')}**", ""]
            lines += [f"- [{s.get('source_id')}] {_source(s, titles)}" for s in message.sources]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _source(source: dict, titles: dict[int, str]) -> str:
    if source.get("source_type") == "qa" or (source.get("qa_id") and not source.get("document_id")):
        return gettext("an approved answer")
    document_id = source.get("document_id")
    if document_id not in titles:
        return gettext("a document you can no longer read")
    page = source.get("page_label") or source.get("page_number")
    name = _inline(titles[document_id] or source.get("document_name") or "")
    return gettext("%(title)s, page %(page)s") % {"title": name, "page": page} if page else name


def _inline(text: str) -> str:
    """One line of text, its Markdown link brackets escaped (a title is not markup)."""
    return " ".join(str(text).split()).replace("[", "\\[").replace("]", "\\]")
