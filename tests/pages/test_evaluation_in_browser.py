"""In a real browser (issue #35): a curator imports a 50-question set, runs it, runs it again with another
fusion weight, compares the two runs and sees the questions that changed, then checks a deliberately bad
setting on the retrieval settings page and gets the gate's warning (daphne, both clusters, PostgreSQL,
chromium; the fake embedding server's vectors are bags of words).

The bad setting is full text switched off (`fts_weight` 0): with bag-of-words vectors the little words
of the WEIGHED questions lead the vector arm astray, so it costs them their first place (measured by
the comparison first). A Q&A distance threshold of 2 with an unrelated approved pair was tried and
did not do it on the live site (the pair never took a first place there; why was not found in the
time: the service-level test in tests/evaluation/test_runs.py shows it with the same fixtures)."""
from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

DOCUMENTS = {
    "leave.txt": "Annual leave. Full-time employees have twenty five days of annual leave each calendar year. "
                 "Unused days move to the next year until March.",
    "travel.txt": "Business travel. The meal allowance for a domestic trip of five to twelve hours is 140 crowns. "
                  "Train tickets are booked by the office.",
    "server.txt": "Server room. Only the administrators on duty may enter the server room with their access card.",
    "fire.txt": "Fire safety. The fire drill takes place every spring; leave the building by the nearest exit.",
    "car.txt": "Company cars. A company car must be booked in the fleet system one day before the trip.",
    "training.txt": "Training. Language courses are paid by the employer after the probation period ends.",
}
# Ten ways to ask about each of five documents: 50 questions.
ASKED = {
    "leave": ["annual leave days", "How many days of annual leave?", "leave each calendar year",
              "Do unused days move to the next year?", "full-time employees leave", "days of leave per year",
              "When do unused leave days expire?", "annual leave for employees", "next year unused days March",
              "twenty five days"],
    "travel": ["meal allowance", "domestic trip allowance", "How much is the meal allowance?", "trip of five hours",
               "Who books train tickets?", "business travel crowns", "allowance for twelve hours",
               "train tickets office", "140 crowns trip", "business trip meal"],
    "server": ["server room access", "Who may enter the server room?", "access card server",
               "administrators on duty", "enter with access card", "server room rules", "duty administrators room",
               "card for the server room", "Can I enter the server room?", "server access administrators"],
    "fire": ["fire drill", "When is the fire drill?", "nearest exit", "leave the building", "fire safety spring",
             "drill every spring", "Which exit in a fire?", "building exit drill", "fire safety rules",
             "spring fire drill exit"],
    "car": ["company car booking", "How do I book a company car?", "fleet system", "book a car one day before",
            "car for a trip", "fleet booking car", "company cars rules", "day before the trip car",
            "Where to book company cars?", "trip car fleet system"],
}


# Mostly little words: the vector arm (a bag of every word) and full text (content words only) rank these
# differently, so the full-text weight moves them.
WEIGHED = [("server", "card of the the by the next"), ("training", "courses of the the by the year"),
           ("car", "fleet of the by the the is"), ("leave", "March of a the by the trip")]


def fifty_questions() -> bytes:
    plain = [(doc, q) for doc, questions in ASKED.items() for q in questions][:50 - len(WEIGHED)]
    return "\n".join(json.dumps({"id": f"q{n}", "lang": "en", "question": q, "gold_documents": [doc]})
                     for n, (doc, q) in enumerate(plain + WEIGHED)).encode()


def index_library(user) -> None:
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_bytes

    for name, text in DOCUMENTS.items():
        document = upload_bytes(user, text.encode(), name)
        index_document(document.pk)


def wait_until_finished(page, what: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(what)).to_be_visible(timeout=120_000)  # the page refreshes itself every 2 s


def test_a_curator_imports_runs_compares_and_is_warned_by_the_gate(live_site, staff_user, browser, artifacts,
                                                                    fake_embedder):
    from playwright.sync_api import expect

    from evaluation.models import EvalRun, TestSet
    from tests.browser import signed_in_page

    index_library(staff_user)
    test_set = TestSet.objects.create(name="Handbook", k=1, created_by=staff_user)
    page = signed_in_page(browser, live_site.url, staff_user)
    try:
        page.goto(f"{live_site.url}/admin/evaluation/testset/{test_set.pk}/change/")
        page.locator("#ev-import-link").click()
        page.locator("input[name='file']").set_input_files(
            {"name": "handbook.jsonl", "mimeType": "application/json", "buffer": fifty_questions()})
        page.locator("#ev-import-form input[type='submit']").click()
        expect(page.locator(".messagelist")).to_contain_text("50 questions imported")

        for label, weight in (("as it is", None), ("no full text", "0")):
            page.locator("#ev-run-link").click()
            page.locator("input[name='label']").fill(label)
            if weight is not None:
                page.locator("input[name='fts_weight']").fill(weight)
            page.locator("#ev-run-form input[type='submit']").click()
            wait_until_finished(page, "#ev-run-status .rs-badge.ok")
            expect(page.locator("#ev-run-status")).to_contain_text("50 of 50 questions")
            page.goto(f"{live_site.url}/admin/evaluation/testset/{test_set.pk}/change/")

        page.goto(f"{live_site.url}/admin/evaluation/evalrun/")
        page.locator("input.action-select").nth(0).check()
        page.locator("input.action-select").nth(1).check()
        page.locator("select[name='action']").select_option("compare_two")
        page.locator("button[name='index']").click()
        worse = page.locator(".ev-worse")
        # The first three fall from the first place; the fourth was not in the first place to begin with (k=1).
        expect(page.locator(".ev-worse-title")).to_contain_text("3 questions got worse")
        for _doc, question in WEIGHED[:3]:
            expect(worse).to_contain_text(question)
        expect(worse).not_to_contain_text(WEIGHED[3][1])
        page.screenshot(path=artifacts / "evaluation-compare.png", full_page=True)

        page.goto(f"{live_site.url}/admin/retrieval/retrievalsettings/1/change/")
        # The deliberately bad setting, as measured above: full text off drops recall by 0.06 (margin 0.02).
        page.locator("input[name='fts_weight']").fill("0")
        page.locator("#ev-check-first").click()
        wait_until_finished(page, "#ev-gate-warning")
        expect(page.locator("#ev-gate-warning")).to_contain_text("Handbook")
        for _doc, question in WEIGHED[:3]:
            expect(page.locator(".ev-worse").first).to_contain_text(question)
        page.screenshot(path=artifacts / "evaluation-gate-warning.png", full_page=True)
        assert EvalRun.objects.filter(status="finished").count() == 4
        from retrieval.selectors import retrieval_settings_get

        assert retrieval_settings_get().fts_weight == 1.5  # checked on a copy: nothing saved
    finally:
        page.context.close()
