"""retrieve() on real PostgreSQL: hybrid order, languages, tiers, two models, isolation, HNSW filtering."""
from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from rest_framework.test import APIClient

from chat.models import Conversation, ConversationDocument
from documents.models import Chunk, Document
from retrieval.search.fusion import rrf, scaled, score_fusion
from retrieval.tasks import index_document
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import AiServer, ChunkEmbedding, KnowledgeEntry, RetrievalSettings, SubcategoryMapping
from retrieval.search.scope import reader_transaction, scope_for
from retrieval.search import retrieve
from retrieval.vectors import embedding_model_ensure
from tests.documents.factories import upload_bytes

pytestmark = pytest.mark.django_db


def indexed(owner, text: str, name: str = "doc.txt", **kwargs) -> Document:
    document = upload_bytes(owner, text.encode(), name, **kwargs)
    index_document(document.pk)
    document.refresh_from_db()
    assert document.status == "indexed", document.index_error
    return document


# --- fusion (pure) ---------------------------------------------------------------------------


def test_rrf_orders_by_summed_reciprocal_ranks():
    fused = rrf({"vector": ["a", "b", "c"], "fts": ["c", "a", "d"]}, k=60)
    assert [f.key for f in fused][:2] == ["a", "c"]
    assert fused[0].ranks == {"vector": 1, "fts": 2}
    assert {f.key for f in fused} == {"a", "b", "c", "d"}


def test_rrf_weights_shift_the_order_and_zero_weight_only_annotates():
    arms = {"vector": ["a", "b"], "fts": ["b", "a"]}
    assert rrf(arms, weights={"vector": 1.0, "fts": 0.5})[0].key == "a"
    assert rrf(arms, weights={"vector": 0.5, "fts": 1.0})[0].key == "b"
    only_vector = rrf(arms, weights={"vector": 1.0, "fts": 0.0})
    assert [f.key for f in only_vector] == ["a", "b"]
    assert only_vector[1].ranks["fts"] == 1


def test_scaled_puts_a_list_on_its_own_scale():
    assert scaled([0.9, 0.85, 0.8], "range") == pytest.approx([1.0, 0.5, 0.0])
    assert scaled([0.4, 0.2, 0.1], "best") == pytest.approx([1.0, 0.5, 0.25])
    assert scaled([0.7, 0.7], "range") == [1.0, 1.0]  # nothing to tell apart: all count fully
    assert scaled([0.0, 0.0], "best") == [1.0, 1.0]
    assert scaled([], "range") == []


# Each arm's (key, score), best first: the vector arm's cosine similarities close together, the full-text
# arm's first passage far above the rest of its list; "a" and "b" are in both lists, lower down.
VECTOR = [("v", 0.90), ("a", 0.89), ("b", 0.88), ("c", 0.80)]
FTS = [("x", 1.0), ("a", 0.2), ("b", 0.19), ("c", 0.1)]


def test_score_fusion_keeps_a_clearly_separated_first_place_that_rrf_outvotes():
    weights = {"vector": 1.0, "fts": 1.5}
    fused = score_fusion({"vector": VECTOR, "fts": FTS}, scales={"vector": "range", "fts": "best"}, weights=weights)
    assert [f.key for f in fused][:4] == ["x", "a", "b", "v"]
    assert fused[0].score == pytest.approx(1.5) and fused[0].ranks == {"fts": 1}
    assert fused[1].score == pytest.approx(0.9 + 1.5 * 0.2) and fused[1].ranks == {"vector": 2, "fts": 2}
    # Reciprocal ranks: "a", second in both lists, outvotes full text's clear first (1/62 + 1.5/62 > 1.5/61).
    by_rank = rrf({"vector": [k for k, _ in VECTOR], "fts": [k for k, _ in FTS]}, k=60, weights=weights)
    assert by_rank[0].key == "a"


def test_score_fusion_zero_weight_only_annotates_and_one_list_keeps_its_order():
    fused = score_fusion({"vector": VECTOR, "fts": FTS}, scales={"fts": "best"}, weights={"vector": 1.0, "fts": 0.0})
    assert [f.key for f in fused][:3] == ["v", "a", "b"]
    assert {f.key for f in fused[3:]} == {"c", "x"} and fused[3].score == fused[4].score == 0.0  # the list's last adds 0
    assert fused[0].ranks == {"vector": 1} and next(f for f in fused if f.key == "x").ranks == {"fts": 1}
    alone = score_fusion({"fts": [("p", 2.0), ("q", 2.0), ("r", 1.0)]}, scales={"fts": "best"})
    assert [f.key for f in alone] == ["p", "q", "r"]  # a tie keeps the list's order
    twice = score_fusion({"vector": [("p", 0.9), ("p", 0.8), ("q", 0.7)]}, scales={})
    assert twice[0].score == pytest.approx(1.0) and twice[0].ranks == {"vector": 1}


