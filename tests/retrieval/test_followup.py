"""Follow-up questions made standalone before retrieval (retrieval/search/followup.py): the cheap test,
the heuristic rewrite and the checks on a model's reply, in Czech, English, German and Russian. No database."""
from __future__ import annotations

import pytest

from retrieval.search.followup import (
    HEURISTIC,
    MODEL,
    NONE,
    checked_rewrite,
    depends_on_context,
    heuristic_query,
    standalone_query,
)


def _history(*questions: str) -> list[dict]:
    turns: list[dict] = []
    for question in questions:
        turns += [{"role": "user", "content": question}, {"role": "assistant", "content": "An answer [S1]."}]
    return turns


@pytest.mark.parametrize("question", [
    "A při částečném?", "Dostanu za to nějaké peníze?", "A co benzín?", "Kde pak vyzvednu klíče?",
    "And how much should I fertilise them?", "And for part-timers?", "What about over a million?", "By when?",
    "Und ab wann?", "Kann er den Urlaub später noch streichen?", "Und muss das jemand vorher genehmigen?",
    "А можно получить наличными?", "А если я его вовремя не отчитаю?", "И за сколько времени до начала?",
])
def test_a_question_that_points_back_or_is_elliptic_depends_on_the_conversation(question):
    dependent, why = depends_on_context(question)
    assert dependent, why


@pytest.mark.parametrize("question", [
    "Kolik je stravné na služební cestě po Česku?",
    "A kolik je stravné při tuzemské cestě delší než 18 hodin?",  # opens like a follow-up, but complete
    "Potřebuju na sick day potvrzení od lékaře?",
    "How long must a password be?",
    "What's the meal allowance for a business trip abroad?",
    "Und übernimmt die Firma die Studiengebühren für ein Universitätsstudium?",
    "Wie viele Urlaubstage habe ich bei Vollzeit?",
    "А сколько стоит карта Multisport для сотрудника?",
    "Где можно курить у склада?",
])
def test_a_complete_question_stands_alone(question):
    dependent, why = depends_on_context(question)
    assert not dependent, why


def test_the_heuristic_adds_the_previous_questions_content_words_it_lacks():
    history = _history("Kolik dní dovolené mám na plný úvazek?")
    assert heuristic_query("A při částečném?", history) == "A při částečném? dní dovolené plný úvazek"
    english = heuristic_query("And how much should I fertilise them?", _history("When do I prune my roses?"))
    assert english == "And how much should I fertilise them? prune roses"


def test_the_heuristic_reaches_back_past_a_follow_up_to_the_question_that_stood_alone():
    history = _history("Kolik dní týdně můžu pracovat z domova?", "Dostanu za to nějaké peníze?")
    query = heuristic_query("A platí to i když jsem v zahraničí?", history)
    assert "domova" in query and "peníze" in query
    stood_alone = _history("Wer genehmigt Urlaub im Sommer?", "Wie viele Urlaubstage habe ich bei Vollzeit?")
    assert "genehmigt" not in heuristic_query("Und bei Teilzeit?", stood_alone)


def test_standalone_questions_and_first_questions_are_searched_as_asked():
    first = standalone_query("And for part-timers?", [])
    assert (first.method, first.query) == (NONE, "And for part-timers?")
    called = []
    alone = standalone_query("Сколько стоит карта Multisport для сотрудника?", _history("Какие есть бенефиты?"),
                             rewrite_with=lambda messages: called.append(messages) or "nonsense")
    assert alone.method == NONE and alone.query == "Сколько стоит карта Multisport для сотрудника?"
    assert called == []  # the cheap test spares the model a request


def test_the_models_rewrite_is_used_when_it_looks_like_a_question_of_this_conversation():
    sent: list = []

    def model(messages):
        sent.append(messages)
        return "Standalone question: How much should I fertilise my roses?\n"

    rewrite = standalone_query("And how much should I fertilise them?", _history("When do I prune my roses?"),
                               rewrite_with=model)
    assert (rewrite.method, rewrite.query) == (MODEL, "How much should I fertilise my roses?")
    assert rewrite.trace()["original"] == "And how much should I fertilise them?"
    assert len(sent) == 1 and "When do I prune my roses?" in sent[0][-1]["content"]


@pytest.mark.parametrize("reply, why", [
    ("", "empty"),
    ("Fertilise roses with 30 g in April [S1].", "cites sources"),
    ("Roses need feeding.\nUse 30 g.\nIn April.\nWater well.", "lines"),
    ("x" * 400, "characters long"),
    ("What is the capital of France?", "shares no word"),
])
def test_a_reply_that_is_not_a_standalone_question_is_refused(reply, why):
    text, verdict = checked_rewrite(reply, "And how much should I fertilise them?",
                                    _history("When do I prune my roses?"))
    assert text is None and why in verdict


