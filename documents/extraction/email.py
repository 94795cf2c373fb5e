"""E-mail (.eml, stdlib `email`) as text blocks.

A header block (From, To, Cc, Date, Subject), then the body (the plain-text part, else the HTML
part's main content); attachments are *not* indexed — the warnings name them so they can be
uploaded on their own.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from documents.extraction.errors import CorruptFileError, NoTextError, Note, gettext_noop
from documents.extraction.helpers import squeeze_spaces
from documents.extraction.html import html_blocks
from documents.extraction.types import MIME_EML, Block, Extraction, Limits, clean_text

_HEADER_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,40}:[ \t]?\S?")
_SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def looks_like_email(text: str) -> bool:
    """RFC 5322 headers up to the first blank line, with From and a Subject, Date or Message-ID."""
    head = text[:16384].replace("\r\n", "\n").split("\n\n", 1)[0].replace("\r", "")
    lines = [line for line in head.split("\n") if line and not line[0] in " \t"]
    if len(lines) < 2 or not all(_HEADER_RE.match(line) for line in lines):
        return False
    names = {line.split(":", 1)[0].lower() for line in lines}
    return "from" in names and bool(names & {"subject", "date", "message-id"})


class EmlExtraction(Extraction):
    mime_type = MIME_EML

    def __init__(self, path: Path, *, limits: Limits, on_progress=None):
        super().__init__(on_progress=on_progress, limits=limits)
        self.path = Path(path)

    def _iter_blocks(self) -> Iterator[Block]:
        import email
        from email import policy

        message = email.message_from_bytes(self.path.read_bytes(), policy=policy.default)
        subject = squeeze_spaces(str(message.get("Subject") or "")) or "(no subject)"
        path = (subject,)
        header = [f"{name}: {squeeze_spaces(str(message.get(name)))}" for name in _SHOWN_HEADERS if message.get(name)]
        yield Block(subject, None, path, "heading")
        if header:
            yield Block("\n".join(header), None, path, "paragraph")
        body = message.get_body(preferencelist=("plain", "html"))
        if body is not None:
            content = clean_text(body.get_content())
            if body.get_content_subtype() == "html":
                yield from html_blocks(content, path)
            else:
                for para in re.split(r"\n\s*\n", content):
                    if para.strip():
                        yield Block(para.strip(), None, path, "paragraph")
        skipped = []
        for part in message.iter_attachments():
            name = part.get_filename() or "(unnamed)"
            skipped.append(f"{name} ({part.get_content_type()})")
        if skipped:
            self.warnings.append(Note("attachments", gettext_noop(
                "Attachments were not indexed: %(names)s and more; upload them on their own.") if len(skipped) > 20
                else gettext_noop("Attachments were not indexed: %(names)s; upload them on their own."),
                names=", ".join(skipped[:20])))

    def _no_text_error(self) -> Exception:
        return NoTextError(gettext_noop("This e-mail has no text."))

    def _damaged_error(self, exc: Exception) -> Exception:
        return CorruptFileError("This e-mail could not be read.")
