"""Words of languages PostgreSQL has no stemmer for become their lemmas, on both sides (no database)."""
from __future__ import annotations

import pytest

from documents.language import WORD_RE, analysis_of, search_input
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
    assert fold(lemma_of(forms[0], "cs")) in shared
    # Before lemmas each form was its own word under `simple`: nothing in common.
    assert len({form.lower() for form in forms}) == len(forms)


def test_a_question_in_another_case_shares_the_passages_terms():
    passage = terms("Nárok na dovolenou vzniká po uzavření pracovní smlouvy.")
    question = terms("Kdy mám nárok na dovolenou podle smlouvě?")
    assert {"dovolena", "smlouva", "narok"} <= passage & question


def test_a_word_is_its_lemma_without_diacritics_so_text_typed_without_them_matches():
    assert terms("dovolené") == {"dovolena"}
    # Typed without diacritics, a lemma (or a word the dictionary lacks) meets the passage's word.
    assert terms("cerpani narok") == terms("čerpání nárok") == {"cerpani", "narok"}
    assert fold("Příliš žluťoučký") == "Prilis zlutoucky"
    # Cyrillic is not folded: "ї" is a letter of its own, not "і" with a mark.
    assert word_terms("України", "uk") == word_terms("Україні", "uk") == "україна"


def test_stop_words_are_still_dropped_and_other_languages_are_not_lemmatised():
    assert not terms("a v na se je") & {"a", "v", "na", "se", "je"}
    assert terms("umowy o pracę", language="pl") >= {"umowa", "praca"}
    assert analysis_of("cs", "simple") == analysis_of("pl", "simple") == "lemmatised"
    # A language with a PostgreSQL stemmer is left to it, word for word.
    assert search_input("Die Verträge", language="de", config="german") == "Die Verträge"
    # A `simple` language without a dictionary keeps its words as they are (only stop words dropped).
    assert search_input("thành phố Huế", language="vi", config="simple").split() == ["thành", "phố", "Huế"]


@pytest.mark.parametrize(("passage", "question", "language"), [
    # Questions of bench/sets/czech_articles the identifier gives to Slovene and Slovak.
    ("Tělocvičnou jednotu Sokol založili Miroslav Tyrš a Jindřich Fügner.", "Kdo založil Sokol?", "sl"),
    ("Slovo robot vymyslel malíř Josef Čapek.", "Kdo vymyslel slovo robot?", "sk"),
    # A name typed without diacritics by a question the identifier could not place (`simple`, no lemmas).
    ("Na vozidlo dohlíží Hana Procházková.", "Hana Prochazkova", ""),
])
def test_a_base_form_typed_in_a_question_analysed_otherwise_meets_the_czech_lemma(passage, question, language):
    # Why the Czech terms are lemmas and not stems: a stem ("soko", "rob", "prochaz") meets none of these.
    asked = set(WORD_RE.findall(search_input(question, language=language, config="simple").lower()))
    assert terms(passage) & asked
