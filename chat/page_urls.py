"""Web pages of conversations (the API lives in chat/urls.py); `/` itself is wired in ragsite/urls.py."""
from django.urls import path

from chat import pages
from chat.prompt_preview import prompt_preview

urlpatterns = [
    path("c/new/", pages.conversation_new, name="conversation-new"),
    path("c/<int:conversation_id>/", pages.chat, name="chat"),
    path("c/<int:conversation_id>/export.md", pages.conversation_export, name="conversation-export"),
    path("c/<int:conversation_id>/export.pdf", pages.conversation_export_pdf, name="conversation-export-pdf"),
    path("staff/prompt-preview/", prompt_preview, name="prompt-preview"),  # linked from the retrieval settings
]
