"""The language a person reads in: the saved choice, else Accept-Language, else LANGUAGE_CODE; the API's
human-readable messages follow Accept-Language while its codes stay English; answers' fixed texts follow
the question's language (issue #33)."""
from __future__ import annotations

import pytest
from django.test import Client

from chat.reply_language import reply_language
from identity.language import language_choice_of, language_choice_save

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def lang_of(response) -> str:
    return response["Content-Language"]


def test_the_browser_language_else_the_site_default(client, settings):
    assert lang_of(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="cs-CZ,cs;q=0.9,en;q=0.5")) == "cs"
    assert lang_of(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")) == "en"  # no German
    settings.LANGUAGE_CODE = "cs"
    page = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de-DE")
    assert lang_of(page) == "cs" and "Přihlásit se" in page.content.decode()


def test_the_switcher_saves_the_choice_of_a_signed_in_user_and_it_beats_the_browser(user):
    browser = Client()
    browser.force_login(user)
    response = browser.post("/i18n/setlang/", {"language": "cs", "next": "/library/"}, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 302 and response["Location"] == "/library/"
    assert language_choice_of(user) == "cs"
    page = browser.get("/library/", HTTP_ACCEPT_LANGUAGE="en")
    assert lang_of(page) == "cs" and '<html lang="cs"' in page.content.decode() and "Knihovna" in page.content.decode()

    # Another browser (no cookie, an English Accept-Language): signing in brings the saved choice.
    other = Client()
    assert other.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"},
                      HTTP_ACCEPT_LANGUAGE="en").status_code == 302
    assert lang_of(other.get("/", HTTP_ACCEPT_LANGUAGE="en")) == "cs"
    # Choosing English again is saved too.
    other.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert language_choice_of(user) == "en" and lang_of(other.get("/", HTTP_ACCEPT_LANGUAGE="cs")) == "en"


def test_the_switcher_refuses_a_language_the_site_does_not_have(client, user):
    client.force_login(user)
    client.post("/i18n/setlang/", {"language": "xx", "next": "/"})
    assert language_choice_of(user) is None
    with pytest.raises(ValueError):
        language_choice_save(user=user, language="xx")


def test_signed_out_the_switcher_sets_the_cookie(client):
    client.post("/i18n/setlang/", {"language": "cs", "next": "/accounts/login/"})
    page = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="en")
    assert lang_of(page) == "cs" and "Uživatelské jméno" in page.content.decode()


def test_the_switcher_is_in_the_user_menu_and_on_the_sign_in_page(client, user):
    assert 'action="/i18n/setlang/"' in client.get("/accounts/login/").content.decode()
    client.force_login(user)
    page = client.get("/library/").content.decode()
    assert 'action="/i18n/setlang/"' in page and 'value="cs"' in page and "Čeština" in page


def test_rest_errors_keep_their_code_and_say_the_message_in_the_asked_language(api):
    czech = api.get("/api/conversations/987654/", HTTP_ACCEPT_LANGUAGE="cs")
    english = api.get("/api/conversations/987654/", HTTP_ACCEPT_LANGUAGE="en")
    assert czech.status_code == english.status_code == 404
    assert czech.json()["code"] == english.json()["code"]  # machine field: the same
    assert english.json()["message"] == "No such conversation."
    assert czech.json()["message"] == "Taková konverzace neexistuje."


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # /v1 is async: its own connection
def test_v1_errors_keep_their_code_and_say_the_message_in_the_asked_language(client, user):
    from identity.tokens import token_create

    key = token_create(user=user, name="test").key
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    czech = client.get("/v1/models/nonexistent", HTTP_ACCEPT_LANGUAGE="cs", **headers)
    english = client.get("/v1/models/nonexistent", HTTP_ACCEPT_LANGUAGE="en", **headers)
    assert czech.status_code == english.status_code == 404
    assert czech.json()["error"]["code"] == english.json()["error"]["code"] == "model_not_found"
    assert english.json()["error"]["message"] == "The model 'nonexistent' does not exist."
    assert czech.json()["error"]["message"] == "Model „nonexistent“ neexistuje."


def test_fixed_texts_of_an_answer_are_in_the_questions_language_else_the_askers(user):
    assert reply_language("Kdy se proplácí cestovní náhrada a jak dlouho to trvá?", user) == "cs"
    assert reply_language("When are travel expenses paid and how long does it take?", user) == "en"
    # German is no site language, and "Q3 2024?" no language at all: the asker's choice, else the site's.
    assert reply_language("Wann werden die Reisekosten erstattet?", user) == "en"
    assert reply_language("Q3 2024?", user) == "en"
    language_choice_save(user=user, language="cs")
    assert reply_language("Wann werden die Reisekosten erstattet?", user) == "cs"
    assert reply_language("Q3 2024?", user) == "cs"
    assert reply_language("What is the deadline?", user) == "en"  # the question's language wins
