"""Search: what a question may search (scope), the vector and full-text arms, their fusion, the
optional reranking, and retrieve() — the one retrieval behind the chat, the API, the admin's test
page and the evaluation."""
from retrieval.search.retriever import RetrievalResult, retrieve

__all__ = ["RetrievalResult", "retrieve"]