# --- hybrid search ---------------------------------------------------------------------------


def test_hybrid_finds_the_right_passage_with_full_segment_fields(user, fake_embedder):
    indexed(user, "Raspberries grow on canes. Everbearing raspberries fruit twice a year, in summer and autumn.",
            "berries.txt")
    indexed(user, "The suspension bridge over the river was opened in 1932 after four years of construction.",
            "bridge.txt")
    result = retrieve(user, "When was the bridge opened?")
    top = result.segments[0]
    assert top["document_name"] == "bridge.txt"
    assert top["source_type"] == "document" and top["tier"] == 2
    for key in ("chunk_id", "document_id", "document_name", "chunk_index", "page_number", "heading_path",
                "start_offset", "end_offset", "excerpt", "score", "distance", "vector_rank", "fts_rank"):
        assert key in top
    assert top["vector_rank"] == 1 and top["fts_rank"] == 1
    assert 0 <= top["distance"] < 1
    trace = result.trace
    assert trace["scope"] == "all"
    assert trace["tiers"][0]["candidate_documents"] == 2
    assert {"query_embedding", "vector_arm_t2", "fts_arm_t2", "fusion_t2", "total"} <= set(trace["timings_ms"])


def test_the_fusion_setting_chooses_scores_or_reciprocal_ranks_and_the_trace_says_which(user, fake_embedder):
    indexed(user, "The suspension bridge over the river was opened in 1932 after four years of construction.",
            "bridge.txt")
    indexed(user, "Raspberries grow on canes and fruit twice a year, in summer and in autumn.", "berries.txt")
    question = "When was the suspension bridge opened?"
    by_scores = retrieve(user, question)
    tier = by_scores.trace["tiers"][0]
    first = by_scores.segments[0]
    assert tier["fusion"] == "scores"
    assert tier["fused_first"] == {name: first[f"{name}_rank"] for name in ("vector", "fts") if first[f"{name}_rank"]}
    assert first["document_name"] == "bridge.txt" and first["fts_rank"] == 1
    # The first of both lists: the full weight of each (its share is 1 on either scale).
    assert first["score"] == pytest.approx(tier["vector_weight"] + tier["fts_weight"], abs=1e-6)

    RetrievalSettings.objects.filter(pk=1).update(fusion="rrf")
    by_rank = retrieve(user, question)
    tier = by_rank.trace["tiers"][0]
    first = by_rank.segments[0]
    assert tier["fusion"] == "rrf"
    assert first["document_name"] == "bridge.txt"
    k = RetrievalSettings.objects.get().rrf_k
    assert first["score"] == pytest.approx(tier["vector_weight"] / (k + first["vector_rank"])
                                           + tier["fts_weight"] / (k + first["fts_rank"]), abs=1e-6)


def test_full_text_uses_each_documents_language_configuration(user, fake_embedder):
    german = indexed(user, "Die alten Häuser der Stadt wurden im Krieg zerstört und danach wieder aufgebaut. "
                           "Viele Häuser stehen heute unter Denkmalschutz, und die Stadt ist stolz auf sie.", "de.txt")
    english = indexed(user, "The houses of the old town were rebuilt after the war and many of them are protected.",
                      "en.txt")
    assert german.text_config == "german" and english.text_config == "english"
    # German stemming: "Haus" finds "Häuser"; English stemming: "house" finds "houses".
    de = retrieve(user, "Haus", arms=("fts",)).segments
    assert [s["document_name"] for s in de] == ["de.txt"]
    en = retrieve(user, "house", arms=("fts",)).segments
    assert [s["document_name"] for s in en] == ["en.txt"]


