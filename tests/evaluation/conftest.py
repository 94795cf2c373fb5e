"""A small library of indexed documents and a test set about it (fake embeddings: bag of words)."""
from __future__ import annotations

import json

import pytest

DOCUMENTS = {
    "leave.txt": "Annual leave. Full-time employees have twenty five days of annual leave each calendar year.",
    "travel.txt": "Business travel. The meal allowance for a domestic trip of five to twelve hours is 140 crowns.",
    "server.txt": "Server room. Only the administrators on duty may enter the server room with their access card.",
    "fire.txt": "Fire safety. The fire drill takes place every spring; leave the building by the nearest exit.",
    "car.txt": "Company cars. A company car must be booked in the fleet system one day before the trip.",
    "training.txt": "Training. Language courses are paid by the employer after the probation period ends.",
}
QUESTIONS = [
    {"id": "q1", "lang": "en", "question": "How many days of annual leave do full-time employees have?",
     "gold_documents": ["leave"], "key_facts": ["twenty five days"]},
    {"id": "q2", "lang": "en", "question": "What is the meal allowance for a domestic trip?",
     "gold_passages": ["meal allowance for a domestic trip of five to twelve hours is 140 crowns"]},
    {"id": "q3", "lang": "en", "question": "Who may enter the server room?", "gold_documents": ["server.txt"]},
    {"id": "q4", "lang": "de", "question": "When is the fire drill?", "gold_documents": ["fire"]},
    {"id": "q5", "lang": "en", "question": "How do I book a company car?", "gold_documents": ["car"]},
    {"id": "q6", "lang": "cs", "question": "Who pays the language courses?", "gold_documents": ["training"]},
]


@pytest.fixture
def library(user, fake_embedder):
    """The six documents above, indexed for `user`."""
    from retrieval.tasks import index_document
    from tests.documents.factories import upload_bytes

    documents = {}
    for name, text in DOCUMENTS.items():
        document = upload_bytes(user, text.encode(), name)
        index_document(document.pk)
        document.refresh_from_db()
        assert document.status == "indexed", document.index_error
        documents[name] = document
    return documents


@pytest.fixture
def questions_jsonl() -> bytes:
    return "\n".join(json.dumps(q) for q in QUESTIONS).encode()


@pytest.fixture
def test_set(user, library, questions_jsonl):
    from evaluation.models import TestSet
    from evaluation.services import testset_import

    test_set = TestSet.objects.create(name="Handbook", created_by=user)
    assert testset_import(test_set=test_set, filename="handbook.jsonl", data=questions_jsonl) == len(QUESTIONS)
    return test_set
