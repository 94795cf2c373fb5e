"""How one answer is produced: retrieval, then the model (streamed), an extractive answer, or an approved Q&A pair.

`metadata.mode` says which: `qa_direct` (an approved Q&A pair within the embedding model's direct
distance that agrees with the question, retrieval/knowledge/direct.py; no model), `documents` (the model answered from passages), `general` (nothing was found, or retrieval
is off, and the policy lets the model answer as an ordinary assistant: marked "not from your
documents", no citations), `refused` (nothing was found and the policy is `refuse`), `extractive`
(no chat server, or it failed or timed out: then marked with a notice), `agent` (agentic search), `waiting` (an attached document is not indexed yet).

Pure of status bookkeeping (that is chat.orchestrator): :func:`produce` streams text through
`job.emit` and returns what was said and what it may cite. In agentic mode the model searches
itself (chat.agent); a question naming an attached document not indexed yet gets a plain
answer saying so (chat.waiting).
"""
from __future__ import annotations

import time

import numpy as np
from django.conf import settings
from django.utils import timezone
from django.utils import translation
from django.utils.translation import gettext_lazy as _, gettext_noop

from chat.agent import answer_agentic
from chat.citations import segment_excerpt
from chat.extractive import extractive_answer
from chat.followups import search_query
from chat.generation import (
    AnswerFailed,
    Outcome,
    no_model_usage,
    stream_answer,
    chat_server,
    context_budget,
    context_sources,
    history_for,
    without_addresses,
)
from chat.reply_language import reply_language
from chat.prompts import (
    build_general_messages,
    build_messages,
    build_plain_messages,
    general_system_prompt,
    rag_system_prompt,
    render_persona,
    tag_segments,
)
from chat.selectors import conversation_scope
from chat.waiting import documents_waited_for, waiting_answer
from core.reasons import reason
from retrieval.ai import AiServerError
from retrieval.ai.clients import query_embedder_for
from retrieval.knowledge.direct import qa_direct_decision
from retrieval.search import QuestionContext, question_context, retrieve
from retrieval.search.followup import keep_rewrite_if_needed
from retrieval.selectors import default_embedding_server, retrieval_settings_get
from retrieval.telemetry import EMBED_LATENCY, MODEL_UNAVAILABLE

AGENTIC = "agentic"
# A code in the message metadata (the page shows its own words for it), not a sentence.
NOT_FROM_DOCUMENTS = "not from your documents"
REFUSAL = _("The documents do not say: nothing relevant to this question was found in them.")
MODEL_UNAVAILABLE_NOTICE = _("The language model is unavailable; here are the passages that answer your question.")


def produce(job) -> Outcome:
    """Answer `job.question`; stream through `job.emit(text)`; raise AnswerFailed/AiServerError on failure.

    The texts ragsite writes into the answer itself (notices, the refusal, waiting lines, failures) are
    in the question's language when the site has it, else the asker's (chat.reply_language)."""
    with translation.override(reply_language(job.question.content, job.conversation.owner)):
        return _produce(job)


def _produce(job) -> Outcome:
    rs = retrieval_settings_get()
    server = chat_server(rs)
    question = job.question.content
    if not rs.rag_enabled:
        if server is None:
            raise AnswerFailed(reason("answer.nothing_to_answer_with", gettext_noop(
                "Searching the documents is switched off and no chat server is configured, so there is nothing to "
                "answer with.")))
        messages = build_plain_messages(question=question, history=history_for(job.question),
                                        history_token_budget=settings.CHAT_HISTORY_TOKENS)
        job.mark("prompt")
        text, usage = stream_answer(job, server, messages, json_mode=False)
        return Outcome("general", text, usage=usage, extra={"notice": NOT_FROM_DOCUMENTS,
                                                             "general_reason": "retrieval is switched off"})

    waited = documents_waited_for(job.conversation, question,
                                  indexed_part_answers=lambda: _indexed_part_answers(job, rs))
    if waited:
        text, documents = waiting_answer(waited)
        job.emit(text)
        return Outcome("waiting", text, usage=no_model_usage("waiting"), extra={"waiting_for_documents": documents})
    if rs.chat_mode == AGENTIC:
        if server is not None and server.can("tools"):
            try:
                return answer_agentic(job, server, rs)
            except AiServerError as exc:  # the same marked extractive answer as the plain path, not a failure
                return _agent_unavailable(job, exc)
        outcome = _from_context(job, rs, server)
        outcome.extra["agentic_fallback"] = (
            "Agentic search is on, but no chat server is configured, so the passages were quoted instead."
            if server is None else
            f"Agentic search is on, but the chat server '{server.name}' is not marked as able to call tools "
            "(capability “Tool calling”), so the retrieved passages were given in the prompt instead.")
        return outcome
    return _from_context(job, rs, server)


