"""Distances calibrated per embedding model (issue #30): measured from the shipped unrelated questions,
stored on the model, used by retrieval, overridden per model by staff; queued on a model's first use."""
from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import call_command
from django_q.models import OrmQ

from retrieval.knowledge.agreement import Vocabulary
from retrieval.knowledge.calibrating import Bounds
from retrieval.knowledge.calibration import bounds_from, calibration_questions
from retrieval.knowledge.direct import qa_direct_decision
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import EmbeddingModel, KnowledgeEntry, RetrievalSettings
from retrieval.search import retrieve


def test_bounds_follow_the_distribution_of_unrelated_questions():
    rng = np.random.default_rng(7)
    languages = ["cs"] * 10 + ["en"] * 10
    spread = rng.normal(size=(20, 16))  # unrelated: nearly orthogonal, distances around 1
    tight = spread * 0.2 + np.ones(16)  # a compressing model: everything close to one direction
    wide, narrow = bounds_from(spread, languages), bounds_from(tight, languages)
    for bounds in (wide, narrow):
        assert 0 < bounds["direct_distance"] < bounds["qa_distance"] < bounds["doc_distance"]
        assert bounds["direct_distance"] == round(bounds["unrelated"]["same_language_p1"] / 2, 4)
    assert narrow["qa_distance"] < wide["direct_distance"]  # the compressed space gets far smaller bounds
    with pytest.raises(ValueError):
        bounds_from(spread[:3], languages[:3])


def test_the_language_shift_follows_how_far_apart_languages_sit():
    rng = np.random.default_rng(11)
    languages = ["cs"] * 12 + ["en"] * 12
    # Each language has its own common direction: unrelated questions of one language sit closer
    # together than two of different languages (as with e5-small).
    accent = {"cs": rng.normal(size=16) * 1.5, "en": rng.normal(size=16) * 1.5}
    vectors = np.array([rng.normal(size=16) + accent[language] for language in languages])
    bounds = bounds_from(vectors, languages)
    unrelated, shift = bounds["unrelated"], bounds["qa_language_shift"]
    assert shift["same"] < 0 < shift["cross"]
    assert shift["same"] == pytest.approx(unrelated["same_language_median"] - bounds["qa_distance"], abs=2e-4)
    assert shift["cross"] == pytest.approx(unrelated["cross_language_median"] - bounds["qa_distance"], abs=2e-4)
    calibrated = Bounds(0.1, bounds["qa_distance"], 0.9, {}, {k: float(v) for k, v in shift.items()})
    assert calibrated.qa_shift("cs", "cs") == shift["same"] and calibrated.qa_shift("cs", "en") == shift["cross"]
    assert calibrated.qa_shift("", "en") == 0.0 and Bounds(0.1, 0.5, 0.9, {}).qa_shift("cs", "en") == 0.0


def test_the_shipped_questions_cover_four_languages():
    questions = calibration_questions()
    assert {language for language, _ in questions} == {"cs", "en", "de", "ru"} and len(questions) >= 40


@pytest.mark.django_db
def test_calibrate_command_stores_bounds_that_retrieval_uses_and_an_override_wins(user, staff_user, fake_embedder,
                                                                                capsys, django_capture_on_commit_callbacks):
    entry = KnowledgeEntry.objects.create(question="How often do raspberries fruit?", answer="Twice.", category="fruit")
    knowledge_entry_approve(entry=entry, user=staff_user)
    OrmQ.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        assert knowledge_entry_embed(entry.pk) == "ready"
    model = entry.embeddings.get().model
    # First use of the model: its calibration is queued once (marked on the row), not run inline.
    assert "queued_at" in model.calibration
    assert [t for t in OrmQ.objects.all() if "calibrat" in t.name()] != []
    assert retrieve(user, "How often do raspberries fruit?").trace["bounds"]["source"] == \
        {"direct": "setting", "qa": "setting", "doc": "setting"}

    call_command("calibrate_embeddings", "--model", model.name)
    report = json.loads(capsys.readouterr().out)
    model.refresh_from_db()
    assert report[str(model)]["direct_distance"] == model.calibration["direct_distance"] > 0
    trace = retrieve(user, "How often do raspberries fruit?").trace
    assert trace["bounds"]["qa"] == model.calibration["qa_distance"]
    assert trace["bounds"]["source"] == {"direct": "calibration", "qa": "calibration", "doc": "calibration"}

    # A staff override is the model's own: it wins over the calibration and over the settings' threshold.
    RetrievalSettings.objects.filter(pk=1).update(qa_distance_threshold=0.99)
    EmbeddingModel.objects.filter(pk=model.pk).update(qa_distance_override=0.0001)
    result = retrieve(user, "How often do raspberries ripen in autumn?")
    assert result.trace["bounds"]["qa"] == 0.0001 and result.trace["bounds"]["source"]["qa"] == "override"
    assert not [s for s in result.segments if s["source_type"] == "qa"]


