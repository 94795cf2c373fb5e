"""Usage per day and the per-group quotas, through the chat REST API, the indexing pipeline, the admin
report, its CSV and `/api/usage/` (docs/usage.md)."""
from __future__ import annotations

import csv
import io
import threading
from datetime import timedelta
from xml.etree import ElementTree

import pytest
from django.contrib.auth.models import Group
from django.db import close_old_connections
from django.utils import timezone

from chat.models import Message
from chat.orchestrator import answer_conversation
from tests.chat.helpers import indexed
from usage.models import GroupQuota, UsageDay
from usage.recorder import question_recorded, usage_add

pytestmark = pytest.mark.django_db

SAFETY = "A competent person inspects the scaffold every seven days. Ladders are checked before each use."


def ask(api, conversation_id: int, question: str):
    return api.post(f"/api/conversations/{conversation_id}/messages/", {"content": question}, format="json")


def totals(**filters) -> dict:
    from django.db.models import Sum

    fields = ("questions", "answers_documents", "answers_failed", "tokens_in", "tokens_out", "cited_documents",
              "indexing_jobs", "indexing_pages")
    sums = UsageDay.objects.filter(**filters).aggregate(**{f: Sum(f) for f in fields})
    return {k: v or 0 for k, v in sums.items()}


def limited(user, name: str = "limited", **limits) -> Group:
    group = Group.objects.create(name=name)
    GroupQuota.objects.create(group=group, **limits)
    user.groups.add(group)
    return group


def test_usage_equals_the_questions_asked_and_answers_given_over_rest(api, user, chat_ai,
                                                                      django_capture_on_commit_callbacks):
    from retrieval.telemetry import render_metrics

    def metric(text: bytes, line: str) -> float:
        found = [row.split()[-1] for row in text.decode().splitlines() if row.startswith(line)]
        return float(found[0]) if found else 0.0

    document = indexed(user, SAFETY, "safety.txt")
    before = render_metrics()
    conversations = [api.post("/api/conversations/", {"title": f"c{i}"}, format="json").json()["id"] for i in range(2)]
    asked = 0
    chat_ai.script_chat(*["The scaffold is inspected every seven days [S1]."] * 5)
    with django_capture_on_commit_callbacks(execute=True):
        for number in range(5):
            response = ask(api, conversations[number % 2], f"How often is the scaffold inspected? ({number})")
            assert response.status_code == 201, response.content
            asked += 1
    for conversation_id in conversations:
        with django_capture_on_commit_callbacks(execute=True):
            answer_conversation(conversation_id)
    answers = list(Message.objects.filter(conversation__owner=user, role="assistant"))
    assert len(answers) == asked and {a.metadata["mode"] for a in answers} == {"documents"}
    got = totals(user=user)
    assert got["questions"] == asked and got["answers_documents"] == asked
    assert got["tokens_in"] == sum(a.metadata["llm_usage"]["prompt_tokens"] for a in answers) > 0
    assert got["tokens_out"] == sum(a.metadata["llm_usage"]["completion_tokens"] for a in answers) > 0
    assert got["cited_documents"] == asked  # one document cited by each answer
    assert got["indexing_jobs"] == 1 and got["indexing_pages"] == 1  # the text file: one page
    assert set(UsageDay.objects.filter(user=user).exclude(chat_model="").values_list("chat_server_id", "chat_model")) == {
        (chat_ai.chat_row.pk, answers[0].metadata["llm_usage"]["model"])}  # counted per server, named by its model

    after = render_metrics()
    assert metric(after, 'ragsite_questions_total{origin="api"}') - metric(before, 'ragsite_questions_total{origin="api"}') == asked
    assert metric(after, 'ragsite_answers_total{mode="documents"}') - metric(before, 'ragsite_answers_total{mode="documents"}') == asked
    assert document.pk


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_questions_are_counted_exactly(user):
    def worker():
        try:
            for _ in range(25):
                question_recorded(user_id=user.pk, collection_id=None, origin="api")
        finally:
            close_old_connections()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert UsageDay.objects.get(user=user).questions == 200


