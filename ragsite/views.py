from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from rest_framework.response import Response
from rest_framework.views import APIView

from core.health import health_report


@never_cache
def healthz(request):
    """200 when the database, pgvector and a worker are up; 503 with the reasons otherwise."""
    from retrieval.ai.server_check import builtin_engine_status

    healthy, report = health_report()
    # The built-in embedder's engine (ONNX Runtime or its fallback) is information, never a reason for 503.
    body = {"status": "ok" if healthy else "unavailable", **report, "embedder": builtin_engine_status()}
    return JsonResponse(body, status=200 if healthy else 503)


@never_cache
def metrics(request):
    """Prometheus metrics of every ragsite process (web server and workers), for allowed scrapers."""
    from core.metrics_access import FORWARDING_HEADERS
    from retrieval.telemetry import CONTENT_TYPE_LATEST, render_metrics

    access = settings.METRICS_ACCESS
    refused = access.decide(authorization=request.META.get("HTTP_AUTHORIZATION", ""),
                            remote_addr=request.META.get("REMOTE_ADDR", ""),
                            forwarded=any(request.META.get(h) for h in FORWARDING_HEADERS))
    if refused:
        if access.token:
            response = HttpResponse(f"Unauthorized: {refused} (send Authorization: Bearer <METRICS_TOKEN>).\n",
                                    status=401, content_type="text/plain")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        return HttpResponse(f"Forbidden: {refused} (see METRICS_ALLOWED_IPS and METRICS_TOKEN).\n",
                            status=403, content_type="text/plain")
    return HttpResponse(render_metrics(), content_type=CONTENT_TYPE_LATEST)


def home(request):
    """Signed in: the conversations. Otherwise a short introduction with the way to sign in."""
    if request.user.is_authenticated:
        from chat.pages import conversation_list

        return conversation_list(request)
    return render(request, "home.html")


class MeView(APIView):
    """Who the API client is signed in as."""

    def get(self, request):
        user = request.user
        return Response({"id": user.pk, "username": user.get_username(), "is_staff": user.is_staff})


def not_found(request, exception=None):
    """404 for a URL no route matches: the API's JSON error shape under /api/, the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "not_found", "message": "Not found.", "extra": {}}, status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def server_error(request):
    """500, or 503 with Retry-After when the database or the object storage was what failed (a
    middleware's session read raises before any view could answer it)."""
    import sys

    from core.unavailable import log_unavailable, unavailable_reason, unavailable_response

    exc = sys.exc_info()[1]
    reason = unavailable_reason(exc)
    if reason is not None:
        log_unavailable(reason[0], exc, path=request.path)
        return unavailable_response(request, *reason)
    from django.views.defaults import server_error as default_server_error

    return default_server_error(request)
