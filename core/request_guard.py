"""Refuse an address with a NUL character (`%00`) before any view sees it: PostgreSQL cannot hold one
in text, so a NUL reaching a filter (`?collection=%00`, `/api/collections/%00/`) failed as a 500."""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.utils.translation import gettext


class NulCharacterMiddleware:
    """400 with a readable message for a path or query string holding NUL."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any("\x00" in key or any("\x00" in v for v in values)
                                          for key, values in request.GET.lists()):
            message = gettext("The address contains a character that is not allowed (NUL, %00).")
            if request.path.startswith(("/api/", "/v1/", "/mcp")):
                return JsonResponse({"code": "invalid", "message": message, "extra": {}}, status=400)
            return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