@pytest.mark.django_db
def test_the_admin_shows_the_distances_in_use_and_saves_a_staff_override(client, django_user_model, fake_embedder,
                                                                         staff_user, django_capture_on_commit_callbacks):
    entry = KnowledgeEntry.objects.create(question="How often do raspberries fruit?", answer="Twice.")
    knowledge_entry_approve(entry=entry, user=staff_user)
    knowledge_entry_embed(entry.pk)
    model = entry.embeddings.get().model
    call_command("calibrate_embeddings", "--model", model.name)
    model.refresh_from_db()
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    url = f"/admin/retrieval/embeddingmodel/{model.pk}/change/"
    page = client.get(url).content.decode()
    assert f"direct answer: {model.calibration['direct_distance']:.4f} (calibrated)" in page
    assert "qa_language_shift" in page and "cross_language_median" in page  # what tier 1 ranks pairs by
    response = client.post(url, {"direct_distance_override": "0.05", "qa_distance_override": "",
                                 "doc_distance_override": ""})
    assert response.status_code == 302, response.content.decode()[:2000]
    model.refresh_from_db()
    assert model.direct_distance_override == 0.05 and model.qa_distance_override is None
    assert "direct answer: 0.0500 (staff override)" in client.get(url).content.decode()
    # "Calibrate again" queues the measurement; the bounds in use stay until it is done.
    OrmQ.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/retrieval/embeddingmodel/", {"action": "calibrate", "_selected_action": [model.pk]})
    assert [t.name() for t in OrmQ.objects.all()] == [f"calibrate embedding model {model.pk} again"]


ENGLISH_PAIRS = ["How many days of training do I get per year?", "How many sick days do I get per year?",
                 "How many home office days do I get per week?", "How many days do I get for my wedding?",
                 "How many days before a trip do I book a hotel?"]
CZECH_PAIR = "Kolik dní dovolené mám za rok?"


@pytest.mark.django_db
def test_the_right_pair_in_another_language_is_not_pushed_out_by_pairs_in_the_users_language(
        user, staff_user, fake_embedder):
    """Ranked by distance alone, pairs that merely share the user's language come first; ranked by distance
    less the model's calibrated language shift, the pair in another language that answers the question is
    ranked within the bound (issue #30: cross-language reach). The meaning test then admits at most two pairs: a
    pair in another language shares no words with the question, so its distance decides alone, against how close
    unrelated questions of two languages come (the calibration's cross-language 1st percentile)."""
    ids = {}
    for question in ENGLISH_PAIRS + [CZECH_PAIR]:
        entry = KnowledgeEntry.objects.create(question=question, answer="See the rules.")
        knowledge_entry_approve(entry=entry, user=staff_user)
        assert knowledge_entry_embed(entry.pk) == "ready"
        ids[question] = entry.pk
    model = EmbeddingModel.objects.get(name="fake-embed")
    asked = "How many days of paid leave do I get per year?"
    calibration = {"direct_distance": 0.01, "qa_distance": 0.7, "doc_distance": 0.9}

    EmbeddingModel.objects.filter(pk=model.pk).update(calibration=calibration)  # v1: no language shift
    by_distance = [s for s in retrieve(user, asked).segments if s["source_type"] == "qa"]
    assert ids[CZECH_PAIR] not in [s["qa_id"] for s in by_distance]  # farthest by distance: left out
    assert [s["qa_id"] for s in by_distance] == [ids[q] for q in ENGLISH_PAIRS[:2]]  # at most two pairs

    shift = {"same": -0.3, "cross": 0.4}
    EmbeddingModel.objects.filter(pk=model.pk).update(calibration={**calibration, "qa_language_shift": shift})
    # Only 4 candidates by distance would hold no Czech pair: every pair the shifted bound may keep is ranked.
    RetrievalSettings.objects.filter(pk=1).update(qa_limit=4)
    result = retrieve(user, asked)
    pairs = [s for s in result.segments if s["source_type"] == "qa"]
    assert result.trace["bounds"]["qa_language_shift"] == shift
    refused = result.trace["tiers"][0]["refused"]
    # Not calibrated for two languages' closeness: a pair in another language needs the direct-answer distance.
    assert refused[0]["qa_id"] == ids[CZECH_PAIR] and refused[0]["reason"] == "cross_language_far"
    # Ranked by its distance less the cross-language shift it is within the bound (without the shift it was not).
    assert refused[0]["ranked_distance"] < 0.7
    assert len(pairs) <= 2 and [s["ranked_distance"] for s in pairs] == sorted(s["ranked_distance"] for s in pairs)
    assert all(s["ranked_distance"] < 0.7 for s in pairs)

    # The direct answer is still judged on the closest pair by its own distance, never on the pair in
    # another language that tier 1 may rank first.
    top, decision = qa_direct_decision(question=asked, segments=list(reversed(pairs)), trace=result.trace,
                                       vocabulary=Vocabulary.of(ENGLISH_PAIRS + [CZECH_PAIR]))
    assert top is not None and top["distance"] == min(s["distance"] for s in pairs)
    assert top["qa_id"] != ids[CZECH_PAIR] and decision is not None and decision.reason == "too_far"

    # Calibrated: the Czech pair is closer than unrelated questions of two languages come (here, by a loose
    # percentile), so it is admitted by its distance alone; farther than that, it is not. (With this shift it
    # ranks first.)
    czech_distance = refused[0]["ranked_distance"] + shift["cross"]
    shift = {"same": -0.3, "cross": 0.6}
    for p1, admitted in ((czech_distance + 0.01, True), (czech_distance - 0.01, False)):
        EmbeddingModel.objects.filter(pk=model.pk).update(calibration={
            **calibration, "qa_language_shift": shift, "unrelated": {"cross_language_p1": p1}})
        result = retrieve(user, asked)
        pairs = [s["qa_id"] for s in result.segments if s["source_type"] == "qa"]
        assert (pairs[:1] == [ids[CZECH_PAIR]]) is admitted and len(pairs) <= 2, (p1, result.trace["tiers"][0])
        assert result.trace["bounds"]["cross_language_p1"] == p1