def _from_context(job, rs, server) -> Outcome:
    """Retrieve first, then answer from those passages (the model's, an extractive or an approved answer)."""
    question = job.question.content
    params = job.question.metadata or {}
    user = job.conversation.owner
    # A follow-up ("And for part-timers?") is searched as a standalone query; the answer addresses the message.
    rewrite = search_query(job.question, server)
    if rewrite.method == "model":
        job.mark("query_rewrite")
    context = question_context(rs)  # read once for the embedding below and for retrieve()
    given, embedding_ms = _question_vectors(job, rewrite.query, rs, context)
    scope = conversation_scope(user, job.conversation)
    category, subcategory = params.get("category") or None, params.get("subcategory") or None
    result = retrieve(user, rewrite.query, scope, category, subcategory, query_vectors=given, context=context)
    if given:
        timings = result.trace["timings_ms"]
        timings["query_embedding"] = round(timings.get("query_embedding", 0) + embedding_ms, 2)
    # Earlier words join the question only when it retrieves weakly alone (a new subject keeps its own words).
    rewrite, alone = keep_rewrite_if_needed(rewrite, result.segments,
                                            lambda text: retrieve(user, text, scope, category, subcategory,
                                                                  context=context))
    result = alone or result
    result.trace["query_rewrite"] = rewrite.trace()
    job.mark("retrieval")
    segments = result.segments
    # An approved pair is the answer itself only within the model's direct distance and when it agrees
    # with the question (numbers, negation, rare words); else it is a tier-1 source the model judges.
    top, decision = qa_direct_decision(question=question, segments=segments, trace=result.trace)
    if top is not None and decision is not None and decision.direct:
        tag_map = {"S1": top}
        job.sources(context_sources(tag_map))
        text = f"{top.get('answer') or segment_excerpt(top)} [S1]"
        job.emit(text)
        return Outcome("qa_direct", text, tag_map, usage=no_model_usage("approved Q&A"), segments=segments,
                       trace=result.trace)
    if server is None:  # extractive: with nothing found it says so in the question's language
        tagged = tag_segments(segments)
        tag_map = {t.tag: t.segment for t in tagged}
        job.sources(context_sources(tag_map))
        text = extractive_answer(rewrite.query, tagged)
        job.mark("prompt")
        for i, paragraph in enumerate(text.split("\n\n")):
            job.emit(("\n\n" if i else "") + paragraph)
        return Outcome("extractive", text, tag_map, usage=no_model_usage("extractive"), segments=segments,
                       trace=result.trace)

    persona = render_persona(rs.persona, category=params.get("category") or "",
                             subcategory=params.get("subcategory") or "", date=timezone.localdate().isoformat(),
                             user=user.get_full_name() or user.get_username())
    if not segments:
        return _nothing_found(job, rs, server, persona, result)
    json_mode = bool(server.capabilities.get("json_answers"))
    budget: dict = {}
    messages, tag_map = build_messages(
        question=question, segments=segments, history=history_for(job.question),
        history_token_budget=settings.CHAT_HISTORY_TOKENS, context_token_budget=context_budget(server),
        json_mode=json_mode, budget_report=budget, system_prompt=rag_system_prompt(persona, json_mode=json_mode),
    )
    result.trace["context_budget"] = budget  # what the prompt kept and cut, and why
    job.sources(context_sources(tag_map))
    job.mark("prompt")
    try:
        text, usage = stream_answer(job, server, messages, json_mode=json_mode)
    except AiServerError as exc:
        return _model_unavailable(job, rewrite.query, segments, result, exc)
    return Outcome("documents", text, tag_map, json_mode=json_mode, usage=usage, segments=segments, trace=result.trace)


def _question_vectors(job, query: str, rs, context: QuestionContext) -> tuple[dict[int, np.ndarray] | None, float]:
    """The question embedded by the default embedding server before retrieval ({server id: vector}, ms),
    so that the gap inbox reuses the vector (`job.question_vector`) instead of embedding it again.

    Only when retrieval would embed it with that server anyway (tier 1 does, once the server's model is
    known) and the searched text is the question itself (not a follow-up's rewrite): never an extra call.
    An AiServerError is raised as retrieval would have raised it."""
    if query != job.question.content.strip():
        return None, 0.0
    server = default_embedding_server(rs)
    if server is None or not server.embedding_model or context.model is None:  # no row of its model yet
        return None, 0.0
    started = time.perf_counter()
    client = query_embedder_for(server)
    vector = client.embed_queries([query])[0]
    elapsed = time.perf_counter() - started
    EMBED_LATENCY.observe(elapsed)
    job.question_vector = (client.model, [float(x) for x in vector])
    return {server.pk: np.asarray(vector, dtype=np.float32)}, elapsed * 1000


