"""The search arms: full text matched only on a question's rarer words within a budget, through the
SECURITY DEFINER gateway that applies the owner condition itself, in the question's language; the
HNSW arm filtered by owner alone when the whole library is searched."""
from __future__ import annotations

import pytest
from django.db import connection

from documents.models import Chunk
from retrieval.search import arms
from retrieval.search.arms import LexemeStats, fts_arm, fts_plans, plan_terms
from retrieval.models import RetrievalSettings
from retrieval.search.scope import reader_transaction
from retrieval.search import retrieve
from tests.retrieval.test_search import indexed

# --- choosing the words to match (no database) --------------------------------------------------

STATS = LexemeStats(rows=1_000_000, shares={"year": 0.09, "citi": 0.02, "bridg": 0.004, "open": 0.03},
                    unlisted_share=0.0005)


def test_plan_matches_the_rarest_words_within_the_budget_and_keeps_question_order():
    # unlisted "brooklyn" ~500, "bridg" ~4,000 -> 4,500 <= 5,000; "citi" would add 20,000.
    assert plan_terms(["brooklyn", "bridg", "open", "year", "citi"], STATS, 5000) == ["brooklyn", "bridg"]
    assert plan_terms(["year", "brooklyn"], STATS, 100_000) == ["year", "brooklyn"]


def test_plan_always_matches_at_least_the_rarest_word():
    assert plan_terms(["year", "open", "citi"], STATS, 10) == ["citi"]


def test_plan_matches_everything_without_statistics_or_budget():
    words = ["year", "open", "citi"]
    assert plan_terms(words, None, 10) == words
    assert plan_terms(words, STATS, 0) == words


def test_estimates_use_half_the_least_listed_share_for_unlisted_words():
    assert STATS.estimate("year") == pytest.approx(90_000)
    assert STATS.estimate("zyzzyva") == pytest.approx(500)


# --- on PostgreSQL ------------------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db


@pytest.fixture
def fresh_stats():
    arms.forget_lexeme_stats()
    yield
    arms.forget_lexeme_stats()


def _analyze():
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE documents_chunk")
    arms.forget_lexeme_stats()


@pytest.mark.django_db
def test_common_words_only_rank_once_statistics_say_they_are_common(user, fake_embedder, fresh_stats):
    # 60 passages say "harvest"; one also says "quinces". Only the rare word should be matched on.
    for i in range(60):
        indexed(user, f"Note {i}: the harvest was recorded in the ledger number {i}.", f"n{i}.txt")
    target = indexed(user, "The quinces were picked late; the harvest of quinces was small.", "quinces.txt")
    other = indexed(user, "Quinces need a warm summer to ripen.", "summer.txt")
    _analyze()
    stats = arms.lexeme_stats()
    assert stats is not None and stats.estimate("harvest") > stats.estimate("quinc")

    RetrievalSettings.objects.filter(pk=1).update(fts_match_budget=20)
    result = retrieve(user, "quinces harvest", arms=("fts",))
    terms = result.trace["tiers"][0]["fts_terms"]["english"]
    assert terms == {"matched": ["quinc"], "ranked_only": ["harvest"]}
    names = [s["document_name"] for s in result.segments]
    assert set(names) == {"quinces.txt", "summer.txt"}  # none of the 60 harvest-only notes
    assert names[0] == "quinces.txt"  # ranked by both words: it holds "harvest" as well
    assert {target.pk, other.pk} == {s["document_id"] for s in result.segments}

    RetrievalSettings.objects.filter(pk=1).update(fts_match_budget=0)
    everything = retrieve(user, "quinces harvest", arms=("fts",))
    assert everything.trace["tiers"][0]["fts_terms"]["english"]["ranked_only"] == []
    assert len(everything.segments) > 2  # harvest-only notes match again


