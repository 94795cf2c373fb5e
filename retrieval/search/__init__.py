"""Search: what a question may search (scope), the vector and full-text arms, their fusion, the
optional reranking, and retrieve() — the one retrieval behind the chat, the API, the admin's test
page and the evaluation."""
from retrieval.search.retriever import (QuestionContext, RetrievalRequest, RetrievalResult, question_context,
                                        retrieve, retrieve_request)

__all__ = ["QuestionContext", "RetrievalRequest", "RetrievalResult", "question_context", "retrieve",
           "retrieve_request"]