def test_over_the_question_quota_rest_answers_429_naming_the_limit_and_its_reset(api, user):
    limited(user, questions_per_day=2)
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    assert [ask(api, conversation, f"Question {n}?").status_code for n in range(2)] == [201, 201]
    refused = ask(api, conversation, "One more?")
    assert refused.status_code == 429, refused.content
    body = refused.json()
    assert body["code"] == "quota_exceeded"
    assert body["extra"]["limit"] == "questions_per_day" and body["extra"]["allowed"] == 2 and body["extra"]["used"] == 2
    midnight = (timezone.localdate() + timedelta(days=1)).isoformat()
    assert body["extra"]["resets_at"].startswith(midnight)
    assert "2 questions per day" in body["message"] and "resets" in body["message"]
    assert 0 < int(refused["Retry-After"]) <= 86400
    # Nothing of the refused question is kept, and it is not counted.
    assert Message.objects.filter(conversation_id=conversation, role="user").count() == 2
    assert totals(user=user)["questions"] == 2


def test_the_most_generous_group_applies_and_staff_are_exempt(api, user, staff_user, settings):
    from rest_framework.test import APIClient

    limited(user, "narrow", questions_per_day=1)
    wide = limited(user, "wide", questions_per_day=2)
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    assert [ask(api, conversation, f"Q{n}?").status_code for n in range(3)] == [201, 201, 429]
    GroupQuota.objects.filter(group=wide).update(questions_per_day=None)  # an empty limit is no limit
    assert ask(api, conversation, "Q3?").status_code == 201

    staff = APIClient()
    staff.force_authenticate(staff_user)
    limited(staff_user, "staff narrow", questions_per_day=1)
    staff_conversation = staff.post("/api/conversations/", {}, format="json").json()["id"]
    assert [ask(staff, staff_conversation, f"S{n}?").status_code for n in range(2)] == [201, 201]
    settings.QUOTAS_EXEMPT_STAFF = False
    assert ask(staff, staff_conversation, "S2?").status_code == 429


def test_tokens_per_month_refuse_questions_and_regenerating_until_the_first_of_next_month(api, user):
    from identity.language import language_choice_save

    limited(user, tokens_per_month=1000)
    conversation = api.post("/api/conversations/", {}, format="json").json()["id"]
    answer = ask(api, conversation, "First?").json()["assistant_message"]["id"]
    Message.objects.filter(pk=answer).update(status="done", content="Done.")
    usage_add(user_id=user.pk, chat_model="m", tokens_in=700, tokens_out=300)
    refused = ask(api, conversation, "Anything?")
    assert refused.status_code == 429
    extra = refused.json()["extra"]
    first = (timezone.localdate().replace(day=1) + timedelta(days=32)).replace(day=1)
    assert extra["limit"] == "tokens_per_month" and extra["used"] == 1000 and extra["resets_at"].startswith(first.isoformat())
    assert "1000 chat model tokens per month" in refused.json()["message"]
    again = api.post(f"/api/conversations/{conversation}/messages/{answer}/regenerate/")
    assert again.status_code == 429 and again.json()["extra"]["limit"] == "tokens_per_month"
    assert Message.objects.filter(conversation_id=conversation, role="assistant").count() == 1

    # In the user's saved language, whichever way they came in (MCP and token clients have no session).
    language_choice_save(user=user, language="cs")
    czech = ask(api, conversation, "Ještě něco?").json()["message"]
    assert czech.startswith("Limit vaší skupiny 1000 tokenů chatovacího modelu za měsíc je vyčerpán"), czech


def test_pages_per_day_fail_the_indexing_job_then_refuse_uploads(api, user, fake_embedder):
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_bytes
    from tests.pdfgen import text_pdf

    limited(user, pages_per_day=2)
    two = upload_bytes(user, text_pdf([["The turbine spins."], ["The dam holds."]]), "two.pdf")
    three = upload_bytes(user, text_pdf([["One."], ["Two."], ["Three."]]), "three.pdf")
    assert index_document(two.pk).startswith("indexed")
    assert index_document(three.pk) == "failed: quota_exceeded"
    three.refresh_from_db()
    assert "2 indexed pages per day" in three.index_error
    assert totals(user=user)["indexing_pages"] == 2

    refused = api.post("/api/documents/", {"file": io.BytesIO(b"More text."), "title": "more"}, format="multipart")
    assert refused.status_code == 429, refused.content
    assert refused.json()["extra"]["limit"] == "pages_per_day"


