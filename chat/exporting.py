"""A conversation as a Markdown file or a PDF: its questions and answers, each answer with the sources it cited.

The export reads as the page did: citations numbered 1, 2 … in the order the page numbers them (never
the prompt's [S8] tags), each source with the page label printed on its page, the answer's bold and
italics kept in the PDF, and of a regenerated answer or an edited question only the version the page
shows (`all_versions`: every version, each marked). A cited source names the document's title and page
only when the reader may still read the document; otherwise it says so, without the name (a
conversation outlives access to a collection).
"""
from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext

from chat.citations import TAG_GROUP_RE, tags_in_group
from chat.models import Conversation, Message, MessageRole, MessageStatus
from chat.threads import answers_by_question, root_of, thread_path
from core.errors import ApplicationError
from chat.selectors import message_list
from documents.models import Document


def shown_messages(messages: list[Message], *, all_versions: bool = False) -> list[tuple[Message, str]]:
    """The messages as the page shows them (chat/threads.py: one version of each question and answer,
    along the branch the reader is on). With `all_versions`, every message, each version with a note
    ("version 2 of 3, shown on the page")."""
    path = thread_path(messages)
    if not all_versions:
        return [(m, "") for m in path]
    shown = {m.pk for m in path}
    answers = answers_by_question(messages)
    roots: dict[int, list[Message]] = {}
    for m in messages:
        if m.role == MessageRole.USER:
            roots.setdefault(root_of(m), []).append(m)
    result = []
    for m in messages:
        if m.role == MessageRole.USER:
            group = roots[root_of(m)]
        elif m.role == MessageRole.ASSISTANT and (m.metadata or {}).get("question_id") in answers:
            group = answers[m.metadata["question_id"]]
        else:
            group = [m]
        note = ""
        if len(group) > 1:
            number = sorted(group, key=lambda x: x.pk).index(m) + 1
            note = (gettext("version %(n)s of %(total)s, shown on the page") if m.pk in shown
                    else gettext("version %(n)s of %(total)s")) % {"n": number, "total": len(group)}
        result.append((m, note))
    return result


def citation_numbers(message: Message) -> dict[str, int]:
    """The answer's source tags numbered as the page numbers them: in the order of its stored citations
    (else of the tags' first appearance in its text)."""
    numbers: dict[str, int] = {}
    for citation in (message.metadata or {}).get("citations") or []:
        if citation.get("source_id"):
            numbers.setdefault(citation["source_id"], len(numbers) + 1)
    if not numbers:
        known = {s.get("source_id") for s in message.sources or []}
        for group in TAG_GROUP_RE.finditer(message.content or ""):
            for tag in tags_in_group(group.group(0)):
                if tag in known:
                    numbers.setdefault(tag, len(numbers) + 1)
    return numbers


def numbered_text(text: str, numbers: dict[str, int]) -> str:
    """The answer's [S8][S7] tags as the page's numbers [1][2] (tags of no cited source dropped)."""
    def replace(match: re.Match) -> str:
        found = []
        for tag in tags_in_group(match.group(0)):
            n = numbers.get(tag)
            if n and n not in found:
                found.append(n)
        return "".join(f"[{n}]" for n in found)

    return TAG_GROUP_RE.sub(replace, text or "")


def cited_sources(message: Message, numbers: dict[str, int]) -> list[tuple[int, dict]]:
    """(number, source) for each numbered source, its page label taken from the citation when the
    stored source lacks one."""
    by_tag = {s.get("source_id"): s for s in message.sources or []}
    citations = {c.get("source_id"): c for c in (message.metadata or {}).get("citations") or []}
    rows = []
    for tag, n in sorted(numbers.items(), key=lambda item: item[1]):
        source = {**citations.get(tag, {}), **by_tag.get(tag, {})}
        source["page_label"] = by_tag.get(tag, {}).get("page_label") or citations.get(tag, {}).get("page_label")
        if source:
            rows.append((n, source))
    return rows


