"""/v1/chat/completions and /v1/models through the official `openai` SDK against a live daphne,
with the real chat worker answering through the fake AI server."""
from __future__ import annotations

import json

import httpx
import openai
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

QUESTION = "How often is the scaffold inspected?"


def client(stack, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.daphne.url}/v1", api_key=token, max_retries=0, timeout=120)


def prompts_sent(stack) -> list[str]:
    return [json.dumps(r["json"]["messages"]) for r in stack.requests_to("/v1/chat/completions")]


def test_plain_completion_is_a_saved_conversation_with_citations(stack, user):
    from chat.models import Conversation

    stack.script_chat("The scaffold is inspected every seven days [S1].")
    ai = client(stack, stack.tokens[0])
    completion = ai.chat.completions.create(model="ragsite", messages=[
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": QUESTION}])

    assert completion.object == "chat.completion"
    message = completion.choices[0].message
    assert message.role == "assistant" and completion.choices[0].finish_reason == "stop"
    assert message.content == "The scaffold is inspected every seven days [S1]."
    [citation] = message.citations  # the extension field, kept by the SDK
    assert citation["source_id"] == "S1" and citation["document_id"] == stack.alice_doc.pk
    assert citation["document_name"] == "safety.txt"
    assert citation["start_offset"] == 0 and citation["end_offset"] > citation["start_offset"]
    assert "seven days" in citation["snippet"]
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    assert "seven days" in prompts_sent(stack)[-1]  # the orchestrator's prompt carried the passage

    conversation = Conversation.objects.get(owner=user)
    assert completion.conversation_id == conversation.pk
    question, answer = conversation.messages.order_by("id")
    assert (question.role, question.content, question.metadata["origin"]) == ("user", QUESTION, "openai")
    assert answer.status == "done" and answer.content == message.content
    assert answer.metadata["citations"][0]["document_id"] == stack.alice_doc.pk


def test_streamed_completion_sends_chunks_then_usage_then_done(stack):
    answer = "Every seven days [S1], by a competent person."
    stack.script_chat({"content": answer, "piece_delay": 0.02})
    ai = client(stack, stack.tokens[0])
    chunks = list(ai.chat.completions.create(model="ragsite", stream=True,
                                             messages=[{"role": "user", "content": QUESTION}]))

    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == answer
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) > 1  # streamed, not sent in one piece
    final, usage = chunks[-2], chunks[-1]
    assert final.choices[0].finish_reason == "stop"
    assert final.choices[0].delta.citations[0]["document_id"] == stack.alice_doc.pk
    assert usage.choices == [] and usage.usage.total_tokens > 0

    # On the wire: SSE data lines, ending with [DONE].
    with httpx.stream("POST", f"{stack.daphne.url}/v1/chat/completions", timeout=120,
                      headers={"Authorization": f"Bearer {stack.tokens[0]}"},
                      json={"model": "ragsite", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == "data: [DONE]" and all(line.startswith("data: ") for line in lines)


def test_continue_a_conversation_and_bring_earlier_turns(stack, user):
    from chat.models import Conversation

    ai = client(stack, stack.tokens[0])
    # A follow-up is made standalone first (one condense request), then answered.
    stack.script_chat("Seven days [S1].", "How often are the ladders inspected?",
                      "Ladders are checked before each use [S1].")
    first = ai.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])
    second = ai.chat.completions.create(
        model="ragsite", messages=[{"role": "user", "content": "And the ladders?"}],
        extra_headers={"X-Ragsite-Conversation": str(first.conversation_id)})
    assert second.conversation_id == first.conversation_id
    assert Conversation.objects.get(pk=first.conversation_id).messages.count() == 4
    assert QUESTION in prompts_sent(stack)[-1]  # the stored turn is the history of the next question

    # A client sending the whole chat (no conversation named) starts a conversation with those turns.
    stack.script_chat("How often is the scaffold inspected?", "Seven days [S1].")
    third = ai.chat.completions.create(model="ragsite", user="someone", messages=[
        {"role": "user", "content": "Who inspects the scaffold?"},
        {"role": "assistant", "content": "A competent person."},
        {"role": "user", "content": "How often?"}])
    assert third.conversation_id != first.conversation_id
    turns = list(Conversation.objects.get(pk=third.conversation_id).messages.order_by("id")
                 .values_list("role", "content"))
    assert turns[:3] == [("user", "Who inspects the scaffold?"), ("assistant", "A competent person."),
                         ("user", "How often?")]
    assert "A competent person." in prompts_sent(stack)[-1]
    # The turns the client sent are a dialogue: "How often?" was searched as the standalone question.
    answer = Conversation.objects.get(pk=third.conversation_id).messages.order_by("id").last()
    assert answer.metadata["query_rewrite"] == {**answer.metadata["query_rewrite"], "method": "model",
                                                "query": "How often is the scaffold inspected?"}
    assert "Who inspects the scaffold?" in prompts_sent(stack)[-2]  # the condense request saw the client's turns
    assert third.choices[0].message.content.startswith("Seven days")


def test_errors_in_openai_shape(stack):
    ai = client(stack, stack.tokens[0])
    assert [m.id for m in ai.models.list()] == ["ragsite"]
    assert ai.models.retrieve("ragsite").owned_by == "ragsite"

    for model in ("gpt-4o", "ragsite/handbook"):
        with pytest.raises(openai.NotFoundError) as caught:
            ai.chat.completions.create(model=model, messages=[{"role": "user", "content": QUESTION}])
        assert caught.value.status_code == 404 and caught.value.code == "model_not_found"
        assert model in caught.value.message

    with pytest.raises(openai.BadRequestError) as caught:
        ai.chat.completions.create(model="ragsite", messages=[])
    assert caught.value.body["param"] == "messages" and caught.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError):
        ai.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": "Hi"},
                                                             {"role": "assistant", "content": "Hello"}])

    with pytest.raises(openai.AuthenticationError) as caught:
        client(stack, "not-a-key").chat.completions.create(model="ragsite", messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 401 and caught.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        client(stack, "not-a-key").models.list()
    raw = httpx.post(f"{stack.daphne.url}/v1/chat/completions", json={"model": "ragsite"}, timeout=120)
    assert raw.status_code == 401 and set(raw.json()["error"]) == {"message", "type", "param", "code"}
    assert not stack.requests_to("/v1/chat/completions")  # nothing above reached the chat server


def test_expired_and_revoked_tokens_are_refused_on_every_http_path(stack, user):
    from django.utils import timezone

    from identity.models import ApiToken
    from identity.tokens import token_create, token_revoke

    live, expired, revoked = (token_create(user=user, name=name) for name in ("live", "expired", "revoked"))
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now())
    token_revoke(user=user, token_id=revoked.pk)
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    paths = [("get", "/api/me/", None), ("get", "/v1/models", None), ("post", "/mcp", mcp),
             ("get", "/api/conversations/999999/messages/999999/stream/", None)]
    for key, wanted in ((live.key, (200, 404)), (expired.key, (401,)), (revoked.key, (401,))):
        for method, path, body in paths:
            response = httpx.request(method, f"{stack.daphne.url}{path}", json=body, timeout=120, headers={
                "Authorization": f"{'Bearer' if path.startswith(('/v1', '/mcp')) else 'Token'} {key}",
                "Accept": "application/json, text/event-stream"})
            assert response.status_code in wanted, (path, key == live.key, response.status_code)