def test_pages_per_day_refuse_a_direct_upload_before_any_url(api, user, s3_storage):
    from documents.models import PendingUpload

    limited(user, pages_per_day=3)
    usage_add(user_id=user.pk, indexing_jobs=1, indexing_pages=3)
    refused = api.post("/api/documents/upload-url/", {"name": "x.pdf", "size": 10, "content_type": "application/pdf"},
                       format="json")
    assert refused.status_code == 429 and refused.json()["extra"]["limit"] == "pages_per_day"
    assert "3 indexed pages per day" in refused.json()["message"] and not PendingUpload.objects.exists()


def test_tokens_are_counted_per_chat_server_even_when_two_run_a_model_of_one_name(staff_user, user):
    from rest_framework.test import APIClient

    from retrieval.models import AiServer
    from usage.recorder import answer_recorded

    servers = [AiServer.objects.create(name=name, kind="openai", base_url=f"http://{name}.invalid/v1",
                                       capabilities={"chat": True, "chat_model": "llama3.1:8b"})
               for name in ("gpu-a", "gpu-b")]
    for server, tokens in ((servers[0], 100), (servers[1], 10), (servers[0], 1)):
        answer_recorded(user_id=user.pk, collection_id=None, mode="documents", chat_model="llama3.1:8b",
                        chat_server_id=server.pk, tokens_in=tokens, tokens_out=tokens * 2)
    staff = APIClient()
    staff.force_authenticate(staff_user)
    report = staff.get("/api/usage/").json()
    by_server = [(e["chat_server"], e["chat_model"], e["tokens_in"], e["tokens_out"])
                 for e in report["totals"]["tokens_by_server"]]
    assert by_server == [("gpu-a", "llama3.1:8b", 101, 202), ("gpu-b", "llama3.1:8b", 10, 20)]
    assert report["days"][-1]["tokens_by_server"] == report["totals"]["tokens_by_server"]


