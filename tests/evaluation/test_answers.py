"""Answer metrics of a run: the fake chat server (real HTTP) answers, the checks need no judge; the
optional judge model's faithfulness is labelled model-judged."""
from __future__ import annotations

import pytest
from django.urls import reverse

from core.errors import Unprocessable
from evaluation import answers, runner, services
from retrieval.models import AiServer, RetrievalSettings

pytestmark = pytest.mark.django_db


@pytest.fixture
def chat(fake_embedder):
    server = AiServer.objects.create(name="fake chat", kind="openai", base_url=fake_embedder.url, read_timeout=5,
                                     capabilities={"chat": True, "chat_model": "fake-chat"})
    RetrievalSettings.objects.filter(pk=1).update(default_chat_server=server)
    return server


def test_key_facts_are_found_in_an_answer_with_numbers_normalised_like_the_number_check():
    assert answers._fact_coverage({"key_facts": ["10 000 Kč", "twenty five days"]},
                                  "It costs 10,000 CZK for Twenty  five days.") == 1.0
    assert answers._fact_coverage({"key_facts": ["5,80 Kč", "meal allowance"]}, "It is 5.8 crowns.") == 0.5
    assert answers._fact_coverage({"key_facts": []}, "anything") is None


def test_a_run_checks_each_answer_and_the_judge_is_model_judged(client, staff_user, user, test_set, chat,
                                                                  fake_embedder):
    judge = AiServer.objects.create(name="judge", kind="openai", base_url=fake_embedder.url, read_timeout=5,
                                    capabilities={"chat": True, "chat_model": "fake-judge"})
    fake_embedder.script_chat(
        "Full-time employees have twenty five days of annual leave [S1].", "0.9",       # q1
        "The allowance is 140 crowns for a trip of five to twelve hours [S1].", "1",  # q2: grounded number
        "I cannot tell from the documents.",                                           # q3: cites nothing
        "The drill is on 3 May [S2].", "0.2",             # q4: not the gold passage, a number it lacks
        "Book it in the fleet system [S1].", "1",                                      # q5
        "The employer pays them [S1].", "no idea",       # q6: the judge's reply holds no rating
    )
    run = services.run_start(test_set_id=test_set.pk, user=user, answers=True, judge_id=judge.pk)
    runner.run_execute(run.pk)
    run.refresh_from_db()
    assert (run.status, run.error) == ("finished", "")
    overall = run.metrics["overall"]
    assert {key: overall[key] for key in ("answers", "citation_correct", "answer_fact_coverage", "numbers_grounded",
                                          "refusal_rate", "faithfulness")} == {
        "answers": 6, "citation_correct": 0.8, "answer_fact_coverage": 1.0, "numbers_grounded": 0.5,
        "refusal_rate": round(1 / 6, 4), "faithfulness": round((0.9 + 1 + 0.2 + 1) / 4, 4)}
    q3 = run.results.get(question__external_id="q3")
    assert q3.answer == "I cannot tell from the documents." and q3.answer_check["refused"] is True
    q4 = run.results.get(question__external_id="q4").answer_check
    assert (q4["citation_correct"], q4["numbers_grounded"], q4["faithfulness"]) == (False, False, 0.2)
    # The judge saw the passage the answer cites (q4: the travel passage) and the answer, framed as data.
    judged = [r["json"] for r in fake_embedder.requests if r["json"] and r["json"].get("model") == "fake-judge"]
    assert len(judged) == 5
    assert "<passage>\nBusiness travel." in judged[2]["messages"][1]["content"]
    assert "<answer>\nThe drill is on 3 May [S2].\n</answer>" in judged[2]["messages"][1]["content"]

    # A retrieval-only run compared with it: the answers' metrics and the answers side by side.
    fake_embedder.script_chat(*["Nothing [S9]."] * 6)
    after = services.run_start(test_set_id=test_set.pk, user=user, answers=True, baseline_id=run.pk,
                               overrides={"final_top_n": 1, "vector_top_k": 1, "fts_top_k": 1})
    runner.run_execute(after.pk)
    client.force_login(staff_user)
    page = client.get(reverse("admin:evaluation_evalrun_change", args=[run.pk])).content.decode()
    assert "faithfulness (model-judged)" in page and "judge model: judge" in page
    assert "I cannot tell from the documents." in page
    compare = client.get(reverse("admin:evaluation_compare", args=[run.pk, after.pk])).content.decode()
    assert "ev-answer-compare" in compare
    assert "+0.833" in compare  # refusals: every answer cites only a tag that does not exist


def test_answer_metrics_need_a_chat_server_and_a_judge_needs_answers(user, test_set, fake_embedder):
    with pytest.raises(Unprocessable, match="No chat server is configured"):
        services.run_start(test_set_id=test_set.pk, user=user, answers=True)
    judge = AiServer.objects.create(name="judge", kind="openai", base_url=fake_embedder.url,
                                    capabilities={"chat": True, "chat_model": "fake-judge"})
    with pytest.raises(Unprocessable, match="ask for answer metrics too"):
        services.run_start(test_set_id=test_set.pk, user=user, judge_id=judge.pk)
    embedder_only = fake_embedder.server_row
    with pytest.raises(Unprocessable, match="must be an active chat server"):
        services.run_start(test_set_id=test_set.pk, user=user, answers=True, judge_id=embedder_only.pk)