def test_a_second_users_key_never_reaches_the_first_users_documents(stack, user, other_user):
    from chat.models import Conversation

    alice, bob = client(stack, stack.tokens[0]), client(stack, stack.tokens[1])
    stack.script_chat("Seven days [S1].")
    alices = alice.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])

    stack.reset()
    stack.script_chat("I could not find that [S1].")
    bobs = bob.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])
    prompt = prompts_sent(stack)[-1]
    assert "seven days" not in prompt and "competent person" not in prompt
    assert all(c["document_id"] != stack.alice_doc.pk for c in bobs.choices[0].message.citations)
    bob_answer = Conversation.objects.get(owner=other_user).messages.get(role="assistant")
    assert all(s["document_id"] == stack.bob_doc.pk for s in bob_answer.metadata["retrieved_segments"])

    # Naming Alice's conversation with Bob's key is a 404, and nothing is added to it.
    with pytest.raises(openai.NotFoundError):
        bob.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}],
                                    extra_headers={"X-Ragsite-Conversation": str(alices.conversation_id)})
    with pytest.raises(openai.NotFoundError):
        bob.chat.completions.create(model="ragsite", user=f"conversation:{alices.conversation_id}",
                                    messages=[{"role": "user", "content": QUESTION}])
    assert Conversation.objects.get(pk=alices.conversation_id).messages.count() == 2


def test_questions_over_the_rate_get_429_in_openai_shape(stack, daphne_with):
    from tests.integrations.test_mcp_server import mcp_calls

    limited = daphne_with({"THROTTLE_QUESTIONS": "2/minute"})
    ai = openai.OpenAI(base_url=f"{limited.url}/v1", api_key=stack.tokens[0], max_retries=0, timeout=120)
    stack.script_chat("Seven days [S1].", "Seven days [S1].")
    for _ in range(2):  # normal use is not throttled
        assert ai.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.RateLimitError) as caught:
        ai.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])
    assert caught.value.status_code == 429 and caught.value.code == "rate_limit_exceeded"
    assert int(caught.value.response.headers["Retry-After"]) > 0
    assert [m.id for m in ai.models.list()] == ["ragsite"]  # only asking is limited

    stack.daphne = limited  # the MCP ask tool shares the same per-user count
    _, (asked, searched) = mcp_calls(stack, stack.tokens[0], ("ask", {"question": QUESTION}),
                                     ("search_documents", {"query": "scaffold"}))
    assert asked.is_error and "Too many questions" in asked.content[0].text
    assert not searched.is_error


