"""The OpenAPI schema's error responses: every operation documents the statuses it can answer with,
each with the one error shape `{"code", "message", "extra"}` (core.errors).

Added by a drf-spectacular postprocessing hook rather than on every view: the exception handler
produces these for every API view alike. Statuses only some operations answer are listed by path.
"""
from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error: a stable code, a message a person can read, details.",
    "properties": {
        "code": {"type": "string", "example": "not_found"},
        "message": {"type": "string", "example": "No such document."},
        "extra": {"type": "object", "additionalProperties": {}},
    },
    "required": ["code", "message", "extra"],
}

COMMON = {
    "400": "The request is invalid (`code` invalid; `extra.fields` names the fields).",
    "401": "No or invalid credentials (send `Authorization: Token <token>`).",
    "403": "Not allowed (staff only, or a session request without its CSRF token).",
}
NOT_FOUND = "Not found, or not yours (others' objects are 404, never 403)."
THROTTLED = ("Too many requests (`throttled`), or a group quota is used up (`quota_exceeded`, `extra.limit`, "
             "`extra.resets_at`); `Retry-After` says when to try again.")
# Statuses that only some operations answer: (path, method) -> {status: description}.
SPECIFIC = {
    ("/api/auth/token/", "post"): {"429": THROTTLED},
    ("/api/conversations/{conversation_id}/messages/", "post"): {"429": THROTTLED},
    ("/api/conversations/", "post"): {"429": THROTTLED},  # with a first question: asking
    ("/api/conversations/{conversation_id}/messages/{message_id}/regenerate/", "post"): {
        "409": "Not the last question's answer (`not_last_answer`), or an answer is being written "
               "(`answer_in_progress`).", "429": THROTTLED},
    ("/api/documents/", "post"): {"413": "The file is larger than MAX_UPLOAD_SIZE.",
                                  "415": "Not a PDF, DOCX, text or Markdown file.",
                                  "422": "The file is damaged (a broken zip).", "429": THROTTLED},
    ("/api/documents/{id}/versions/", "post"): {
        "409": "The document is being indexed, or the file is another document already (`extra.document_id`).",
        "413": "The file is larger than MAX_UPLOAD_SIZE.", "415": "Not a supported file type.",
        "422": "The file is damaged (a broken zip)."},
    ("/api/documents/{id}/reindex/", "post"): {"409": "The document is being indexed; try again when it is done."},
    ("/api/documents/{id}/text/", "get"): {"409": "The text is not extracted yet (`extra.status`)."},
    ("/api/conversations/{conversation_id}/messages/{message_id}/retry/", "post"): {
        "409": "Only a failed answer, or one that waited for a document, can be retried.", "429": THROTTLED},
    ("/api/conversations/{conversation_id}/messages/{message_id}/feedback/", "post"): {
        "409": "The answer is not finished yet (`answer_not_done`): only a finished answer can be rated."},
    ("/api/embed/", "post"): {"502": "The AI server failed (its reason in `message`)."},
}
METHODS = ("get", "post", "put", "patch", "delete")


def add_error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: the Error component and each operation's error statuses."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            statuses = {**COMMON, "404": NOT_FOUND}  # lists: a page past the end; POST: an id in the body
            statuses.update(SPECIFIC.get((path, method), {}))
            responses = operation.setdefault("responses", {})
            for status, description in statuses.items():
                responses.setdefault(status, {"description": description, "content": ref})
    return result
