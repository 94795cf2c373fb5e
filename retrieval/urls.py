from django.urls import path

from retrieval.api import EmbedView, SearchView, TopicsView
from retrieval.knowledge.api import KnowledgeApproveView, KnowledgeDetailView, KnowledgeListView, KnowledgeRetireView

urlpatterns = [
    path("search/", SearchView.as_view(), name="api-search"),
    path("embed/", EmbedView.as_view(), name="api-embed"),
    path("topics/", TopicsView.as_view(), name="api-topics"),
    path("knowledge/", KnowledgeListView.as_view(), name="api-knowledge"),
    path("knowledge/<int:entry_id>/", KnowledgeDetailView.as_view(), name="api-knowledge-detail"),
    path("knowledge/<int:entry_id>/approve/", KnowledgeApproveView.as_view(), name="api-knowledge-approve"),
    path("knowledge/<int:entry_id>/retire/", KnowledgeRetireView.as_view(), name="api-knowledge-retire"),
]