@pytest.mark.django_db
def test_gateway_returns_only_the_transaction_users_passages(user, other_user, fake_embedder):
    mine = indexed(user, "Lighthouses guide ships along the rocky coast.", "mine.txt", language="en")
    theirs = indexed(other_user, "Lighthouses of the northern coast are automated.", "theirs.txt", language="en")
    with reader_transaction(user):
        plans = fts_plans(query="lighthouses", configs=["english"], stats=None, budget=0)
        both_documents = [mine.pk, theirs.pk]
        hits = fts_arm(plans=plans, owner_id=user.pk, document_ids=both_documents, top_k=10)
        assert {Chunk.objects.get(pk=c).document_id for c, _ in hits} == {mine.pk}
        # Asking for another owner than the transaction's user gives nothing.
        assert fts_arm(plans=plans, owner_id=other_user.pk, document_ids=None, top_k=10) == []
    with connection.cursor() as cursor:
        # Without the per-transaction user the function returns nothing, even to the tables' owner.
        cursor.execute("SELECT count(*) FROM ragsite_fts_search('english', 'lighthous', 'lighthous', NULL, 10, 'ts_rank', NULL, true)")
        assert cursor.fetchone()[0] == 0


@pytest.mark.django_db
def test_only_the_reader_role_may_call_the_gateway():
    with connection.cursor() as cursor:
        signature = "ragsite_fts_search(regconfig, tsquery, tsquery, bigint[], integer, text, bigint[], boolean)"
        cursor.execute("SELECT has_function_privilege('public', %s, 'EXECUTE'), "
                       "has_function_privilege('ragsite_reader', %s, 'EXECUTE')", [signature, signature])
        assert cursor.fetchone() == (False, True)
        # the previous signature is gone (a second entry point would be a second gateway to keep safe)
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = 'ragsite_fts_search'")
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db
def test_questions_with_quotes_and_backslashes_are_plain_words(user, fake_embedder):
    indexed(user, "O'Brien's report covers the C:\\data folder and the \"quoted\" title.", "report.txt")
    result = retrieve(user, "O'Brien's C:\\data 'report' \\ \" | & ! <-> :*", arms=("fts",))
    assert [s["document_name"] for s in result.segments] == ["report.txt"]
    assert retrieve(user, "' \\ | & !", arms=("fts",)).segments == []


@pytest.mark.django_db
def test_full_text_searches_only_documents_in_the_questions_language(user, fake_embedder):
    german = indexed(user, "Nikola Tesla starb im Januar 1943 in New York. Er war ein bekannter Erfinder, und "
                           "seine Firma stellte Lampen her.", "de.txt")
    english = indexed(user, "Nikola Tesla died in January 1943 in New York. He was a famous inventor, and his "
                            "company made lamps.", "en.txt")
    unknown = indexed(user, "Tesla 1943 New York", "notes.txt")
    assert (german.text_config, english.text_config, unknown.text_config) == ("german", "english", "simple")

    result = retrieve(user, "In welchem Jahr starb Nikola Tesla in New York?", arms=("fts",))
    assert result.trace["question_language"] == "de"
    assert result.trace["tiers"][0]["fts_skipped_configs"] == ["english"]
    assert {s["document_name"] for s in result.segments} == {"de.txt", "notes.txt"}

    # Hybrid: the English passage still comes through the vector arm.
    hybrid = retrieve(user, "In welchem Jahr starb Nikola Tesla in New York?")
    by_name = {s["document_name"]: s for s in hybrid.segments}
    assert by_name["en.txt"]["fts_rank"] is None and by_name["en.txt"]["vector_rank"] is not None

    # A question whose language cannot be told searches every language's documents.
    untold = retrieve(user, "Tesla 1943", arms=("fts",))
    assert untold.trace["question_language"] == ""
    assert "fts_skipped_configs" not in untold.trace["tiers"][0]
    assert {s["document_name"] for s in untold.segments} == {"de.txt", "en.txt", "notes.txt"}


