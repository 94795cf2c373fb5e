"""A conversation as a Markdown file or a PDF: its questions and answers, each answer with the sources it cited.

A cited source names the document's title and page only when the reader may still read the
document; otherwise it says so, without the name (a conversation outlives access to a collection).
"""
from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext

from chat.models import Conversation, MessageRole, MessageStatus
from core.errors import ApplicationError
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
PDF_FONTS = {"": "DejaVuSans.ttf", "B": "DejaVuSans-Bold.ttf", "I": "DejaVuSans-Oblique.ttf"}
PDF_MONO = "DejaVuSansMono.ttf"
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def conversation_pdf(*, conversation: Conversation, user) -> bytes:
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
    for style, name in PDF_FONTS.items():
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
    for message in messages:
        when = date_format(timezone.localtime(message.created_at), "DATETIME_FORMAT")
        if message.role == MessageRole.USER:
            pdf.ln(4)
            pdf.set_font("DejaVu", "B", 12)
            pdf.multi_cell(0, 6, f"{gettext('Question')} ({when})", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("DejaVu", "", 10.5)
            pdf.multi_cell(0, 5.5, message.content.strip(), new_x="LMARGIN", new_y="NEXT")
            continue
        if message.role != MessageRole.ASSISTANT:
            continue
        pdf.ln(2)
        pdf.set_font("DejaVu", "B", 11)
        pdf.multi_cell(0, 6, gettext("Answer"), new_x="LMARGIN", new_y="NEXT")
        _pdf_markdown(pdf, message.content.strip())
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
        if message.sources:
            pdf.ln(1)
            pdf.set_font("DejaVu", "B", 9.5)
            pdf.multi_cell(0, 5, gettext("Sources"), new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("DejaVu", "", 9.5)
            for s in message.sources:
                pdf.multi_cell(0, 5, f"[{s.get('source_id')}] {_source(s, titles, markdown=False)}",
                               new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def _pdf_markdown(pdf, text: str) -> None:
    """An answer's Markdown laid out plainly: headings bold, lists indented, tables as tables, code in
    a monospaced font; inline marks (**, `, links) dropped to their text — nothing is interpreted as markup."""
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
            pdf.multi_cell(0, 5.5, f"{mark} {_plain(bullet.group(3))}", new_x="LMARGIN", new_y="NEXT")
        elif line.strip():
            pdf.set_font("DejaVu", "", 10.5)
            pdf.multi_cell(0, 5.5, _plain(line), new_x="LMARGIN", new_y="NEXT")
        else:
            pdf.ln(2)
        i += 1


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [_plain(c.replace("\\|", "|").strip()) for c in re.split(r"(?<!\\)\|", body)]


def _plain(text: str) -> str:
    """Inline Markdown to its text: [label](url) → label, **b**/*i*/`c` → their text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(\*\*|__|`)(.+?)\1", r"\2", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", text)
