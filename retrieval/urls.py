from django.urls import path

from retrieval.api import EmbedView, SearchView, TopicsView

urlpatterns = [
    path("search/", SearchView.as_view(), name="api-search"),
    path("embed/", EmbedView.as_view(), name="api-embed"),
    path("topics/", TopicsView.as_view(), name="api-topics"),
]
