"""The document a question names (retrieval/search/named.py): its passages fused as one more list."""
from __future__ import annotations

import pytest

from retrieval.search import retrieve
from retrieval.search.named import identity_words, named_documents, question_grams, words_of
from retrieval.tasks import index_document
from tests.documents.factories import upload_bytes


def test_words_run_together_in_a_file_name_are_named_by_the_question_words_apart():
    assert identity_words("", "AMERICANEXPRESS_2022_10K.pdf") == {"americanexpress", "2022", "10k"}
    grams = question_grams(["american", "express", "effective", "tax", "rate"])
    assert "americanexpress" in grams and "expresseffective" in grams and "american" in grams
    # A year inside a word is a word too: "FY2017" names the 2017 filing, "2023Q2" is a 2023 one.
    assert identity_words("", "AMCOR_2023Q2_10Q.pdf") == {"amcor", "2023q2", "2023", "10q"}
    assert words_of("Netflix's FY2017 liabilities") == ["netflix", "s", "fy2017", "2017", "liabilities"]


def test_the_rarest_shared_words_name_the_document_and_common_ones_name_nothing():
    identities = {1: {"amazon", "2017", "10k"}, 2: {"amazon", "2019", "10k"}, 3: {"netflix", "2017", "10k"},
                  4: {"costco", "2021", "10k"}, 5: {"pfizer", "2021", "10k"}, 6: {"verizon", "2022", "10k"},
                  7: {"adobe", "2022", "10k"}}
    assert named_documents({"amazon", "2017", "revenue"}, identities) == ({1}, ["2017", "amazon"])  # the year decides
    assert named_documents({"amazon", "revenue"}, identities)[0] == {1, 2}
    assert named_documents({"10k", "revenue"}, identities) == (set(), [])  # every file name says 10-K
    assert named_documents({"revenue"}, identities) == (set(), [])
    assert named_documents({"2017"}, identities) == ({1, 3}, ["2017"])  # a year alone names both 2017 filings
    # Three of seven named equally do not narrow the search.
    assert named_documents({"2021", "2022"}, identities)[0] == set()


def test_a_word_more_documents_use_than_carry_in_their_name_is_no_name():
    """An encyclopedia: one article is called "National Theatre", and seven others speak of theatres."""
    identities = {n: {f"article{n}"} for n in range(1, 10)} | {10: {"national", "theatre"}}
    texts = {n: {"theatre"} for n in range(1, 8)}
    grams = {"theatre", "summer", "stage"}
    assert named_documents(grams, identities, texts) == (set(), [])
    assert named_documents(grams, identities) == ({10}, ["theatre"])  # by the names alone it would name it
    # Two filings carry the company's name and one other filing's passages mention it: still a name;
    # one carrying it and one mentioning it: a tie, not a name.
    filings = {**identities, 11: {"block", "2020"}, 12: {"block", "2019"}}
    assert named_documents({"block", "2020"}, filings, {1: {"block"}})[0] == {11}
    assert named_documents({"block"}, {**identities, 11: {"block", "2020"}}, {1: {"block"}})[0] == set()


def test_a_cover_page_title_names_nothing_when_every_candidate_speaks_of_its_words():
    identities = {1: {"united", "states", "securities", "exchange", "commission"},
                  2: {"americanexpress", "2022", "10k"}, 3: {"costco", "2021", "10k"}, 4: {"adobe", "2022", "10k"},
                  5: {"corning", "2022", "10k"}, 6: {"pfizer", "2021", "10k"}}
    grams = {"debt", "securities", "exchange", "americanexpress", "american", "express"}
    texts = {1: {"securities", "exchange"}, 2: {"securities", "exchange", "american"},
             3: {"securities", "exchange"}, 4: {"securities"}}
    assert named_documents(grams, identities, texts)[0] == {2}
    assert named_documents(grams, identities)[0] == {1}  # the title alone would have named the cover page


@pytest.mark.django_db
def test_the_named_filing_comes_first_where_another_says_the_same(user, fake_embedder):
    statement = ("Consolidated statement of cash flows. Purchases of property, plant and equipment "
                 "were {n} million dollars in the year, and depreciation was {m} million dollars.")
    documents = {}
    for name, n in (("GLOBEX_2022_10K.txt", 310), ("INITECH_2022_10K.txt", 420), ("ACME_2022_10K.txt", 530),
                    ("UMBRELLA_2022_10K.txt", 640)):
        document = upload_bytes(user, statement.format(n=n, m=n // 2).encode(), name)
        index_document(document.pk)
        document.refresh_from_db()
        assert document.status == "indexed", document.index_error
        documents[name] = document
    question = "What were Acme's purchases of property, plant and equipment in the cash flow statement?"
    result = retrieve(user, question)
    assert result.segments[0]["document_id"] == documents["ACME_2022_10K.txt"].pk
    tier = result.trace["tiers"][-1]
    assert tier["named_by"] == ["acme"]
    # Each arm alone stays itself, and a question naming no document fuses no such list.
    assert "named_by" not in retrieve(user, question, arms=("vector",)).trace["tiers"][-1]
    plain = retrieve(user, "What were the purchases of property, plant and equipment?")
    assert "named_by" not in plain.trace["tiers"][-1]