def _model_unavailable(job, question: str, segments, result, exc: AiServerError) -> Outcome:
    """The chat server failed or timed out: the extractive answer from the same passages, marked as such.

    The failure goes into the trace (`model_failure`, its text without server addresses) and the
    metrics; retrying the answer later asks the model again."""
    reason = "timeout" if exc.timed_out else "error"
    MODEL_UNAVAILABLE.labels(reason=reason).inc()
    result.trace["model_failure"] = {"reason": reason, "transient": exc.transient, "error": without_addresses(str(exc))}
    notice = str(MODEL_UNAVAILABLE_NOTICE)
    tagged = tag_segments(segments)
    tag_map = {t.tag: t.segment for t in tagged}
    job.sources(context_sources(tag_map))
    job.restart()  # what the model streamed before it broke is replaced from offset 0
    quoted = extractive_answer(question, tagged)
    if tagged:  # its first paragraph says no model is configured: this notice says what happened instead
        quoted = quoted.split("\n\n", 1)[-1]
    text = notice + "\n\n" + quoted
    for i, paragraph in enumerate(text.split("\n\n")):
        job.emit(("\n\n" if i else "") + paragraph)
    return Outcome("extractive", text, tag_map, usage=no_model_usage("extractive"), segments=segments,
                   trace=result.trace, extra={"notice": notice, "model_unavailable": reason})


def _agent_unavailable(job, exc: AiServerError) -> Outcome:
    """The chat server failed during agentic search: the passages one retrieval finds, quoted and marked.

    The follow-up rewrite is the heuristic's (the model is what failed); the trace says agentic mode was on."""
    params = job.question.metadata or {}
    user = job.conversation.owner
    rewrite = search_query(job.question, None)
    scope = conversation_scope(user, job.conversation)
    category, subcategory = params.get("category") or None, params.get("subcategory") or None
    result = retrieve(user, rewrite.query, scope, category, subcategory)
    rewrite, alone = keep_rewrite_if_needed(rewrite, result.segments,
                                            lambda text: retrieve(user, text, scope, category, subcategory))
    result = alone or result
    result.trace["query_rewrite"] = rewrite.trace()
    job.mark("retrieval")
    outcome = _model_unavailable(job, rewrite.query, result.segments, result, exc)
    outcome.extra["agentic_fallback"] = ("Agentic search is on, but the chat server failed, so the passages one "
                                         "search found were quoted instead.")
    return outcome


def _indexed_part_answers(job, rs) -> bool:
    """Whether what is indexed already answers the question: a passage within the document distance
    threshold, or an approved Q&A pair within the Q&A threshold (the waiting rule, chat.waiting)."""
    params = job.question.metadata or {}
    user = job.conversation.owner
    result = retrieve(user, job.question.content, conversation_scope(user, job.conversation),
                      category=params.get("category") or None, subcategory=params.get("subcategory") or None)
    bounds = result.trace.get("bounds") or {"qa": rs.qa_distance_threshold, "doc": rs.doc_distance_threshold}
    for segment in result.segments:  # the embedding model's distances (calibrated, or the settings' until then)
        limit = bounds["qa"] if segment.get("source_type") == "qa" else bounds["doc"]
        distance = segment.get("ranked_distance", segment.get("distance"))  # a pair: as tier 1 bounded it
        if distance is not None and distance < limit:
            return True
    return False


def _nothing_found(job, rs, server, persona: str, result) -> Outcome:
    """No passage and no approved answer: the retrieval setting `no_passages_policy` decides."""
    if rs.no_passages_policy == "refuse":
        refusal = str(REFUSAL)
        job.emit(refusal)
        return Outcome("refused", refusal, usage=no_model_usage("refused"), trace=result.trace)
    messages = build_general_messages(question=job.question.content, system_prompt=general_system_prompt(persona),
                                      history=history_for(job.question),
                                      history_token_budget=settings.CHAT_HISTORY_TOKENS)
    job.mark("prompt")
    text, usage = stream_answer(job, server, messages, json_mode=False)
    return Outcome("general", text, usage=usage, trace=result.trace,
                   extra={"notice": NOT_FROM_DOCUMENTS, "general_reason": "nothing relevant was found"})
