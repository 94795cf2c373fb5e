"""Approved pairs are admitted by meaning, not by count: a pair reaches the model's context only when it is
within the embedding model's bound of this question *and* the question shares a content word or a number
with it (or it is within the direct-answer distance); at most two pairs; never in a document passage's slot.
The model's prompt is read from the fake chat server's request log (real PostgreSQL, real HTTP server)."""
from __future__ import annotations

import pytest

from chat.models import Message
from chat.orchestrator import answer_conversation
from retrieval.knowledge.services import knowledge_entry_approve, knowledge_entry_embed
from retrieval.models import KnowledgeEntry, RetrievalSettings
from retrieval.search import retrieve
from tests.chat.helpers import indexed

pytestmark = pytest.mark.django_db

TRAVEL = [
    ("How much is the meal allowance for a trip of 5 to 12 hours?", "140 CZK."),
    ("How much is the meal allowance for a trip of more than 18 hours?", "333 CZK per day."),
    ("How many nights in a hotel may I book for a business trip?", "As many as the trip needs, up to 2,500 CZK a night."),
    ("Can I take my own car on a business trip?", "Yes, with the manager's consent and 5.80 CZK per km."),
    ("How do I get an advance for a business trip abroad?", "Ask the travel office three days before leaving."),
    ("Who books the train tickets for a business trip?", "The travel office books them."),
    ("How many days do I have to hand in the travel report?", "Ten working days after the return."),
    ("Is the taxi to the airport paid by the company?", "Yes, when no public transport runs."),
    ("How much is the meal allowance in Germany?", "45 EUR per calendar day."),
    ("Can I claim expenses with a receipt?", "Yes, within 30 days."),
]
HR = [
    ("How many days of leave do I get in my first year?", "25 days."),
    ("How many days of leave does a part-time employee get?", "In proportion to the hours worked."),
    ("How many home office days do I get in a week?", "Two days a week."),
    ("How do I report a sick day?", "Tell your manager before 9 am."),
    ("When is the salary paid?", "On the 12th of the following month."),
    ("How long is the probation period?", "Three months."),
    ("How many days of notice do I have to give?", "Two months from the first day of the next month."),
    ("Who approves my leave request?", "Your line manager."),
    ("How do I get a language course paid?", "Ask HR; the company pays 70 %."),
    ("Is there a home office allowance?", "Yes, 400 CZK a month."),
]
DOCUMENT = "\n\n".join([
    "Fire drills. The whole building takes part in a fire drill twice a week during the autumn training period.",
    "Evacuation. Leave by the nearest marked exit and meet at the assembly point by the car park gate.",
    "Extinguishers. Every floor has two extinguishers by the stairs; the facilities team checks them monthly.",
    "Alarms. The fire alarm is a continuous siren; a broken call point is reported to the facilities desk.",
    "Wardens. Each floor has a fire warden who checks the rooms are empty and reports to the assembly point.",
    "Doors. Fire doors stay closed; wedging them open is forbidden and reported to the safety officer.",
    "Smoking. Smoking is allowed only in the marked shelter behind the building, never at the entrance.",
    "Kitchens. Kettles and toasters are used only in the kitchens, never at a desk or in a meeting room.",
    "Heaters. Personal electric heaters are not allowed; ask the facilities desk for a radiator check.",
    "Cables. Cables across a corridor are taped down or covered; extension leads are never chained.",
])
UNRELATED = "How many fire drills do we have in the autumn?"  # the function words of several pairs, none of their content


def _approved(staff, question: str, answer: str, category: str) -> KnowledgeEntry:
    entry = KnowledgeEntry.objects.create(question=question, answer=answer, category=category)
    knowledge_entry_approve(entry=entry, user=staff)
    assert knowledge_entry_embed(entry.pk) == "ready"
    return entry


@pytest.fixture
def twenty_pairs(staff_user) -> dict[str, KnowledgeEntry]:
    pairs = {}
    for category, rows in (("travel", TRAVEL), ("hr", HR)):
        for question, answer in rows:
            pairs[question] = _approved(staff_user, question, answer, category)
    assert KnowledgeEntry.objects.live().count() == 20
    return pairs


