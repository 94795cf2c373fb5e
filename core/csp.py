"""Content-Security-Policy on every response, with a fresh nonce per request.

Django 5.2 has no CSP of its own (6.0 brings one), so this small middleware sends it. Scripts
run only from this site's own files or from an inline `<script nonce="{{ csp_nonce }}">` (the
`core.csp.nonce` context processor puts the nonce in every template): an injected `<script>`,
`on…=` handler or `javascript:` URL does not run, and `eval` is refused (PDF.js is told not to
try it; WebAssembly, which its image decoders use, is allowed). Styles: this site's files and
inline ones (Django's admin, the API docs and the pages still carry `style=` attributes); styles
cannot run code. Pages cannot be framed, forms post to this site only, and connections
(fetch, WebSocket) go to this site and, with object storage, to the bucket (the PDF viewer
follows a download's redirect there, direct uploads post there).

``CSP_REPORT_ONLY=true`` sends the same policy as ``Content-Security-Policy-Report-Only`` (to try
it on a deployment first); ``CSP_REPORT_URI`` adds a `report-uri`.
"""
from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from django.conf import settings


def bucket_origins() -> list[str]:
    """Origins of the object storage the browser talks to (none without S3_BUCKET)."""
    if not getattr(settings, "S3_BUCKET", ""):
        return []
    endpoint = getattr(settings, "S3_ENDPOINT_URL", "")
    if endpoint:
        parts = urlsplit(endpoint)
        # Path-style and virtual-host-style addresses of the same endpoint.
        return [f"{parts.scheme}://{parts.netloc}", f"{parts.scheme}://*.{parts.netloc}"]
    region = getattr(settings, "S3_REGION", "") or "us-east-1"
    return [f"https://{settings.S3_BUCKET}.s3.{region}.amazonaws.com", f"https://s3.{region}.amazonaws.com",
            f"https://{settings.S3_BUCKET}.s3.amazonaws.com"]


def policy(nonce: str) -> str:
    bucket = " ".join(bucket_origins())
    directives = [
        "default-src 'self'",
        f"script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        f"connect-src 'self' {bucket}".strip(),
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        f"form-action 'self' {bucket}".strip(),
        "frame-ancestors 'none'",
    ]
    report_uri = getattr(settings, "CSP_REPORT_URI", "")
    if report_uri:
        directives.append(f"report-uri {report_uri}")
    return "; ".join(directives)


class ContentSecurityPolicyMiddleware:
    """Sets `request.csp_nonce` and the policy header (unless a view set its own)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.csp_nonce = secrets.token_urlsafe(18)
        response = self.get_response(request)
        header = ("Content-Security-Policy-Report-Only" if getattr(settings, "CSP_REPORT_ONLY", False)
                  else "Content-Security-Policy")
        if header not in response:
            response[header] = policy(request.csp_nonce)
        return response


def nonce(request) -> dict:
    """Template context: `csp_nonce` for inline `<script>` and `<style>` elements."""
    return {"csp_nonce": getattr(request, "csp_nonce", "")}