def test_vector_and_fts_arms_can_run_alone(user, fake_embedder):
    indexed(user, "Photosynthesis turns light into chemical energy in plants.", "bio.txt")
    vector_only = retrieve(user, "photosynthesis light energy", arms=("vector",))
    assert vector_only.segments and vector_only.segments[0]["fts_rank"] is None
    fts_only = retrieve(user, "photosynthesis", arms=("fts",))
    assert fts_only.segments and fts_only.segments[0]["vector_rank"] is None


# --- scope and isolation -----------------------------------------------------------------------


def test_conversation_attachments_limit_the_scope(user, fake_embedder):
    a = indexed(user, "Apples are harvested in autumn.", "apples.txt")
    indexed(user, "Apples are also used for cider in Normandy.", "cider.txt")
    conversation = Conversation.objects.create(owner=user)
    ConversationDocument.objects.create(conversation=conversation, document=a)
    result = retrieve(user, "apples", scope_for(user, conversation=conversation))
    assert {s["document_id"] for s in result.segments} == {a.pk}
    assert result.trace["scope"] == "attached"
    unattached = Conversation.objects.create(owner=user)
    assert len({s["document_id"] for s in retrieve(user, "apples", scope_for(user, conversation=unattached)).segments}) == 2


def first_document_only(user, conversation):
    """A conversation-scope resolver the CONVERSATION_SCOPE setting can name: the user's first document."""
    from retrieval.search.scope import documents_scope

    return documents_scope(user, [Document.objects.filter(owner=user).order_by("id").values_list("id", flat=True)[0]],
                           conversation_id=int(getattr(conversation, "pk", conversation)))


def test_the_conversation_scope_is_the_extension_point_the_setting_names(user, fake_embedder, settings):
    """No start-up registry: scope_for(conversation=) calls what settings.CONVERSATION_SCOPE names, and
    with none named no conversation exists, for the search API too."""
    from core.errors import NotFound

    first = indexed(user, "Apples are harvested in autumn.", "apples.txt")
    indexed(user, "Apples are also used for cider in Normandy.", "cider.txt")
    conversation = Conversation.objects.create(owner=user)  # nothing attached: the chat's scope is "all"
    assert settings.CONVERSATION_SCOPE == "chat.selectors.conversation_scope"
    assert scope_for(user, conversation=conversation).kind == "all"
    settings.CONVERSATION_SCOPE = f"{__name__}.first_document_only"
    scope = scope_for(user, conversation=conversation.pk)
    assert (scope.kind, scope.attached_ids, scope.conversation_id) == ("attached", [first.pk], conversation.pk)
    settings.CONVERSATION_SCOPE = ""
    with pytest.raises(NotFound):
        scope_for(user, conversation=conversation)
    api = APIClient()
    api.force_authenticate(user)
    response = api.get("/api/search/", {"q": "apples", "conversation": conversation.pk})
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_users_never_see_each_others_chunks(user, other_user, fake_embedder):
    secret = indexed(user, "The launch code is tango seven seven alpha.", "secret.txt")
    indexed(other_user, "A public note about gardening and tomatoes.", "garden.txt")
    result = retrieve(other_user, "launch code tango alpha")
    assert all(s["document_id"] != secret.pk for s in result.segments)
    conversation = Conversation.objects.create(owner=user)
    ConversationDocument.objects.create(conversation=conversation, document=secret)
    from core.errors import NotFound

    with pytest.raises(NotFound):
        retrieve(other_user, "launch code", scope_for(other_user, conversation=conversation))
    # B's own conversation with A's document forced into it (bypassing the API) still finds nothing of A's.
    theirs = Conversation.objects.create(owner=other_user)
    ConversationDocument.objects.create(conversation=theirs, document=secret)
    assert all(s["document_id"] != secret.pk for s in retrieve(other_user, "launch code", scope_for(other_user, conversation=theirs)).segments)


def test_row_level_security_hides_other_users_rows_from_a_query_without_owner_filter(user, other_user, fake_embedder):
    indexed(user, "Alice's private text about her bank account.", "alice.txt")
    indexed(other_user, "Bob's text about bicycles.", "bob.txt")
    mine = {"documents_document": Document.objects.filter(owner=other_user).count(),
            "documents_chunk": Chunk.objects.filter(owner=other_user).count(),
            "retrieval_chunkembedding": ChunkEmbedding.objects.filter(owner=other_user).count()}
    assert all(mine.values())
    with reader_transaction(other_user):
        with connection.cursor() as cursor:
            for table, expected in mine.items():
                cursor.execute(f"SELECT count(*) FROM {table}")  # no WHERE owner_id = ... on purpose
                assert cursor.fetchone()[0] == expected, table
            cursor.execute("SELECT count(*) FROM documents_chunk WHERE content LIKE %s", ["%bank account%"])
            assert cursor.fetchone()[0] == 0
    # Outside the reader role (the application's own role) every row is there, and the session is back to normal.
    assert Chunk.objects.count() > mine["documents_chunk"]