def conversation_markdown(*, conversation: Conversation, user, all_versions: bool = False) -> str:
    """The conversation (already checked to be the user's) as Markdown."""
    messages = list(message_list(conversation=conversation))
    cited = {s.get("document_id") for m in messages for s in m.sources or [] if s.get("document_id")}
    titles = dict(Document.objects.visible_to(user).filter(pk__in=cited).values_list("pk", "title"))
    title = conversation.title or gettext("New conversation")
    lines = [f"# {_inline(title)}", "",
             "_" + gettext("Exported from ragsite on %(date)s.") % {
                 "date": date_format(timezone.localtime(), "DATETIME_FORMAT")} + "_", ""]
    for message, note in shown_messages(messages, all_versions=all_versions):
        when = date_format(timezone.localtime(message.created_at), "DATETIME_FORMAT")
        suffix = f" — {note}" if note else ""
        if message.role == MessageRole.USER:
            lines += [f"## {gettext('Question')} ({when}){suffix}", "", message.content.strip(), ""]
            continue
        if message.role != MessageRole.ASSISTANT:
            continue
        numbers = citation_numbers(message)
        lines += [f"### {gettext('Answer')}{suffix}", ""]
        if message.content.strip():
            lines += [numbered_text(message.content, numbers).strip(), ""]
        if (message.metadata or {}).get("stopped"):
            lines += ["_" + gettext("Stopped before the end.") + "_", ""]
        if message.status == MessageStatus.FAILED:
            lines += ["_" + gettext("The answer failed: %(error)s") % {"error": message.error_text} + "_", ""]
        elif message.status != MessageStatus.DONE:
            lines += ["_" + gettext("Still being written when exported.") + "_", ""]
        listed = cited_sources(message, numbers)
        if listed:
            lines += [f"**{gettext('Sources')}**", ""]
            lines += [f"- [{n}] {_source(s, titles)}" for n, s in listed]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _source(source: dict, titles: dict[int, str], *, markdown: bool = True) -> str:
    if source.get("source_type") == "qa" or (source.get("qa_id") and not source.get("document_id")):
        return gettext("an approved answer")
    document_id = source.get("document_id")
    if document_id not in titles:
        return gettext("a document you can no longer read")
    page = source.get("page_label") or source.get("page_number")
    name = titles[document_id] or source.get("document_name") or ""
    name = _inline(name) if markdown else " ".join(str(name).split())
    return gettext("%(title)s, page %(page)s") % {"title": name, "page": page} if page else name


def _inline(text: str) -> str:
    """One line of text, its Markdown link brackets escaped (a title is not markup)."""
    return " ".join(str(text).split()).replace("[", "\\[").replace("]", "\\]")


# --- PDF ---------------------------------------------------------------------------------------------
# fpdf2 (pure Python) with DejaVu, whose glyphs cover Czech, German, Russian and the rest of Latin and
# Cyrillic; the fonts are Debian's fonts-dejavu-core (the Makefile installs it), in settings.PDF_FONT_DIR.
PDF_FONTS = {"": "DejaVuSans.ttf", "B": "DejaVuSans-Bold.ttf", "I": "DejaVuSans-Oblique.ttf",
             "BI": "DejaVuSans-BoldOblique.ttf"}
