"""The language of the fixed texts ragsite writes into an answer (notices, refusals, waiting lines).

The model is told to answer in the question's language by a rule no persona removes (chat.prompts);
the texts ragsite writes itself come from the catalogue in the same language: the question's when the
site has a catalogue for it, else the asker's saved choice, else the site's LANGUAGE_CODE.
"""
from __future__ import annotations

from django.conf import settings

from documents.language import answer_language, is_common_word, words
from identity.language import language_choice_of, supported


def reply_language(question: str, user) -> str:
    """The site language to write an answer's fixed texts in, for `question` asked by `user`."""
    detected = answer_language(question)
    # answer_language says "en" also when it recognised no word at all: then the question's language is unknown.
    recognised = detected != "en" or any(is_common_word(w) for w in words(question))
    if recognised and supported(detected):
        return detected
    return (language_choice_of(user) if user is not None else None) or settings.LANGUAGE_CODE