# --- tiers ----------------------------------------------------------------------------------------


def _qa(staff, question, answer, category, subcategory=""):
    entry = KnowledgeEntry.objects.create(question=question, answer=answer, category=category, subcategory=subcategory)
    knowledge_entry_approve(entry=entry, user=staff)
    assert knowledge_entry_embed(entry.pk) == "ready"
    return entry


def test_approved_qa_comes_first_then_documents_of_the_subcategory(user, staff_user, fake_embedder):
    _qa(staff_user, "How often do everbearing raspberries fruit?", "Twice a year.", "fruit", "raspberry, everbearing")
    doc = indexed(user, "Everbearing raspberries fruit twice: in summer and autumn. Prune after the autumn crop.",
                  "rasp.txt", category="fruit", subcategory="raspberry, everbearing")
    indexed(user, "Everbearing raspberries are also mentioned in this unrelated category text.", "other.txt",
            category="vegetables", subcategory="misc")
    result = retrieve(user, "How often do everbearing raspberries fruit?", category="fruit",
                      subcategory="raspberry, everbearing")
    assert result.segments[0]["source_type"] == "qa" and result.segments[0]["tier"] == 1
    assert result.segments[0]["answer"] == "Twice a year."
    docs = [s for s in result.segments if s["source_type"] == "document"]
    assert docs and {s["document_id"] for s in docs} == {doc.pk}
    assert all(s["tier"] == 2 for s in docs)
    assert result.trace["answered_by_tier"] == 1


def _keys_fit(row: dict, typed) -> None:
    from typing import NotRequired, get_origin, get_type_hints

    hints = get_type_hints(typed, include_extras=True)  # the contract's annotations are strings (PEP 563)
    required = {name for name, hint in hints.items() if get_origin(hint) is not NotRequired}
    assert required <= set(row), required - set(row)
    assert set(row) <= set(hints), set(row) - set(hints)


def test_the_trace_is_the_typed_contract(user, staff_user, fake_embedder):
    """retrieve()'s trace holds exactly what retrieval.contracts.RetrievalTrace (and TierTrace) declare, so the
    type mypy checks is the trace the API, the admin and the messages show."""
    from retrieval.contracts import RetrievalTrace, TierTrace

    _qa(staff_user, "How often do everbearing raspberries fruit?", "Twice a year.", "fruit", "raspberry, everbearing")
    indexed(user, "Everbearing raspberries fruit twice: in summer and autumn.", "rasp.txt", category="fruit",
            subcategory="raspberry, everbearing")
    for result in (retrieve(user, "How often do raspberries fruit?", category="fruit", subcategory="raspberry, everbearing"),
                   retrieve(user, "raspberries", k=1)):
        _keys_fit(result.trace, RetrievalTrace)
        assert {t["kind"] for t in result.trace["tiers"]} <= {"qa", "documents"} and result.trace["tiers"]
        for tier in result.trace["tiers"]:
            _keys_fit(tier, TierTrace)


def test_qa_outside_the_threshold_is_dropped_and_said(user, staff_user, fake_embedder):
    _qa(staff_user, "What is the capital of France?", "Paris.", "geo")
    RetrievalSettings.objects.filter(pk=1).update(qa_distance_threshold=0.2)
    result = retrieve(user, "How tall is Mount Everest in metres?", category="geo")
    assert not [s for s in result.segments if s["source_type"] == "qa"]
    assert any("none within the distance threshold" in f for f in result.trace["fallbacks"])


def test_qa_of_the_subcategory_else_of_the_category(user, staff_user, fake_embedder):
    _qa(staff_user, "When should raspberries be pruned?", "After fruiting.", "fruit", "raspberry, summer")
    result = retrieve(user, "When should raspberries be pruned?", category="fruit", subcategory="raspberry, autumn")
    assert result.segments[0]["source_type"] == "qa"
    assert any("tried the category alone" in f for f in result.trace["fallbacks"])