def test_usage_api_is_for_staff_with_the_report_permission_with_daily_figures_and_filters(api, user, other_user, staff_user, client):
    from rest_framework.test import APIClient

    today = timezone.localdate()
    group = Group.objects.create(name="readers")
    user.groups.add(group)
    usage_add(user_id=user.pk, questions=3, answers_documents=2, answers_refused=1, chat_model="m1",
              tokens_in=100, tokens_out=20)
    usage_add(user_id=user.pk, questions=1, day=today - timedelta(days=2))
    usage_add(user_id=other_user.pk, questions=5, indexing_seconds=90, indexing_pages=4)

    from django.contrib.auth.models import Permission

    assert api.get("/api/usage/").status_code == 403
    assert APIClient().get("/api/usage/").status_code in (401, 403)
    staff = APIClient()
    # Staff without the admin report's permission read nothing (per-user counts, user names).
    helpdesk = type(staff_user).objects.create_user(username="helpdesk", password="x-pass-123", is_staff=True)
    staff.force_authenticate(helpdesk)
    assert staff.get("/api/usage/", {"user": "bob"}).status_code == 403
    assert staff.get("/api/usage/").status_code == 403
    helpdesk.user_permissions.add(Permission.objects.get(codename="view_usageday"))
    staff.force_authenticate(type(staff_user).objects.get(pk=helpdesk.pk))  # permissions are cached per object
    assert staff.get("/api/usage/", {"user": "bob"}).json()["totals"]["questions"] == 5
    staff.force_authenticate(staff_user)  # a superuser

    everyone = staff.get("/api/usage/", {"from": (today - timedelta(days=2)).isoformat()}).json()
    assert [d["date"] for d in everyone["days"]] == [(today - timedelta(days=n)).isoformat() for n in (2, 1, 0)]
    assert [d["questions"] for d in everyone["days"]] == [1, 0, 8]
    assert everyone["totals"]["questions"] == 9 and everyone["totals"]["indexing_minutes"] == 1.5

    mine = staff.get("/api/usage/", {"group": "readers"}).json()
    day = mine["days"][-1]
    assert day["questions"] == 3 and day["answers"]["documents"] == 2 and day["answers"]["refused"] == 1
    assert day["unanswered_rate"] == round(1 / 3, 4)
    assert day["tokens_by_server"] == [{"chat_server_id": None, "chat_server": None, "chat_model": "m1",
                                        "chat_models": ["m1"], "tokens_in": 100, "tokens_out": 20}]
    assert len(mine["days"]) == 30 and mine["totals"]["questions"] == 4
    assert staff.get("/api/usage/", {"user": "bob"}).json()["totals"]["questions"] == 5

    from documents.models import Collection

    rules = Collection.objects.create(name="Rules", slug="rules")
    usage_add(user_id=other_user.pk, collection_id=rules.pk, questions=2)
    for ref in ("rules", str(rules.pk)):
        assert staff.get("/api/usage/", {"collection": ref}).json()["totals"]["questions"] == 2
    assert staff.get("/api/usage/", {"collection": "nope"}).status_code == 400
    for name in ("collection", "group", "user"):  # "²" is a digit to str.isdigit, but no id
        assert staff.get("/api/usage/", {name: "²"}).status_code == 400, name

    bad = staff.get("/api/usage/", {"from": "yesterday"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid" and "from" in bad.json()["extra"]["fields"]
    assert staff.get("/api/usage/", {"group": "nobody"}).status_code == 400
    assert staff.get("/api/usage/", {"from": today.isoformat(), "to": (today - timedelta(days=1)).isoformat()}).status_code == 400


def test_admin_report_chart_and_csv(client, staff_user, user):
    today = timezone.localdate()
    usage_add(user_id=user.pk, questions=4, answers_documents=3, answers_general=1, cited_documents=3)
    usage_add(user_id=user.pk, questions=2, day=today - timedelta(days=1))
    client.force_login(staff_user)
    page = client.get("/admin/usage/usageday/", {"user": "alice", "start": (today - timedelta(days=6)).isoformat()})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="usage-days"' in html and "usage-csv" in html and "/admin/usage/usageday/chart.svg?" in html

    svg = client.get("/admin/usage/usageday/chart.svg", {"user": "alice"})
    assert svg["Content-Type"] == "image/svg+xml"
    root = ElementTree.fromstring(svg.content)
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 3

    exported = client.get("/admin/usage/usageday/export.csv", {"user": "alice", "start": (today - timedelta(days=1)).isoformat()})
    assert exported["Content-Type"].startswith("text/csv") and "attachment" in exported["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert [r["date"] for r in rows] == [(today - timedelta(days=1)).isoformat(), today.isoformat()]
    assert [r["questions"] for r in rows] == ["2", "4"]
    assert rows[1]["answers_documents"] == "3" and rows[1]["unanswered_rate"] == "0.25" and rows[0]["unanswered_rate"] == ""

    assert client.get("/admin/usage/usageday/export.csv", {"start": "soon"}).status_code == 400
    client.force_login(user)
    assert client.get("/admin/usage/usageday/export.csv").status_code == 302  # not staff: to the admin's login


def test_a_curator_reads_his_collections_usage_in_the_report_and_no_other(client, user, django_user_model):
    """A staff curator without the model permission: the report holds his collections' rows only."""
    from django.contrib.auth.models import Group

    from documents.models import Collection

    curators = Group.objects.create(name="hr-curators")
    carol = django_user_model.objects.create_user(username="carol", password="carol-pass-123", is_staff=True)
    carol.groups.add(curators)
    hr = Collection.objects.create(name="HR", slug="hr", curator_group=curators)
    payroll = Collection.objects.create(name="Payroll", slug="payroll")
    usage_add(user_id=user.pk, collection_id=hr.pk, questions=3)
    usage_add(user_id=user.pk, collection_id=payroll.pk, questions=5)
    usage_add(user_id=user.pk, questions=7)
    client.force_login(carol)
    page = client.get("/admin/usage/usageday/")
    assert page.status_code == 200
    html = page.content.decode()
    assert ">HR</option>" in html and "Payroll" not in html
    rows = list(csv.DictReader(io.StringIO(client.get("/admin/usage/usageday/export.csv").content.decode())))
    assert sum(int(r["questions"]) for r in rows) == 3
    assert client.get("/admin/usage/usageday/export.csv", {"collection": payroll.pk}).status_code == 400
    # The API keeps to the same rows.
    api_totals = client.get("/api/usage/").json()["totals"]
    assert api_totals["questions"] == 3
    # Staff who curate nothing: no report.
    sam = django_user_model.objects.create_user(username="sam", password="sam-pass-123", is_staff=True)
    client.force_login(sam)
    assert client.get("/admin/usage/usageday/").status_code == 403