PDF_MONO = "DejaVuSansMono.ttf"
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def conversation_pdf(*, conversation: Conversation, user, all_versions: bool = False) -> bytes:
    """The conversation (already checked to be the user's) as a PDF: the same content as the Markdown
    export, its answers' headings, lists, tables and code laid out, each answer's sources under it."""
    from fpdf import FPDF

    folder = Path(settings.PDF_FONT_DIR)
    missing = [name for name in [*PDF_FONTS.values(), PDF_MONO] if not (folder / name).is_file()]
    if missing:
        raise ApplicationError(gettext("PDF export needs the DejaVu fonts (Debian's fonts-dejavu-core), not found in "
                                       "%(folder)s: %(missing)s. Export as Markdown meanwhile.")
                               % {"folder": folder, "missing": ", ".join(missing)}, code="pdf_fonts_missing")
    messages = list(message_list(conversation=conversation))
    cited = {s.get("document_id") for m in messages for s in m.sources or [] if s.get("document_id")}
    titles = dict(Document.objects.visible_to(user).filter(pk__in=cited).values_list("pk", "title"))
    title = conversation.title or gettext("New conversation")

    pdf = FPDF(format="A4")
    pdf.set_title(title)
    pdf.set_creator("ragsite")
    pdf.set_margins(18, 16, 18)
    pdf.set_auto_page_break(True, margin=16)
    for style, name in PDF_FONTS.items():  # (BI: bold italics, for **_both_**)
        pdf.add_font("DejaVu", style=style, fname=str(folder / name))
    pdf.add_font("DejaVuMono", fname=str(folder / PDF_MONO))
    pdf.add_page()
    pdf.set_font("DejaVu", "B", 17)
    pdf.multi_cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("DejaVu", "I", 9)
    pdf.set_text_color(90, 90, 90)
    pdf.multi_cell(0, 5, gettext("Exported from ragsite on %(date)s.") % {
        "date": date_format(timezone.localtime(), "DATETIME_FORMAT")}, new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(0, 0, 0)
    for message, note in shown_messages(messages, all_versions=all_versions):
        when = date_format(timezone.localtime(message.created_at), "DATETIME_FORMAT")
        suffix = f" — {note}" if note else ""
        if message.role == MessageRole.USER:
            pdf.ln(4)
            pdf.set_font("DejaVu", "B", 12)
            pdf.multi_cell(0, 6, f"{gettext('Question')} ({when}){suffix}", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("DejaVu", "", 10.5)
            pdf.multi_cell(0, 5.5, message.content.strip(), new_x="LMARGIN", new_y="NEXT")
            continue
        if message.role != MessageRole.ASSISTANT:
            continue
        pdf.ln(2)
        pdf.set_font("DejaVu", "B", 11)
        pdf.multi_cell(0, 6, gettext("Answer") + suffix, new_x="LMARGIN", new_y="NEXT")
        numbers = citation_numbers(message)
        _pdf_markdown(pdf, numbered_text(message.content, numbers).strip())
        notes = []
        if (message.metadata or {}).get("stopped"):
            notes.append(gettext("Stopped before the end."))
        if message.status == MessageStatus.FAILED:
            notes.append(gettext("The answer failed: %(error)s") % {"error": message.error})
        elif message.status != MessageStatus.DONE:
            notes.append(gettext("Still being written when exported."))
        pdf.set_font("DejaVu", "I", 9.5)
        for note in notes:
            pdf.multi_cell(0, 5, note, new_x="LMARGIN", new_y="NEXT")
        listed = cited_sources(message, numbers)
        if listed:
            pdf.ln(1)
            pdf.set_font("DejaVu", "B", 9.5)
            pdf.multi_cell(0, 5, gettext("Sources"), new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("DejaVu", "", 9.5)
            for n, s in listed:
                pdf.multi_cell(0, 5, f"[{n}] {_source(s, titles, markdown=False)}", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def _pdf_markdown(pdf, text: str) -> None:
    """An answer's Markdown laid out: headings bold, lists indented, tables as tables, code in a
    monospaced font; in running text **bold** and *italics* kept (fpdf2's own markers, everything else
    escaped), links and `code` as their text."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            pdf.set_font("DejaVuMono", "", 9)
            pdf.set_fill_color(242, 242, 242)
            pdf.multi_cell(0, 4.6, "\n".join(code) or " ", fill=True, new_x="LMARGIN", new_y="NEXT")
            i += 1
            continue
        if line.lstrip().startswith("|") and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            rows = [_cells(line)]
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            width = max(len(r) for r in rows)
            pdf.set_font("DejaVu", "", 9.5)
            with pdf.table(first_row_as_headings=True, line_height=5.5, padding=1.2) as table:
                for cells in rows:
                    row = table.row()
                    for cell in cells + [""] * (width - len(cells)):
                        row.cell(cell)
            pdf.ln(1)
            continue
        heading = re.match(r"^(#{1,6})\s+(.*)$", line)
        bullet = re.match(r"^(\s*)([-*+]|\d+[.)])\s+(.*)$", line)
        if heading:
            pdf.set_font("DejaVu", "B", max(10.5, 14 - len(heading.group(1))))
            pdf.multi_cell(0, 6, _plain(heading.group(2)), new_x="LMARGIN", new_y="NEXT")
        elif bullet:
            indent = 4 + min(len(bullet.group(1)), 8)
            mark = "•" if bullet.group(2) in "-*+" else bullet.group(2)
            pdf.set_font("DejaVu", "", 10.5)
            pdf.set_x(pdf.l_margin + indent)
            pdf.multi_cell(0, 5.5, f"{mark} {_emphasis(bullet.group(3))}", markdown=True, new_x="LMARGIN", new_y="NEXT")
        elif line.strip():
            pdf.set_font("DejaVu", "", 10.5)
            pdf.multi_cell(0, 5.5, _emphasis(line), markdown=True, new_x="LMARGIN", new_y="NEXT")
        else:
            pdf.ln(2)
        i += 1


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [_plain(c.replace("\\|", "|").strip()) for c in re.split(r"(?<!\\)\|", body)]


_FPDF_MARKERS = ("**", "__", "~~", "--")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])|(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)")


def _escape_fpdf(text: str) -> str:
    for marker in _FPDF_MARKERS:
        text = text.replace(marker, "\\" + marker)
    return text


def _emphasis(text: str) -> str:
    """A line of Markdown as fpdf2's markdown: **bold** as **, *italics* / _italics_ as __, the rest
    (links, code, any literal "--" or "__") as plain escaped text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"\1", text)
    out, last = [], 0
    for match in _EMPHASIS.finditer(text):
        out.append(_escape_fpdf(text[last:match.start()]))
        if match.group(1):  # **bold** or __bold__
            out.append("**" + _escape_fpdf(match.group(2)) + "**")
        else:  # *italics* or _italics_
            out.append("__" + _escape_fpdf(match.group(3) or match.group(4)) + "__")
        last = match.end()
    out.append(_escape_fpdf(text[last:]))
    return "".join(out)


def _plain(text: str) -> str:
    """Inline Markdown to its text: [label](url) → label, **b**/*i*/`c` → their text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(\*\*|__|`)(.+?)\1", r"\2", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", text)