def test_a_failing_or_answering_model_falls_back_to_the_heuristic():
    history = _history("Kolik dní dovolené mám na plný úvazek?")

    def down(messages):
        raise TimeoutError("read timed out")

    failed = standalone_query("A při částečném?", history, rewrite_with=down)
    assert failed.method == HEURISTIC and failed.query == "A při částečném? dní dovolené plný úvazek"
    assert "TimeoutError" in failed.trace()["model_error"]
    answered = standalone_query("A při částečném?", history, rewrite_with=lambda m: "Máte 25 dní [S1].")
    assert answered.method == HEURISTIC and "cites sources" in answered.trace()["model_rejected"]


# --- a change of topic: per-language back-references, a change of language, the message alone -----------

def test_a_back_reference_counts_only_in_its_own_language():
    # English "to" is a preposition, not the Czech "to" ("it"): the question stands alone.
    dependent, why = depends_on_context("How do I get to the airport by train?")
    assert not dependent, why
    assert depends_on_context("Dostanu za to nějaké peníze?")[0]  # Czech "to" points back
    assert depends_on_context("Kann er den Urlaub später noch streichen?")[0]  # German "er"
    assert depends_on_context("А можно это получить наличными?")[0]  # Russian "это"
    assert depends_on_context("Can I get it in cash?")[0]  # English "it"


@pytest.mark.parametrize("question, language", [
    ("Was ist ein topologischer Raum und wie ist er definiert?", "de"),
    ("Co je to topologický prostor?", "cs"),
    ("Что это такое топологическое пространство?", "ru"),
    ("What is it that a topological space defines?", "en"),
])
def test_a_word_that_is_also_an_ordinary_word_asks_for_the_message_alone_to_be_checked(question, language):
    # "er", "to", "это", "it" point back only sometimes: the rewrite is kept only when the message alone is weak.
    history = _history("Kolik je stravné na pracovní cestě?") if language == "cs" else _history(
        {"de": "Wie hoch ist das Tagegeld auf Dienstreisen?", "ru": "Сколько составляют суточные в командировке?",
         "en": "How much is the meal allowance on a business trip?"}[language])
    rewrite = standalone_query(question, history)
    assert rewrite.method == "heuristic" and rewrite.extra.get("check_alone") is True


def test_a_continuing_opening_needs_no_check():
    rewrite = standalone_query("And how much should I fertilise them?", _history("When do I prune my roses?"))
    assert rewrite.method == "heuristic" and "check_alone" not in rewrite.extra


def test_a_question_in_another_language_than_the_previous_one_is_searched_as_typed():
    question = "Was ist ein topologischer Raum und wie ist er definiert?"
    rewrite = standalone_query(question, _history("Kolik je stravné na pracovní cestě?"),
                               rewrite_with=lambda messages: "Kolik je stravné topologický prostor?")
    assert (rewrite.method, rewrite.query) == ("none", question)
    assert "another language (de)" in rewrite.reason and "(cs)" in rewrite.reason


class _Found:
    def __init__(self, *distances):
        self.segments = [{"source_type": "document", "distance": d} for d in distances]


def test_the_rewrite_is_kept_only_when_the_message_alone_retrieves_more_weakly():
    from retrieval.search.followup import keep_rewrite_if_needed

    rewrite = standalone_query("Co je to topologický prostor?", _history("Kolik je stravné na pracovní cestě?"))
    searched: list[str] = []

    def search(text, found):
        searched.append(text)
        return found

    kept, alone = keep_rewrite_if_needed(rewrite, _Found(0.31, 0.4).segments, lambda t: search(t, _Found(0.12)))
    assert searched == ["Co je to topologický prostor?"]
    assert (kept.method, kept.query, alone.segments[0]["distance"]) == ("none", "Co je to topologický prostor?", 0.12)
    assert kept.extra["rewrite_not_used"] == rewrite.query and "searched as typed" in kept.reason
    kept, alone = keep_rewrite_if_needed(rewrite, _Found(0.2).segments, lambda t: search(t, _Found(0.35)))
    assert (kept.method, kept.query, alone) == ("heuristic", rewrite.query, None)
    assert kept.extra["alone_distance"] == 0.35 and kept.extra["rewrite_distance"] == 0.2
