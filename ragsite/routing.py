"""WebSocket routes of every app, collected for the ASGI application."""
from django.urls import path

from chat.consumers import ConversationConsumer
from identity.ws_auth import TokenAuthMiddleware

websocket_urlpatterns: list = [
    path("ws/conversations/<int:conversation_id>/", TokenAuthMiddleware(ConversationConsumer.as_asgi())),
]
