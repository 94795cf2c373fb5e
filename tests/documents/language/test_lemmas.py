"""Words of languages PostgreSQL has no stemmer for become their lemmas (Czech ones also their stems), on
both sides (no database)."""
from __future__ import annotations

import pytest

from documents.language import WORD_RE, analysis_of, search_input
from documents.language.czech_stem import czech_stem
from documents.language.lemmas import fold, lemma_of, word_terms


def terms(text: str, language: str = "cs") -> set[str]:
    return set(WORD_RE.findall(search_input(text, language=language, config="simple").lower()))


@pytest.mark.parametrize("forms", [
    ("dovolená", "dovolené", "dovolenou"),
    ("smlouva", "smlouvy", "smlouvě", "smlouvou"),
    ("zaměstnanec", "zaměstnanci", "zaměstnancům"),
    ("náhrada", "náhrady", "náhradu"),
])
def test_czech_inflected_forms_share_a_term(forms):
    shared = set.intersection(*(terms(form) for form in forms))
    lemma = lemma_of(forms[0], "cs")
    assert {fold(lemma), fold(czech_stem(lemma))} <= shared
    # Before lemmas each form was its own word under `simple`: nothing in common.
    assert len({form.lower() for form in forms}) == len(forms)


def test_a_question_in_another_case_shares_the_passages_terms():
    passage = terms("Nárok na dovolenou vzniká po uzavření pracovní smlouvy.")
    question = terms("Kdy mám nárok na dovolenou podle smlouvě?")
    assert {"dovolena", "dovol", "smlouva", "smlouv", "narok", "naro"} <= passage & question


@pytest.mark.parametrize("words", [
    ("skartace", "skartační"),
    ("pojištění", "pojištěný"),
    ("zkušební", "zkušebka"),
    ("schválení", "schválit"),
])
def test_czech_words_derived_from_one_another_share_a_term(words):
    assert len(set.intersection(*(terms(word) for word in words))) == 1
    # Their lemmas differ: only the stem beside each lemma joins them.
    assert len({fold(lemma_of(word, "cs")) for word in words}) == len(words)


def test_a_czech_word_is_its_lemma_and_its_stem_without_diacritics_so_text_typed_without_them_matches():
    assert terms("dovolené") == {"dovolena", "dovol"}
    # Typed without diacritics, a lemma (or a word the dictionary lacks) meets the passage's word.
    assert terms("cerpani narok") == terms("čerpání nárok") == {"cerpani", "cerp", "narok", "naro"}
    # A word that is its own stem is one term.
    assert word_terms("dům", "cs") == "dum"
    assert fold("Příliš žluťoučký") == "Prilis zlutoucky"
    # Cyrillic is not folded: "ї" is a letter of its own, not "і" with a mark.
    assert word_terms("України", "uk") == word_terms("Україні", "uk") == "україна"


def test_stop_words_are_still_dropped_and_other_languages_are_not_lemmatised():
    assert not terms("a v na se je") & {"a", "v", "na", "se", "je"}
    # Polish keeps its lemmas: the stemmer is Czech.
    assert terms("umowy o pracę", language="pl") >= {"umowa", "praca"}
    assert word_terms("smlouvy", "sk") == fold(lemma_of("smlouvy", "sk"))
    assert analysis_of("cs", "simple") == analysis_of("pl", "simple") == "lemmatised"
    # A language with a PostgreSQL stemmer is left to it, word for word.
    assert search_input("Die Verträge", language="de", config="german") == "Die Verträge"
    # A `simple` language without a dictionary keeps its words as they are (only stop words dropped).
    assert search_input("thành phố Huế", language="vi", config="simple").split() == ["thành", "phố", "Huế"]


@pytest.mark.parametrize(("passage", "question", "language"), [
    # The questions of bench/sets/czech_articles that the stem alone lost: given to Slovene and Slovak.
    ("Tělocvičnou jednotu Sokol založili Miroslav Tyrš a Jindřich Fügner.", "Kdo založil Sokol?", "sl"),
    ("Slovo robot vymyslel malíř Josef Čapek.", "Kdo vymyslel slovo robot?", "sk"),
    # A name typed without diacritics by a question the identifier could not place (`simple`, no lemmas).
    ("Na vozidlo dohlíží Hana Procházková.", "Hana Prochazkova", ""),
])
def test_a_base_form_typed_in_a_question_analysed_otherwise_meets_the_czech_lemma(passage, question, language):
    asked = set(WORD_RE.findall(search_input(question, language=language, config="simple").lower()))
    shared = terms(passage) & asked
    assert shared
    # The stems alone ("soko", "rob", "prochaz") met none of the question's words.
    assert not {czech_stem(term) for term in shared} & asked
