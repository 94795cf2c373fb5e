"""Whether the closest approved pair of a retrieval result is the answer itself (`qa_direct`).

Used by the chat before it calls a model, and by `manage.py eval_approved_qa` on the same results:
the pair must be within the embedding model's direct-answer distance (the trace's `bounds`,
retrieval/knowledge/calibrating.py) and agree with the question (retrieval/knowledge/agreement.py).
The verdict and its reason go into the trace (`qa_direct_reason`, `qa_direct`).
"""
from __future__ import annotations

from documents.language import detect_question_language
from retrieval.contracts import RetrievalTrace, Segment
from retrieval.knowledge.agreement import Decision, Vocabulary, direct_decision
from retrieval.models import KnowledgeEntry


def approved_vocabulary() -> Vocabulary:
    """How often each word stem occurs among the live approved questions."""
    return Vocabulary.of(KnowledgeEntry.objects.live().values_list("question", flat=True))


def qa_direct_decision(*, question: str, segments: list[Segment], trace: RetrievalTrace,
                       vocabulary: Vocabulary | None = None) -> tuple[Segment | None, Decision | None]:
    """The closest approved pair (None without one) and whether it answers `question` directly."""
    # The closest pair by its own distance: tier 1's order may put a pair in another language first
    # (retrieval/knowledge/calibration.py), and such a pair is never the answer itself.
    pairs = [s for s in segments if s.get("source_type") == "qa" and s.get("distance") is not None]
    top = min(pairs, key=lambda s: float(s["distance"] or 0.0), default=None)
    if top is None:
        return None, None
    bound = (trace.get("bounds") or {}).get("direct")
    pair_question = top.get("question") or ""
    decision = direct_decision(
        question=question, pair_question=pair_question, distance=float(top["distance"] or 0.0), bound=bound,
        question_language=trace.get("question_language") or detect_question_language(question),
        pair_language=detect_question_language(pair_question),
        vocabulary=vocabulary if vocabulary is not None else approved_vocabulary())
    trace["qa_direct_reason"] = decision.reason
    trace["qa_direct"] = {"qa_id": top.get("qa_id"), "distance": top["distance"], "bound": bound,
                          "detail": decision.detail}
    return top, decision