def test_tier_three_uses_the_general_subcategory_only_when_tier_two_is_empty(user, fake_embedder):
    SubcategoryMapping.objects.create(subcategory="raspberry, everbearing", general_subcategory="raspberry, general")
    general = indexed(user, "Raspberries need full sun and well drained soil to fruit well.", "general.txt",
                      category="fruit", subcategory="raspberry, general")
    result = retrieve(user, "raspberries soil sun", category="fruit", subcategory="raspberry, everbearing")
    assert result.segments and all(s["tier"] == 3 for s in result.segments)
    assert result.segments[0]["document_id"] == general.pk
    assert any("general subcategory 'raspberry, general'" in f for f in result.trace["fallbacks"])
    specific = indexed(user, "Everbearing raspberries need sun and soil rich in compost.", "specific.txt",
                       category="fruit", subcategory="raspberry, everbearing")
    again = retrieve(user, "raspberries soil sun", category="fruit", subcategory="raspberry, everbearing")
    assert {s["document_id"] for s in again.segments} == {specific.pk}
    assert {s["tier"] for s in again.segments} == {2}


def test_document_threshold_applies_to_vector_distance(user, fake_embedder):
    indexed(user, "Completely unrelated words: zebra quantum violin.", "z.txt", category="c", subcategory="s")
    RetrievalSettings.objects.filter(pk=1).update(doc_distance_threshold=0.3)
    result = retrieve(user, "tax return deadline", category="c", subcategory="s")
    assert result.segments == []
    assert any("none within the distance threshold" in f or "no documents" in f for f in result.trace["fallbacks"])


def test_full_text_only_hits_get_their_exact_distance_with_or_without_a_threshold(user, fake_embedder):
    from django.test.utils import CaptureQueriesContext

    from retrieval.ai.clients import query_embedder_for

    RetrievalSettings.objects.filter(pk=1).update(vector_top_k=1, doc_distance_threshold=1.5)
    for i, text in enumerate(["Pears ripen late in the season.", "Old pear trees still ripen fruit.",
                              "The pear harvest ends when the pears ripen."]):
        indexed(user, text, f"pears{i}.txt", category="fruit", subcategory="pear")
    question = "When do pears ripen?"
    query = np.asarray(query_embedder_for(fake_embedder.server_row).embed_queries([question])[0])

    def exact(chunk_id: int) -> float:
        vector = np.asarray(ChunkEmbedding.objects.get(chunk_id=chunk_id).embedding)
        return float(1 - query @ vector / (np.linalg.norm(query) * np.linalg.norm(vector)))

    for kwargs in ({}, {"category": "fruit", "subcategory": "pear"}):  # no threshold, then the tier's threshold
        with CaptureQueriesContext(connection) as queries:
            segments = retrieve(user, question, **kwargs).segments
        assert len(segments) == 3
        assert sum(s["vector_rank"] is not None for s in segments) == 1  # the rest only full text found
        for segment in segments:
            assert segment["distance"] == pytest.approx(exact(segment["chunk_id"]), abs=1e-5)
        separate = [q["sql"] for q in queries.captured_queries if "chunk_id = ANY" in q["sql"]]
        # Without a threshold the passage query computes the returned passages' distances; a threshold
        # needs every candidate's first.
        assert len(separate) == (1 if kwargs else 0)


# --- several embedding models ----------------------------------------------------------------------


def test_two_embedding_models_in_one_scope_are_both_searched(user, fake_embedder):
    small = indexed(user, "Glaciers carve valleys over thousands of years.", "glacier.txt")
    big_server = AiServer.objects.create(
        name="fake 768", kind="openai", base_url=fake_embedder.url,
        capabilities={"embeddings": True, "embedding_model": "fake-embed-768", "embedding_dim": 768})
    RetrievalSettings.objects.filter(pk=1).update(default_embedding_server=big_server)
    big = indexed(user, "Glaciers also deposit moraines when they melt.", "moraine.txt")
    assert (small.embedding_dim, big.embedding_dim) == (384, 768)
    result = retrieve(user, "glaciers")
    assert {s["document_id"] for s in result.segments} == {small.pk, big.pk}
    hits = result.trace["tiers"][0]["vector_hits"]
    assert set(hits) == {"vector:fake-embed", "vector:fake-embed-768"}
    assert all(hits.values())


