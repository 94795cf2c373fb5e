"""Group quotas on every way in, against a live daphne and chat worker: /v1 through the official `openai`
SDK, MCP through the official `mcp` SDK and REST with an API token; and usage equal to what was asked."""
from __future__ import annotations

import httpx
import openai
import pytest

from tests.integrations.test_mcp_server import data, mcp_calls

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

QUESTION = "How often is the scaffold inspected?"


def test_the_question_quota_holds_over_v1_mcp_and_rest_and_usage_counts_each_request(stack, user):
    """…and each answer is audited under the channel its question came by (v1, mcp, api)."""
    from django.contrib.auth.models import Group
    from django.db.models import Sum
    from django.utils import timezone

    from chat.models import Message
    from tests.processes import wait_for
    from usage.models import GroupQuota, UsageDay

    group = Group.objects.create(name="interns")
    GroupQuota.objects.create(group=group, questions_per_day=3)
    user.groups.add(group)
    stack.script_chat(*["The scaffold is inspected every seven days [S1]."] * 3)
    ai = openai.OpenAI(base_url=f"{stack.daphne.url}/v1", api_key=stack.tokens[0], max_retries=0, timeout=120)
    rest = httpx.Client(base_url=stack.daphne.url, headers={"Authorization": f"Token {stack.tokens[0]}"}, timeout=120)
    accepted = 0

    assert "seven days" in ai.chat.completions.create(
        model="ragsite", messages=[{"role": "user", "content": QUESTION}]).choices[0].message.content
    accepted += 1
    _, (asked,) = mcp_calls(stack, stack.tokens[0], ("ask", {"question": QUESTION}))
    assert data(asked)["mode"] == "documents"
    accepted += 1
    conversation = rest.post("/api/conversations/", json={"title": "quota"}).json()["id"]
    posted = rest.post(f"/api/conversations/{conversation}/messages/", json={"content": QUESTION})
    assert posted.status_code == 201, posted.text
    accepted += 1

    # The fourth question, by any way in, is refused naming the limit and when it resets.
    with pytest.raises(openai.RateLimitError) as caught:
        ai.chat.completions.create(model="ragsite", messages=[{"role": "user", "content": QUESTION}])
    error = caught.value.body
    assert caught.value.status_code == 429 and error["type"] == "insufficient_quota" and error["code"] == "quota_exceeded"
    assert "3 questions per day" in error["message"] and "resets" in error["message"]
    assert int(caught.value.response.headers["Retry-After"]) > 0

    _, (refused,) = mcp_calls(stack, stack.tokens[0], ("ask", {"question": QUESTION}))
    assert refused.is_error and "3 questions per day" in refused.content[0].text

    over = rest.post(f"/api/conversations/{conversation}/messages/", json={"content": QUESTION})
    assert over.status_code == 429 and over.json()["code"] == "quota_exceeded"
    assert over.json()["extra"]["limit"] == "questions_per_day" and int(over.headers["Retry-After"]) > 0

    # Usage: exactly the accepted requests, and an answer for each once the worker is done.
    def done() -> bool:
        return Message.objects.filter(conversation__owner=user, role="assistant", status="done").count() == accepted

    wait_for(done, timeout=60, what="three answers")
    today = UsageDay.objects.filter(user=user, day=timezone.localdate())
    sums = today.aggregate(questions=Sum("questions"), answers=Sum("answers_documents"), tokens=Sum("tokens_out"))
    assert sums["questions"] == accepted == 3 and sums["answers"] == 3 and sums["tokens"] > 0
    assert Message.objects.filter(conversation__owner=user, role="user").count() == accepted
    rest.close()

    # Each answer's passages are audited under the way the question came in: /v1, MCP, REST.
    from identity.models import AuditEvent

    channels = {}
    for answer in Message.objects.filter(conversation__owner=user, role="assistant").order_by("pk"):
        channels[answer.pk] = set(AuditEvent.objects.filter(action="answer", message_id=answer.pk)
                                  .values_list("via", flat=True))
    assert list(channels.values()) == [{"v1"}, {"mcp"}, {"api"}], channels
