"""Calibrating an embedding model's distances: the service, its task, and the bounds retrieval uses.

`embedding_model_calibrate` embeds the shipped calibration questions with a server of the model
and stores the result on the EmbeddingModel row (retrieval/knowledge/calibration.py says how the
bounds follow). It runs from `manage.py calibrate_embeddings` and, the first time a model embeds
an approved pair, as a background task (`calibration_wanted`, through core.tasks). `distance_bounds`
is what retrieval and the direct answer read: a staff override of the model, else its calibration,
else the deploy-time fallbacks (RetrievalSettings' thresholds, CHAT_QA_DIRECT_DISTANCE) until it is
calibrated.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
from django.utils.translation import gettext
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ApplicationError
from core.tasks import queue
from retrieval.ai.clients import query_embedder_for
from retrieval.knowledge.agreement import AdmissionBounds
from retrieval.knowledge.calibration import bounds_from, calibration_questions
from retrieval.models import AiServer, EmbeddingModel

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Bounds:
    """Cosine distances for one embedding model, and where each came from (override, calibration, setting)."""

    direct: float
    qa: float
    doc: float
    source: dict
    # Per relation of two questions' languages ("same", "cross"): how far its unrelated questions sit
    # from the overall median (calibration.py); empty until calibrated (v2), then no shift applies.
    qa_language_shift: dict = field(default_factory=dict)
    # How close unrelated questions come at the closest (the calibration's 1st percentiles), of one
    # language and of two: the evidence a pair within the Q&A bound is admitted by is weighed against
    # them (agreement.admission). None until calibrated.
    same_language_p1: float | None = None
    cross_language_p1: float | None = None

    def qa_shift(self, question_language: str, pair_language: str) -> float:
        """The shift tier 1 subtracts from a pair's distance: 0 when either language is unknown."""
        if not question_language or not pair_language:
            return 0.0
        return float(self.qa_language_shift.get("same" if question_language == pair_language else "cross", 0.0))

    def admission(self) -> AdmissionBounds:
        """The distances agreement.admission weighs a pair's evidence against."""
        return AdmissionBounds(self.direct, self.same_language_p1, self.cross_language_p1)


def distance_bounds(model: EmbeddingModel | None, rs) -> Bounds:
    """The model's bounds: its staff override, else its calibration, else the deploy-time fallbacks."""
    calibrated = (model.calibration if model is not None else {}) or {}
    fallback = {"direct": settings.CHAT_QA_DIRECT_DISTANCE, "qa": rs.qa_distance_threshold,
                "doc": rs.doc_distance_threshold}
    values, source = {}, {}
    for name in ("direct", "qa", "doc"):
        override = getattr(model, f"{name}_distance_override", None) if model is not None else None
        if override is not None:
            values[name], source[name] = float(override), "override"
        elif calibrated.get(f"{name}_distance") is not None:
            values[name], source[name] = float(calibrated[f"{name}_distance"]), "calibration"
        else:
            values[name], source[name] = float(fallback[name]), "setting"
    shift = calibrated.get("qa_language_shift") or {}
    unrelated = calibrated.get("unrelated") or {}
    closest = {name: float(unrelated[name]) if unrelated.get(name) else None
               for name in ("same_language_p1", "cross_language_p1")}
    return Bounds(values["direct"], values["qa"], values["doc"], source,
                  {k: float(v) for k, v in shift.items() if k in ("same", "cross") and v is not None}, **closest)


def _server_for(model: EmbeddingModel) -> AiServer | None:
    return next((s for s in AiServer.objects.filter(is_active=True)
                 if s.embedding_model == model.name and s.embedding_dim == model.dim), None) \
        or next((s for s in AiServer.objects.filter(is_active=True, kind="builtin")
                 if model.name == s.embedding_model or not s.embedding_model), None)


def embedding_model_calibrate(*, model_id: int, force: bool = False) -> EmbeddingModel:
    """Measure the model's distances and store them on it (again only with `force`)."""
    model = EmbeddingModel.objects.get(pk=model_id)
    if model.calibration.get("direct_distance") is not None and not force:
        return model
    server = _server_for(model)
    if server is None:
        raise ApplicationError(gettext("No active AI server provides the embedding model '%(name)s'.") % {"name": model.name})
    questions = calibration_questions()
    vectors = np.asarray(query_embedder_for(server).embed_queries([q for _, q in questions]), dtype=np.float64)
    if vectors.shape[1] != model.dim:
        raise ApplicationError(gettext("The server '%(name)s' gave %(got)s-dimensional vectors, the model '%(name2)s' has %(dim)s.") % {"name": server.name, "got": vectors.shape[1], "name2": model.name, "dim": model.dim})
    calibration = bounds_from(vectors, [language for language, _ in questions])
    calibration["calibrated_at"] = timezone.now().isoformat()
    calibration["server"] = server.name
    with transaction.atomic():
        locked = EmbeddingModel.objects.select_for_update().get(pk=model_id)
        locked.calibration = calibration
        locked.save(update_fields=["calibration"])
    return locked


def embedding_model_calibrate_task(model_id: int) -> str:
    """The task: calibrate the model unless it is (or is gone); at least once is fine."""
    if not EmbeddingModel.objects.filter(pk=model_id).exists():
        return "skipped: gone"
    try:
        embedding_model_calibrate(model_id=model_id)
    except Exception as exc:  # recorded for staff on the model; the fallbacks stay in use
        EmbeddingModel.objects.filter(pk=model_id).update(calibration={"error": str(exc)[:500]})
        logger.warning("embedding model calibration failed", extra={"model_id": model_id, "reason": str(exc)})
        return "failed"
    return "calibrated"


def calibration_wanted(model: EmbeddingModel) -> None:
    """Queue the model's calibration the first time it is used (marked on the row, so once)."""
    if model.calibration:
        return
    if EmbeddingModel.objects.filter(pk=model.pk, calibration={}).update(calibration={"queued_at": timezone.now().isoformat()}):
        queue(embedding_model_calibrate_task, model.pk, task_name=f"calibrate embedding model {model.pk}")


def calibration_request(*, model_id: int) -> None:
    """Staff asked to measure the model again: queued; the current bounds stay in use until it is done."""
    queue(embedding_model_calibrate_force_task, model_id, task_name=f"calibrate embedding model {model_id} again")


def embedding_model_calibrate_force_task(model_id: int) -> str:
    """The task behind `calibration_request`: measure again even when calibrated."""
    if not EmbeddingModel.objects.filter(pk=model_id).exists():
        return "skipped: gone"
    try:
        embedding_model_calibrate(model_id=model_id, force=True)
    except Exception as exc:  # the earlier calibration stays; the log says why
        logger.warning("embedding model calibration failed", extra={"model_id": model_id, "reason": str(exc)})
        return "failed"
    return "calibrated"