def test_documents_of_a_model_no_server_provides_are_not_silently_skipped(user, fake_embedder):
    doc = indexed(user, "Volcanoes erupt lava and ash.", "volcano.txt")
    AiServer.objects.filter(pk=fake_embedder.server_row.pk).update(is_active=False)
    result = retrieve(user, "volcanoes lava")
    assert [s["document_id"] for s in result.segments] == [doc.pk]  # found by full text
    assert any("searched by full text only" in f for f in result.trace["fallbacks"])


def test_the_settings_embedding_server_is_reused_by_the_search_and_a_change_to_it_counts_at_once(
        user, fake_embedder):
    from django.test.utils import CaptureQueriesContext

    doc = indexed(user, "Volcanoes erupt lava and ash.", "volcano.txt")
    with CaptureQueriesContext(connection) as queries:
        result = retrieve(user, "volcanoes lava")
    assert result.trace["tiers"][0]["vector_hits"], result.trace["tiers"]
    # The server the settings loaded (their row versions checked on this question) is not read again.
    assert not [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "retrieval_aiserver"')]
    # Deactivated between two questions (the settings and their server were loaded by the first): the next
    # question no longer embeds with it.
    AiServer.objects.filter(pk=fake_embedder.server_row.pk).update(is_active=False)
    result = retrieve(user, "volcanoes lava")
    assert [s["document_id"] for s in result.segments] == [doc.pk]  # found by full text
    assert any("searched by full text only" in f for f in result.trace["fallbacks"])


# --- HNSW with a filter never comes back short ---------------------------------------------------------


def test_filtered_hnsw_returns_full_results(user, other_user, settings):
    """User B owns 1% of the vectors; the HNSW path (iterative scan) still returns top_k of them."""
    model = embedding_model_ensure(name="bench-model", dim=32)
    server = AiServer.objects.create(name="bench", kind="openai", base_url="http://127.0.0.1:9",
                                     capabilities={"embeddings": True, "embedding_model": "bench-model",
                                                   "embedding_dim": 32})
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(20, 32))

    def add(owner, n, name):
        document = Document.objects.create(owner=owner, title=name, original_filename=name, mime_type="text/plain",
                                           size=1, sha256=name.ljust(64, "0"), status="indexed", chunk_count=n,
                                           embedding_server_id=server.pk, embedding_model="bench-model", embedding_dim=32)
        chunks = Chunk.objects.bulk_create([Chunk(document=document, owner=owner, chunk_index=i, content=f"c{i}",
                                                  start_offset=0, end_offset=1) for i in range(n)])
        vectors = centers[rng.integers(0, 20, n)] + rng.normal(scale=0.3, size=(n, 32))
        ChunkEmbedding.objects.bulk_create([ChunkEmbedding(chunk=c, model=model, document=document, owner=owner,
                                                           embedding=v) for c, v in zip(chunks, vectors)])
        return document

    add(user, 4950, "a")
    b_doc = add(other_user, 50, "b")
    from retrieval.search import arms

    settings.RETRIEVAL_EXACT_SCAN_MAX = 0  # force the HNSW path
    query = centers[3]
    with reader_transaction(other_user):
        hits, method = arms.vector_arm(model_id=model.pk, dim=32, query_vector=query, owner_id=other_user.pk,
                                       document_ids=[b_doc.pk], scope_vectors=50, top_k=10)
    assert method == "hnsw"
    assert len(hits) == 10
    with reader_transaction(other_user):
        exact, method = arms.vector_arm(model_id=model.pk, dim=32, query_vector=query, owner_id=other_user.pk,
                                        document_ids=[b_doc.pk], scope_vectors=50, top_k=10)
    settings.RETRIEVAL_EXACT_SCAN_MAX = 10**9
    with reader_transaction(other_user):
        exact, method = arms.vector_arm(model_id=model.pk, dim=32, query_vector=query, owner_id=other_user.pk,
                                        document_ids=[b_doc.pk], scope_vectors=50, top_k=10)
    assert method == "exact"
    recall = len({c for c, _ in hits} & {c for c, _ in exact}) / 10
    assert recall >= 0.9


# --- API ----------------------------------------------------------------------------------------------


def test_search_api_returns_segments_and_trace(api, user, fake_embedder):
    indexed(user, "Copper conducts electricity very well.", "copper.txt")
    body = api.get("/api/search/", {"q": "copper electricity"}).json()
    assert body["segments"][0]["document_name"] == "copper.txt"
    assert body["trace"]["scope"] == "all"
    assert api.get("/api/search/").status_code == 400


