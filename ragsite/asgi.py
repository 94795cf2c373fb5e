"""ASGI entry point: HTTP through Django (and /mcp through the MCP SDK), WebSocket through Channels (served by daphne)."""
import os

from django.core.asgi import get_asgi_application

from core.pg import bootstrap

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")
bootstrap()  # the embedded database, unless DATABASE_URL is set (settings never start it)
django_asgi_app = get_asgi_application()  # set up Django before importing consumers

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from core.asgi_limits import BodySizeLimitMiddleware  # noqa: E402
from core.client_address import ClientAddressMiddleware  # noqa: E402
from integrations.mcp_asgi import McpMount  # noqa: E402
from ragsite.routing import websocket_urlpatterns  # noqa: E402

# The client address (trusted proxies only) and the access log come first, for both protocols.
application = ClientAddressMiddleware(ProtocolTypeRouter(
    {
        "http": BodySizeLimitMiddleware(McpMount(django_asgi_app)),  # /mcp: the MCP server
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
))