@pytest.mark.django_db
def test_hnsw_search_of_the_whole_library_filters_by_owner_alone(user, other_user, fake_embedder, settings):
    from django.test.utils import CaptureQueriesContext

    from chat.models import Conversation, ConversationDocument
    from chat.selectors import conversation_scope

    settings.RETRIEVAL_EXACT_SCAN_MAX = -1  # force the HNSW path at this size
    mine = [indexed(user, f"Orchard note {i}: the pears ripen late in the season.", f"pears{i}.txt")
            for i in range(3)]
    indexed(other_user, "Orchard note: the pears ripen late in the season.", "theirs.txt")

    def vector_sql(**kwargs) -> tuple[list[str], str]:
        with CaptureQueriesContext(connection) as queries:
            result = retrieve(user, "When do the pears ripen?", arms=("vector",), **kwargs)
        [sql] = [q["sql"] for q in queries.captured_queries if "hnsw" not in q["sql"] and "<=>" in q["sql"]
                 and "candidates" in q["sql"]]
        assert result.trace["tiers"][0]["vector_method"] == {"vector": "hnsw"}
        return [s["document_name"] for s in result.segments], sql

    names, sql = vector_sql()
    assert sorted(names) == ["pears0.txt", "pears1.txt", "pears2.txt"]  # never the other user's
    assert "document_id = ANY" not in sql
    conversation = Conversation.objects.create(owner=user)
    ConversationDocument.objects.create(conversation=conversation, document=mine[1])
    names, sql = vector_sql(scope=conversation_scope(user, conversation))
    assert names == ["pears1.txt"] and "document_id = ANY" in sql


@pytest.mark.django_db
def test_exact_search_of_the_whole_library_needs_no_document_ids(user, other_user, fake_embedder):
    from django.test.utils import CaptureQueriesContext

    for i in range(3):
        indexed(user, f"Orchard note {i}: the pears ripen late in the season.", f"pears{i}.txt")
    indexed(other_user, "Orchard note: the pears ripen late in the season.", "theirs.txt")
    with CaptureQueriesContext(connection) as queries:
        result = retrieve(user, "When do the pears ripen?")
    assert result.trace["tiers"][0]["vector_method"] == {"vector": "exact"}
    assert sorted(s["document_name"] for s in result.segments) == ["pears0.txt", "pears1.txt", "pears2.txt"]
    assert result.trace["tiers"][0]["candidate_documents"] == 3
    sqls = [q["sql"] for q in queries.captured_queries]
    [exact] = [sql for sql in sqls if "<=>" in sql and "ORDER BY distance" in sql]
    assert "document_id = ANY" not in exact  # the owner condition (and row-level security) suffice
    [grouping] = [sql for sql in sqls if "FROM documents_document d" in sql and "GROUP BY" in sql]
    assert "array_agg" not in grouping  # 10,000 documents' ids are not collected for nothing


@pytest.mark.django_db
def test_search_vectors_keep_ten_thousand_common_lexemes_in_their_statistics():
    with connection.cursor() as cursor:
        cursor.execute("SELECT attstattarget FROM pg_attribute WHERE attrelid = 'documents_chunk'::regclass "
                       "AND attname = 'search_vector'")
        assert cursor.fetchone()[0] == 1000


# --- ranking --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_ts_rank_puts_the_passage_holding_every_question_word_before_one_repeating_a_word(user, fake_embedder):
    repeats = indexed(user, "The harbour, the harbour, the harbour: every harbour of the harbour town has a "
                            "harbour wall, and the harbour master keeps the harbour clean.", "repeats.txt", language="en")
    every = indexed(user, "The harbour lighthouse was rebuilt in granite after the storm.", "every.txt", language="en")
    question = "harbour lighthouse granite storm"

    assert RetrievalSettings.objects.get().fts_ranking == "ts_rank"  # the default
    ranked = retrieve(user, question, arms=("fts",)).segments
    assert [s["document_id"] for s in ranked] == [every.pk, repeats.pk]

    # ts_rank_cd counts occurrences of any question word: the repeated word wins.
    RetrievalSettings.objects.filter(pk=1).update(fts_ranking="ts_rank_cd")
    ranked = retrieve(user, question, arms=("fts",)).segments
    assert [s["document_id"] for s in ranked] == [repeats.pk, every.pk]


