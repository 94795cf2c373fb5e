"""Web pages of documents (the API lives in documents/urls.py)."""
from django.urls import path

from documents import views

urlpatterns = [
    path("library/", views.library, name="library"),
    path("documents/<int:document_id>/", views.document_view, name="document-view"),
    path("documents/<int:document_id>/download/", views.document_download, name="document-download"),
]