def _ask(api, question: str) -> Message:
    conversation = api.post("/api/conversations/", {}, format="json").json()
    sent = api.post(f"/api/conversations/{conversation['id']}/messages/", {"content": question}, format="json").json()
    answer_conversation(conversation["id"])
    answer = Message.objects.get(pk=sent["assistant_message"]["id"])
    assert answer.status == "done", answer.error
    return answer


def _prompt(chat_ai) -> str:
    return "\n".join(str(m.get("content") or "") for m in chat_ai.requests_to("/v1/chat/completions")[-1]["json"]["messages"])


def test_a_question_on_another_subject_gets_no_pair_in_the_models_context(api, user, chat_ai, twenty_pairs):
    indexed(user, DOCUMENT, "fire-safety.txt")
    chat_ai.script_chat("Twice a week in the autumn [S1].")
    answer = _ask(api, UNRELATED)
    prompt = _prompt(chat_ai)
    assert "fire drill twice a week" in prompt
    assert "approved Q&A" not in prompt
    for pair in twenty_pairs.values():
        assert pair.answer not in prompt
    assert not [s for s in answer.metadata["context_sources"] if s["source_type"] == "qa"]
    tier = answer.metadata["retrieval"]["tiers"][0]
    # The closest pairs are within the Q&A bound (the function words they share): refused for their meaning.
    assert tier["kind"] == "qa" and tier["kept"] == 0 and tier["refused"]
    assert {r["reason"] for r in tier["refused"]} == {"no_shared_word"}


def test_a_paraphrase_still_brings_its_pair_and_at_most_two_pairs_come(api, user, chat_ai, twenty_pairs, settings):
    settings.CHAT_QA_DIRECT_DISTANCE = 0.05  # a source for the model here, not the answer itself
    chat_ai.script_chat("25 days [S1].")
    answer = _ask(api, "How many leave days do I get in the first year?")
    prompt = _prompt(chat_ai)
    pairs = [s["qa_id"] for s in answer.metadata["context_sources"] if s["source_type"] == "qa"]
    assert twenty_pairs["How many days of leave do I get in my first year?"].pk in pairs
    assert 1 <= len(pairs) <= 2
    assert "approved Q&A" in prompt and "25 days." in prompt


def test_the_document_passages_are_not_fewer_because_a_pair_was_admitted(user, fake_embedder, twenty_pairs):
    RetrievalSettings.objects.filter(pk=1).update(chunk_size=24, chunk_overlap=0)
    indexed(user, DOCUMENT + "\n\n" + DOCUMENT.replace("fire", "Fire safety:"), "fire-safety.txt")
    top_n = RetrievalSettings.objects.get(pk=1).final_top_n
    question = "How many days of leave do I get for a fire warden training week?"
    segments = retrieve(user, question).segments
    pairs = [s for s in segments if s["source_type"] == "qa"]
    documents = [s for s in segments if s["source_type"] == "document"]
    assert pairs, "the question shares content words with the leave pairs"
    assert len(pairs) <= 2
    assert len(documents) == top_n  # the pairs came on top of the passages, not in their place
    assert [s["source_type"] for s in segments] == ["qa"] * len(pairs) + ["document"] * top_n
    cut = retrieve(user, question, k=3).segments
    assert [s["source_type"] for s in cut] == ["qa"] * len(pairs) + ["document"] * 3


def test_with_the_model_down_the_extractive_answer_quotes_no_unrelated_pair(api, user, fake_embedder, twenty_pairs):
    indexed(user, DOCUMENT, "fire-safety.txt")  # no chat server: the extractive answer
    answer = _ask(api, UNRELATED)
    assert answer.metadata["mode"] == "extractive"
    assert "fire drill twice a week" in answer.content
    for pair in twenty_pairs.values():
        assert pair.answer not in answer.content
    assert not [s for s in answer.metadata["context_sources"] if s["source_type"] == "qa"]