@pytest.mark.django_db
def test_the_gateway_refuses_an_unknown_ranking(user, fake_embedder):
    from django.db import DataError

    with pytest.raises(DataError, match="unknown full-text ranking"):
        with reader_transaction(user):
            plans = fts_plans(query="lighthouses", configs=["english"], stats=None, budget=0)
            fts_arm(plans=plans, owner_id=user.pk, document_ids=None, top_k=10, ranking="bm25; DROP TABLE x")
    # The error surfaced as itself, and the rollback of the reader transaction's savepoint put the
    # role and the user back (this test runs inside an outer transaction).
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user <> 'ragsite_reader', current_setting('ragsite.user_id', true)")
        assert cursor.fetchone() in ((True, ""), (True, None))


# --- where the search vector is stored ------------------------------------------------------------

def _prose(sample_data) -> str:
    """Real English prose (XQuAD's first article): 512-token chunks of it have ~2.5 KB search vectors
    and ~2.3 KB of text, together over PostgreSQL's 2 KB TOAST threshold."""
    import json

    article = json.loads((sample_data / "xquad" / "xquad.en.first-article.json").read_text())["data"][0]
    return "\n\n".join(p["context"] for p in article["paragraphs"])


def _external(chunk_ids) -> list[bool]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_toast_chunk_id(search_vector) IS NOT NULL, pg_column_size(search_vector) "
                       "FROM documents_chunk WHERE id = ANY(%s) ORDER BY id", [list(chunk_ids)])
        rows = cursor.fetchall()
    big = [external for external, size in rows if size > 2000]  # big enough that the default moves them out
    assert len(big) >= len(rows) - 1  # all but the document's short last chunk
    return big


@pytest.mark.django_db
def test_search_vectors_stay_in_the_row_so_ranking_reads_no_toast(user, fake_embedder, sample_data):
    document = indexed(user, _prose(sample_data), "long.txt", language="en")
    in_toast = _external(document.chunks.values_list("id", flat=True))
    assert in_toast and not any(in_toast)


@pytest.mark.django_db
def test_the_migration_moves_existing_search_vectors_into_their_rows(user, fake_embedder, sample_data):
    from importlib import import_module

    from django.db import migrations

    migration = import_module("documents.migrations.0005_search_vector_in_row").Migration
    with connection.cursor() as cursor:  # the layout before the migration
        cursor.execute("ALTER TABLE documents_chunk ALTER COLUMN search_vector SET STORAGE EXTENDED")
    document = indexed(user, _prose(sample_data), "long.txt", language="en")
    ids = list(document.chunks.values_list("id", flat=True))
    before = dict(Chunk.objects.filter(id__in=ids).values_list("id", "search_vector"))
    assert all(_external(ids))

    [operation] = [op for op in migration.operations if isinstance(op, migrations.RunSQL)]
    with connection.cursor() as cursor:
        for statement in operation.sql:
            cursor.execute(statement)
    in_toast = _external(ids)
    assert in_toast and not any(in_toast)
    assert dict(Chunk.objects.filter(id__in=ids).values_list("id", "search_vector")) == before  # same vectors


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_outermost_reader_transaction_ends_its_role_and_user_with_its_commit(user, other_user):
    def session():
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user, current_setting('ragsite.user_id', true)")
            return cursor.fetchone()

    app_role = session()[0]
    assert not connection.in_atomic_block
    with reader_transaction(other_user):
        assert session() == ("ragsite_reader", str(other_user.pk))
    role, user_id = session()  # no RESET was sent: the COMMIT undid both
    assert role == app_role and user_id in ("", None)


def test_a_passage_without_the_rare_word_asked_about_holds_little_of_the_question(monkeypatch):
    """The weak-match rule's coverage weighs each word by its rarity: holding "year" and "citi" but not
    the unlisted "brooklyn" is under half of the question, though it is two words of three."""
    monkeypatch.setattr(arms, "COVERAGE_BY_RARITY", True)
    words = ["brooklyn", "year", "citi"]
    common = arms.held_share(words, {"year", "citi"}, STATS)
    rare = arms.held_share(words, {"brooklyn"}, STATS)
    assert common < 0.5 < rare and common + rare == pytest.approx(1.0)
    assert arms.held_share(words, {"year", "citi"}, None) == pytest.approx(2 / 3)  # no statistics: words alike
    assert arms.held_share([], {"year"}, STATS) == 0.0