def test_search_api_for_another_users_conversation_is_404(api, other_api, user, fake_embedder):
    conversation = Conversation.objects.create(owner=user)
    assert other_api.get("/api/search/", {"q": "x", "conversation": conversation.pk}).status_code == 404


def test_embed_api_is_for_staff_who_may_view_ai_servers(api, staff_user, fake_embedder, fake_ai):
    from django.contrib.auth.models import Permission

    payload = {"server_id": fake_embedder.server_row.pk, "texts": ["hello world"]}
    assert api.post("/api/embed/", payload, format="json").status_code == 403
    staff = APIClient()
    helpdesk = type(staff_user).objects.create_user(username="helpdesk", password="x-pass-123", is_staff=True)
    staff.force_authenticate(helpdesk)
    sent = len(fake_ai.requests_to("/v1/embeddings"))
    assert staff.post("/api/embed/", payload, format="json").status_code == 403  # staff without the permission
    assert len(fake_ai.requests_to("/v1/embeddings")) == sent
    helpdesk.user_permissions.add(Permission.objects.get(codename="view_aiserver"))
    staff.force_authenticate(type(staff_user).objects.get(pk=helpdesk.pk))  # permissions are cached per object
    assert staff.post("/api/embed/", payload, format="json").status_code == 200
    staff.force_authenticate(staff_user)  # a superuser
    body = staff.post("/api/embed/", payload, format="json").json()
    assert body["dim"] == 384 and len(body["vectors"][0]) == 384


def test_metrics_endpoint_counts_retrievals_and_index_jobs(client, user, fake_embedder):
    indexed(user, "Metrics text.", "m.txt")
    retrieve(user, "metrics")
    text = client.get("/metrics").content.decode()
    assert 'ai_rag_retrieve_total{scope="all"}' in text
    assert 'ai_index_jobs_total{status="indexed"}' in text
    assert "ai_rag_embed_latency_seconds_bucket" in text and "ai_rag_search_latency_seconds_bucket" in text
    assert "ai_rag_chunks_retrieved_bucket" in text


def test_embed_api_sends_text_to_an_external_server_only_for_those_allowed(django_user_model, fake_embedder, fake_ai,
                                                                           settings):
    """Any staff member could make ragsite send text to an external server (issue #29): now only a
    superuser or staff who may change AI servers, and nobody while external AI is disabled."""
    from django.contrib.auth.models import Permission

    server = fake_embedder.server_row
    server.is_external = True
    server.save(update_fields=["is_external"])
    payload = {"server_id": server.pk, "texts": ["hello world"]}

    def as_user(user) -> APIClient:
        client = APIClient()
        client.force_authenticate(user)
        return client

    staff = django_user_model.objects.create_user(username="helpdesk", password="x-pass-123", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_aiserver"))
    sent = len(fake_ai.requests_to("/v1/embeddings"))
    refused = as_user(staff).post("/api/embed/", payload, format="json")
    assert refused.status_code == 403 and "external AI server" in refused.json()["message"]
    assert len(fake_ai.requests_to("/v1/embeddings")) == sent  # no text left
    staff.user_permissions.add(Permission.objects.get(codename="change_aiserver"))
    staff = django_user_model.objects.get(pk=staff.pk)  # permissions are cached per object
    assert as_user(staff).post("/api/embed/", payload, format="json").status_code == 200
    boss = django_user_model.objects.create_superuser(username="boss", password="boss-pass-123")
    assert as_user(boss).post("/api/embed/", payload, format="json").status_code == 200
    settings.EXTERNAL_AI_DISABLED = True
    assert as_user(boss).post("/api/embed/", payload, format="json").status_code == 409
    server.is_external = False  # an internal server: any staff member who may view AI servers
    server.save(update_fields=["is_external"])
    helpdesk2 = django_user_model.objects.create_user(username="helpdesk2", password="x-pass-123", is_staff=True)
    assert as_user(helpdesk2).post("/api/embed/", payload, format="json").status_code == 403
    helpdesk2.user_permissions.add(Permission.objects.get(codename="view_aiserver"))
    helpdesk2 = django_user_model.objects.get(pk=helpdesk2.pk)
    assert as_user(helpdesk2).post("/api/embed/", payload, format="json").status_code == 200
