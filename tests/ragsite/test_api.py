"""The API's shared behaviour: token auth, JSON errors, schema and docs."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_token_from_username_and_password_then_token_auth(user):
    client = APIClient()
    response = client.post("/api/auth/token/", {"username": "alice", "password": "alice-pass-123"}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    me = client.get("/api/me/")
    assert me.status_code == 200
    assert me.json()["username"] == "alice"


def test_wrong_password_gives_json_error_shape(user):
    response = APIClient().post("/api/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"code", "message", "extra"}
    assert body["code"] == "invalid"
    assert "Unable to log in" in body["message"]


def test_unauthenticated_request_is_401_or_403_with_json_error():
    response = APIClient().get("/api/me/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    body = response.json()
    assert body["code"] == "not_authenticated"
    assert body["message"]


def test_bad_token_is_refused():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = client.get("/api/me/")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_openapi_schema_and_docs_are_served_without_network(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/auth/token/" in schema.json()["paths"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    # Swagger UI assets come from ragsite itself (drf-spectacular-sidecar), not a CDN.
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html
    assert "/static/drf_spectacular_sidecar/" in html


def test_home_login_and_admin_pages_render(client):
    assert client.get("/").status_code == 200
    assert client.get("/accounts/login/").status_code == 200
    assert client.get("/admin/login/").status_code == 200


def test_domain_errors_map_to_http_statuses_in_one_place():
    """core.errors decides each domain error's HTTP status by its class; the body keeps the raise's code."""
    from core import errors
    from documents.services import UploadCorrupt, UploadRejected, UploadTooLarge, UploadUnsupported

    expected = {errors.ApplicationError: 400, errors.NotFound: 404, errors.PermissionDenied: 403,
                errors.Conflict: 409, errors.Gone: 410, errors.TooLarge: 413, errors.UnsupportedMediaType: 415,
                errors.Unprocessable: 422, errors.Throttled: 429, errors.BadGateway: 502, errors.TimedOut: 504,
                UploadRejected: 400, UploadTooLarge: 413, UploadUnsupported: 415, UploadCorrupt: 422}
    for cls, status in expected.items():
        response = errors.api_exception_handler(cls("Why.", code="precise", extra={"n": 1}), {})
        assert (response.status_code, response.data) == (status, {"code": "precise", "message": "Why.",
                                                                  "extra": {"n": 1}}), cls
        assert cls("Why.").status_code == status
    assert errors.Throttled("Slow down.").code == "throttled" and errors.NotFound("Gone?").code == "not_found"
    with pytest.raises(TypeError):
        errors.ApplicationError("Why.", status_code=404)  # a status is never named where the error is raised
