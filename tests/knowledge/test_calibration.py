"""Distances calibrated per embedding model (issue #30): measured from the shipped unrelated questions,
stored on the model, used by retrieval, overridden per model by staff; queued on a model's first use."""
from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import call_command
from django_q.models import OrmQ

from retrieval.knowledge.calibration import bounds_from, calibration_questions
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