def test_a_failed_chat_server_gives_the_marked_extractive_answer_plain_and_streamed(stack, user):
    """Issue #30: the chat server failing is no dead end on /v1 either: the passages that answer the
    question, marked, with their citations, and never the server's address."""
    from chat.models import Message

    ai = client(stack, stack.tokens[0])
    stack.fail_next("/v1/chat/completions", {"status": 500}, times=20)
    plain = ai.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])
    content = plain.choices[0].message.content
    assert content.startswith("The language model is unavailable; here are the passages")
    assert plain.choices[0].message.citations[0]["document_id"] == stack.alice_doc.pk
    assert "127.0.0.1" not in content

    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in ai.chat.completions.create(
        model="ragsite", stream=True, messages=[{"role": "user", "content": QUESTION}]) if chunk.choices)
    assert streamed.startswith("The language model is unavailable") and "127.0.0.1" not in streamed
    answers = Message.objects.filter(conversation__owner=user, role="assistant").order_by("-id")[:2]
    assert [(m.status, m.metadata["mode"], m.metadata["model_unavailable"]) for m in answers] == [
        ("done", "extractive", "error")] * 2




def test_feedback_on_a_completion_by_its_id_over_v1(stack, user):
    from chat.models import Feedback

    stack.script_chat("The scaffold is inspected every seven days [S1].")
    ai = client(stack, stack.tokens[0])
    completion = ai.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])

    given = ai.post("/feedback", cast_to=httpx.Response, body={
        "message_id": completion.id, "rating": "down", "reason": "outdated", "comment": "Weekly since 2025."})
    assert given.status_code == 201
    body = given.json()
    assert (body["rating"], body["reason"], body["comment"], body["source_id"]) == (
        "down", "outdated", "Weekly since 2025.", None)
    assert body["cited_sources"][0]["document_id"] == stack.alice_doc.pk
    feedback = Feedback.objects.get(user=user)
    assert feedback.message_id == int(completion.id.removeprefix("chatcmpl-")) and feedback.mode == body["mode"]

    # The conversation's latest answer, and one of its sources; a second rating replaces the first.
    changed = ai.post("/feedback", cast_to=httpx.Response,
                      body={"conversation_id": completion.conversation_id, "rating": "up"})
    assert changed.status_code == 200 and changed.json()["rating"] == "up"
    source = ai.post("/feedback", cast_to=httpx.Response,
                     body={"message_id": completion.id, "rating": "down", "reason": "wrong_source", "source_id": "S1"})
    assert source.status_code == 201 and source.json()["source_id"] == "S1"
    assert sorted(Feedback.objects.filter(user=user).values_list("source_id", "rating")) == [("", "up"), ("S1", "down")]

    url = f"{stack.daphne.url}/v1/feedback"
    bad = httpx.post(url, json={"message_id": completion.id, "rating": "meh"},
                     headers={"Authorization": f"Bearer {stack.tokens[0]}"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "rating"
    assert bad.json()["error"]["type"] == "invalid_request_error"
    theirs = httpx.post(url, json={"message_id": completion.id, "rating": "down"},
                        headers={"Authorization": f"Bearer {stack.tokens[1]}"})
    assert theirs.status_code == 404 and theirs.json()["error"]["message"]
    assert httpx.post(url, json={"message_id": completion.id, "rating": "up"}).status_code == 401
    assert sorted(Feedback.objects.filter(user=user).values_list("source_id", "rating")) == [("", "up"), ("S1", "down")]


def test_a_v1_stream_ends_when_its_token_is_revoked(stack, user):
    from identity.tokens import token_create, token_revoke

    pieces = [f"word{n} " for n in range(40)]
    stack.script_chat({"chunks": pieces, "piece_delay": 0.25})  # ~10 s of answer; the re-check runs every 5 s
    token = token_create(user=user, name="streaming script")
    lines = []
    with httpx.stream("POST", f"{stack.daphne.url}/v1/chat/completions", timeout=120,
                      headers={"Authorization": f"Bearer {token.key}"},
                      json={"model": "ragsite", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                lines.append(line[6:])
                if len(lines) == 1:
                    token_revoke(user=user, token_id=token.pk)
    assert lines[-1] != "[DONE]"
    last = json.loads(lines[-1])
    assert last["error"]["code"] == "invalid_api_key"
    received = "".join((json.loads(x)["choices"] or [{}])[0].get("delta", {}).get("content") or ""
                       for x in lines[:-1])
    assert received != "".join(pieces)  # cut off mid-answer
