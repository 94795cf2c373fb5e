"""Reading OpenAI chat requests and building its shapes (pure functions, no database)."""
from __future__ import annotations

import json

import pytest

from integrations import openai_format as fmt


def body(**fields) -> bytes:
    return json.dumps({"model": "ragsite", "messages": [{"role": "user", "content": "Q?"}], **fields}).encode()


def test_the_last_user_message_is_the_question_and_earlier_turns_its_history():
    req = fmt.parse_request(body(messages=[
        {"role": "system", "content": "Be nice."},
        {"role": "user", "content": [{"type": "text", "text": "First"}, {"type": "text", "text": "part"}]},
        {"role": "assistant", "content": "Answer"},
        {"role": "user", "content": "  Second?  "}], stream=True, user="conversation:7", metadata={"a": 1}))
    assert req.question == "Second?" and req.stream and req.user == "conversation:7"
    assert [(t.role, t.content) for t in req.history] == [("user", "First\npart"), ("assistant", "Answer")]
    assert req.metadata == {"a": 1}


@pytest.mark.parametrize(("raw", "param"), [
    (b"{not json", None),
    (b"[]", None),
    (json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode(), "model"),
    (body(messages=[]), "messages"),
    (body(messages=[{"role": "wizard", "content": "x"}]), "messages.[0].role"),
    (body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]), "messages.[0].content"),
    (body(messages=[{"role": "user", "content": "   "}]), "messages.[0]"),
    (body(stream="yes"), "stream"),
    (body(n=2), "n"),
    (body(metadata=[1]), "metadata"),
    (body(metadata={"a": "x" * 5000}), "metadata"),
    (body(metadata={"a": "nul\u0000"}), "metadata"),
    (body(messages=[{"role": "user", "content": "nul\u0000"}]), "messages.[0].content"),
    (b'{"model": "ragsite", "messages": [{"role": "user", "content": "\\ud800"}]}', "messages.[0].content"),
])
def test_requests_openai_would_refuse_name_the_field(raw, param):
    with pytest.raises(fmt.RequestError) as caught:
        fmt.parse_request(raw)
    assert caught.value.param == param and caught.value.message


def test_completion_chunk_and_error_shapes():
    message = {"content": "Seven days [S1].", "metadata": {
        "llm_usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        "citations": [{"source_id": "S1", "document_id": 4, "document_name": "a.pdf", "page_number": 2, "page_label": "ii",
                       "start_offset": 5, "end_offset": 50, "snippet_preview": "seven days", "chunk_id": 9}]}}
    done = fmt.completion(completion_id="chatcmpl-1", created=1, model="ragsite", message=message, conversation_id=3)
    assert done["choices"][0]["message"]["citations"][0] == {
        "source_id": "S1", "source_type": None, "document_id": 4, "document_name": "a.pdf", "chunk_id": 9,
        "chunk_index": None, "page_number": 2, "page_label": "ii", "heading_path": [], "start_offset": 5, "end_offset": 50,
        "snippet": "seven days", "qa_id": None}
    assert done["usage"] == {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    usage = fmt.chunk(completion_id="c", created=1, model="ragsite", usage=fmt.usage_of({"metadata": {}}))
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] == 0
    assert fmt.error_body("No.", code="x") == {"error": {"message": "No.", "type": "invalid_request_error",
                                                         "param": None, "code": "x"}}
    assert fmt.sse("[DONE]") == b"data: [DONE]\n\n"
