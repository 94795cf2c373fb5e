"""Routes outside /api/: OpenAI's paths under /v1/ (the MCP server is mounted in the ASGI app)."""
from django.urls import path

from integrations import openai_views

urlpatterns = [
    path("v1/chat/completions", openai_views.chat_completions, name="openai-chat-completions"),
    path("v1/feedback", openai_views.feedback, name="openai-feedback"),
    path("v1/models", openai_views.models, name="openai-models"),
    path("v1/models/<path:model>", openai_views.models, name="openai-model"),
]
