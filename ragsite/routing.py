"""WebSocket routes of every app, collected for the ASGI application."""
websocket_urlpatterns: list = []
