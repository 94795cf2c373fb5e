"""Web pages of conversations (the API lives in chat/urls.py); `/` itself is wired in ragsite/urls.py."""
from django.urls import path

from chat import pages

urlpatterns = [
    path("c/new/", pages.conversation_new, name="conversation-new"),
    path("c/<int:conversation_id>/", pages.chat, name="chat"),
]