def test_the_approved_answers_name_is_translated(user, fake_embedder, twenty_pairs):
    from django.utils import translation

    with translation.override("cs"):
        segments = retrieve(user, "How many days of leave does a part-time employee get?").segments
    assert segments and segments[0]["source_type"] == "qa"
    assert segments[0]["document_name"] == "Schválená odpověď"


# The same twenty pairs with the built-in multilingual model (real distances, calibrated from the shipped
# unrelated questions), asked in four languages: other subjects bring no pair, paraphrases in another language
# than their pair bring it, through the distance the calibration measured for two languages.
OTHER_SUBJECTS = [
    "How many fire drills do we have in the autumn?",
    "Wie oft findet eine Feuerübung statt?",
    "Kde je shromaždiště při evakuaci?",
    "Сколько огнетушителей на этаже?",
    "Was ist ein topologischer Raum und wie ist er definiert?",
]
PARAPHRASES = [  # (question, the pair it paraphrases)
    ("Kolik je stravné za pracovní cestu na 10 hodin?", TRAVEL[0][0]),
    ("Wie viele Urlaubstage habe ich im ersten Jahr?", HR[0][0]),
    ("Kdy dostanu výplatu?", HR[4][0]),
]


@pytest.fixture
def chat_only(fake_ai):
    """The fake server as the chat server alone: embeddings come from the built-in model."""
    from retrieval.models import AiServer

    server = AiServer.objects.create(name="fake chat", kind="openai", base_url=fake_ai.url, read_timeout=1.5,
                                     connect_timeout=1, capabilities={"chat": True, "chat_model": "fake-chat"})
    RetrievalSettings.objects.filter(pk=1).update(default_chat_server=server)
    return fake_ai


@pytest.fixture
def twenty_pairs_builtin(staff_user) -> dict[str, KnowledgeEntry]:
    from retrieval.knowledge.calibrating import embedding_model_calibrate

    pairs = {}
    for category, rows in (("travel", TRAVEL), ("hr", HR)):
        for question, answer in rows:
            pairs[question] = _approved(staff_user, question, answer, category)
    model = pairs[TRAVEL[0][0]].embeddings.get().model
    assert model.name == "multilingual-e5-small-q4"
    calibration = embedding_model_calibrate(model_id=model.pk).calibration
    assert calibration["unrelated"]["cross_language_p1"] > calibration["direct_distance"]
    return pairs


def test_with_the_builtin_model_other_subjects_bring_no_pair_and_paraphrases_in_other_languages_do(
        api, user, chat_only, twenty_pairs_builtin):
    indexed(user, DOCUMENT, "fire-safety.txt")
    for question in OTHER_SUBJECTS:
        chat_only.script_chat("[S1]")
        answer = _ask(api, question)
        prompt = _prompt(chat_only)
        assert "approved Q&A" not in prompt, question
        assert not [s for s in answer.metadata["context_sources"] if s["source_type"] == "qa"], question
        assert all(pair.answer not in prompt for pair in twenty_pairs_builtin.values()), question
    for question, paraphrased in PARAPHRASES:
        chat_only.script_chat("[S1]")
        answer = _ask(api, question)
        pair = twenty_pairs_builtin[paraphrased]
        assert pair.pk in [s["qa_id"] for s in answer.metadata["context_sources"] if s["source_type"] == "qa"], question
        assert pair.answer in _prompt(chat_only), question
        tier = answer.metadata["retrieval"]["tiers"][0]
        assert tier["kept"] <= 2

    # The model down: the extractive answer quotes by the same rule.
    RetrievalSettings.objects.filter(pk=1).update(default_chat_server=None)
    other = _ask(api, OTHER_SUBJECTS[1])
    assert other.metadata["mode"] == "extractive"
    assert all(pair.answer not in other.content for pair in twenty_pairs_builtin.values())
    assert not [s for s in other.metadata["context_sources"] if s["source_type"] == "qa"]
    question, paraphrased = PARAPHRASES[1]
    asked = _ask(api, question)
    assert asked.metadata["mode"] == "extractive" and twenty_pairs_builtin[paraphrased].answer in asked.content
