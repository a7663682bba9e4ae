"""Settings, all read from the environment here and nowhere else.

Defaults run on one laptop with no servers: SQLite in ``data/`` and a Celery
broker in an SQLite file beside it. ``DATABASE_URL`` and ``REDIS_URL`` switch to
PostgreSQL and Redis.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url

from leaderboard.env import email_url, envbool, envchoice, envfloat, envint, envlist, envstr
from leaderboard.errorreports import sentry_start
from leaderboard.logconfig import logging_config

# The folder holding templates/ and static/ (and data/ unless DATA_DIR says otherwise): the checkout,
# or, where the package is installed rather than run from its source (the image), PROJECT_DIR.
BASE_DIR = Path(os.environ.get("PROJECT_DIR") or Path(__file__).resolve().parent.parent)

DATA_DIR = Path(os.environ.get("DATA_DIR") or BASE_DIR / "data")
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = envbool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY") or (
    "insecure-development-key-set-SECRET_KEY-in-production" if DEBUG else ""
)
if not SECRET_KEY:
    raise ValueError("SECRET_KEY must be set when DEBUG is false")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])
SITE_NAME = os.environ.get("SITE_NAME", "Leaderboard")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "allauth",
    "allauth.account",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "leaderboard.core",
]
# Social login (allauth.socialaccount) is off unless SOCIAL_LOGIN_PROVIDERS names providers, e.g.
# "github,google"; each needs SOCIAL_LOGIN_<PROVIDER>_CLIENT_ID and _SECRET and the extra
# `pip install "django-allauth[socialaccount]"` (docs/deploy.md#social-login).
SOCIAL_LOGIN_PROVIDERS = envlist("SOCIAL_LOGIN_PROVIDERS", [])
if SOCIAL_LOGIN_PROVIDERS:
    INSTALLED_APPS += ["allauth.socialaccount",
                       *(f"allauth.socialaccount.providers.{name}" for name in SOCIAL_LOGIN_PROVIDERS)]
    SOCIALACCOUNT_PROVIDERS = {}
    for _provider in SOCIAL_LOGIN_PROVIDERS:
        _id = envstr(f"SOCIAL_LOGIN_{_provider.upper()}_CLIENT_ID")
        _secret = envstr(f"SOCIAL_LOGIN_{_provider.upper()}_SECRET")
        if not (_id and _secret):
            raise ValueError(f"SOCIAL_LOGIN_PROVIDERS names {_provider!r}: set SOCIAL_LOGIN_{_provider.upper()}_CLIENT_ID "
                             f"and SOCIAL_LOGIN_{_provider.upper()}_SECRET too")
        SOCIALACCOUNT_PROVIDERS[_provider] = {"APPS": [{"client_id": _id, "secret": _secret}]}
    # An address a provider vouches for still gets our verification mail before uploads open.
    SOCIALACCOUNT_EMAIL_VERIFICATION = "optional"
    SOCIALACCOUNT_AUTO_SIGNUP = False  # the sign-up form asks for a username (and an email if the provider gave none)

MIDDLEWARE = [
    # First: every answer, a 500 included, carries X-Request-ID, and every log line the id.
    "leaderboard.core.middleware.RequestIdMiddleware",
    # Every answer counted by status class and timed, for /metrics.
    "leaderboard.core.metrics.HttpMetricsMiddleware",
    # /healthz, /readyz and /metrics, before the host check, the HTTPS redirect and anything
    # that needs the database (leaderboard/core/probes.py).
    "leaderboard.core.probes.ProbesMiddleware",
    # Pages, JSON and CSV gzip-compressed for clients that accept it (docs/deploy.md, "Compression":
    # Django's own, with its BREACH mitigation, and masked CSRF tokens). Outside every middleware that
    # writes a body (the API's JSON errors, the outage page), so those are compressed too.
    "django.middleware.gzip.GZipMiddleware",
    # The API throttles' RateLimit-* headers (leaderboard/core/throttles.py notes them on the request)
    # and X-Min-Client-Version on every /api/ answer.
    "leaderboard.core.middleware.ApiHeadersMiddleware",
    # Every /api/ answer is JSON, a 404 for a path no route matches and a 405 included.
    "leaderboard.core.middleware.ApiJsonErrorsMiddleware",
    # A database that cannot be reached answers 503 with Retry-After, not 500 (leaderboard/core/outage.py).
    "leaderboard.core.outage.DatabaseUnavailableMiddleware",
    "leaderboard.core.middleware.RejectControlCharactersMiddleware",
    "leaderboard.core.middleware.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "leaderboard.core.context_processors.site",
            ],
            # {% url %} reversing each address once per process (issue 26: page rendering time).
            "builtins": ["leaderboard.core.templatetags.urls_once"],
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Health checks: a kept connection that a database outage broke is replaced at the next request's
    # first query, so the site answers again as soon as the database is back (leaderboard/core/outage.py).
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=envint("DB_CONN_MAX_AGE", 60),
                                                  conn_health_checks=True)}
    # A server that takes the connection and then says nothing (hung, or a half-open network path)
    # fails the attempt after DB_CONNECT_TIMEOUT seconds, so pages answer 503 and /readyz its check
    # within seconds, rather than a thread waiting on it for minutes. ?connect_timeout= in the URL wins.
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend with a health check that asks the socket first (leaderboard/core/postgresql/).
        DATABASES["default"]["ENGINE"] = "leaderboard.core.postgresql"
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", envint("DB_CONNECT_TIMEOUT", 5))
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH") or str(DATA_DIR / "db.sqlite3"),
            # Wait for the writer lock instead of failing at once: the web
            # server and the worker write to the same file. WAL: readers never wait
            # for the writer and a commit appends to the log instead of rewriting
            # pages twice; synchronous NORMAL syncs at checkpoints, not every commit
            # (what that risks: docs/deploy.md#sqlite-wal).
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE",
                        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"},
            # A file, not memory, so a worker process started by a test sees it.
            "TEST": {"NAME": DATA_DIR / "test_db.sqlite3"},
        }
    }
# The few statements run on every signed-in page view are prepared once per PostgreSQL connection
# (leaderboard/core/dbcursor.py); false for a pooler in transaction mode.
DB_PREPARED_STATEMENTS = envbool("DB_PREPARED_STATEMENTS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns on every request when it is missing
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or DATA_DIR / "media")
MEDIA_URL = "/media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # collectstatic writes each file under a name holding a hash of its content, with gzip
    # (and brotli) copies beside it; pages name the hashed files, which WhiteNoise and nginx
    # serve with a cache lifetime of years (an upgrade changes the names, never the files).
    # With DEBUG on, pages name the source files and WhiteNoise serves them from the finders.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# Uploads larger than the biggest benchmark cap are cut off before a view runs.
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 12 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 12 * 1024 * 1024

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "benchmark_list"
LOGOUT_REDIRECT_URL = "benchmark_list"

# --- Accounts (django-allauth: sign-up, verification, password reset, email change) -----
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    # Log in with the username or the (verified or not) email address.
    "allauth.account.auth_backends.AuthenticationBackend",
]
ACCOUNT_SIGNUP_FIELDS = ["username*", "email*", "password1*", "password2*"]
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_UNIQUE_EMAIL = True
# Log in before verifying: an unverified account browses and downloads; uploads wait for the
# mailed link (leaderboard/core/services/accounts.py, upload_refusal).
ACCOUNT_EMAIL_VERIFICATION = "optional"
# One address per account: a change is verified by a link to the new address before it replaces the old.
ACCOUNT_CHANGE_EMAIL = True
ACCOUNT_EMAIL_NOTIFICATIONS = True  # "your password / email changed" to the account's address
ACCOUNT_EMAIL_SUBJECT_PREFIX = f"[{SITE_NAME}] "
ACCOUNT_ADAPTER = "leaderboard.core.adapters.AccountAdapter"
ACCOUNT_LOGOUT_REDIRECT_URL = LOGOUT_REDIRECT_URL

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    # Falls back to each process's memory while Redis is unreachable (leaderboard/core/cache.py).
    CACHES: dict[str, dict[str, Any]] = {"default": {"BACKEND": "leaderboard.core.cache.ResilientRedisCache", "LOCATION": REDIS_URL,
                          "OPTIONS": {"socket_connect_timeout": envfloat("REDIS_CONNECT_TIMEOUT", 1.0),
                                      "socket_timeout": envfloat("REDIS_TIMEOUT", 2.0)}}}
    # Sessions read from Redis, written to both: a signed-in page costs no session query (issue 26);
    # while Redis is down they are read from the database, where every session also is.
    # Django's cached_db, whose session a signed-in page can read in a round trip it makes anyway.
    SESSION_ENGINE = "leaderboard.core.sessions"
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                          "LOCATION": DATA_DIR / "cache"}}

# Cached board reads (leaderboard/core/boardcache.py) are dropped when a board changes; this is only
# the backstop for changes made outside the services; 0 turns the board cache off.
BOARD_CACHE_SECONDS = envint("BOARD_CACHE_SECONDS", 300)

# How many reverse proxies of ours stand in front of the web server. 0: the
# client's address is the connection's (REMOTE_ADDR) and X-Forwarded-For is
# ignored. N: the address N entries from the right of X-Forwarded-For, the one
# our outermost proxy saw; entries further left are the client's own claims.
TRUSTED_PROXY_COUNT = envint("TRUSTED_PROXY_COUNT", 0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.core.api.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "leaderboard.core.api.schema.ApiAutoSchema",
    "DEFAULT_PARSER_CLASSES": [
        "leaderboard.core.api.parsers.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Throttles key anonymous clients on this address (see TRUSTED_PROXY_COUNT).
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
    # DRF's anon and user throttles as one (one cache read and write per request).
    "DEFAULT_THROTTLE_CLASSES": ["leaderboard.core.throttles.VisitorRateThrottle"],
    # Abuse limits only; the daily submission quota is a domain rule.
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("THROTTLE_ANON", "300/min"),
        "user": os.environ.get("THROTTLE_USER", "1200/min"),
        "upload": os.environ.get("THROTTLE_UPLOAD", "120/min"),
        "verify": os.environ.get("THROTTLE_VERIFY", "30/min"),
        "login": os.environ.get("THROTTLE_LOGIN", "20/min"),
        "signup": os.environ.get("THROTTLE_SIGNUP", "10/hour"),
    },
    "EXCEPTION_HANDLER": "leaderboard.core.api.errors.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # ?format=csv is ours (case downloads), not a renderer override.
    "URL_FORMAT_OVERRIDE": None,
}

# The oldest leaderboard-client this API serves as documented: every /api/ answer says it in
# X-Min-Client-Version, and an older client warns its user to upgrade (docs/api.md, docs/client.md).
MIN_CLIENT_VERSION = os.environ.get("MIN_CLIENT_VERSION", "0.1.0")

SPECTACULAR_SETTINGS = {
    "TITLE": f"{SITE_NAME} API",
    "DESCRIPTION": "Benchmarks, submissions and leaderboards. Authenticate with `Authorization: Token KEY`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -----------------------------------------------------------------
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
        # An unacknowledged task of a dead worker goes back to the queue after
        # this many seconds. A backstop only: heartbeats and the sweep requeue
        # a dead worker's submission within a minute, and a long healthy task
        # is never redelivered before this.
        "visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", 600),
        "socket_connect_timeout": envfloat("REDIS_CONNECT_TIMEOUT", 1.0),
        # A Redis that takes the connection and then says nothing (hung, or a half-open network path)
        # fails a publish after this long: the upload is still answered 202 and waits in the outbox,
        # /readyz answers, instead of a web thread waiting on it for ever. Above kombu's 1 s BRPOP.
        "socket_timeout": max(envfloat("REDIS_TIMEOUT", 2.0), 2.0),
    }
else:
    # The embedded broker: an SQLite file, one transaction per publish and per take
    # (leaderboard/broker.py; kombu's SQLAlchemy transport).
    CELERY_BROKER_TRANSPORT = "leaderboard.broker:Transport"
    CELERY_BROKER_URL = "sqlite:///" + str(DATA_DIR / "broker.sqlite3")
    CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.1, "busy_timeout": 30}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_DEFAULT_QUEUE = "scoring"
# Workers and beat wait for a broker that is down, however long, rather than exit.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Celery's processes log through LOGGING below (leaderboard/celery.py).
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
SWEEP_INTERVAL_SECONDS = envfloat("SWEEP_INTERVAL_SECONDS", 10.0)
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-submissions": {
        "task": "leaderboard.sweep_stuck_submissions",
        "schedule": SWEEP_INTERVAL_SECONDS,
        # A sweep nobody ran in time is dropped, not piled up behind a busy queue.
        "options": {"expires": SWEEP_INTERVAL_SECONDS},
    },
    # Round kinds: rounds past closes_at close by themselves (uploads past it are refused
    # at once anyway); truth versions whose scoring never finished are requeued.
    "close-due-rounds": {
        "task": "leaderboard.close_due_rounds",
        "schedule": envfloat("ROUND_CLOSE_INTERVAL_SECONDS", 30.0),
    },
    "sweep-round-versions": {
        "task": "leaderboard.sweep_round_versions",
        "schedule": SWEEP_INTERVAL_SECONDS,
        "options": {"expires": SWEEP_INTERVAL_SECONDS},
    },
    # Notifications: events never fanned out (a worker died between commit and delivery),
    # webhook retries that are due, mails not sent yet.
    "sweep-notifications": {
        "task": "leaderboard.notifications.sweep",
        "schedule": SWEEP_INTERVAL_SECONDS,
        "options": {"expires": SWEEP_INTERVAL_SECONDS},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# A worker scoring a submission writes a heartbeat every SCORING_HEARTBEAT_SECONDS;
# the sweep requeues a submission whose heartbeat is older than
# SCORING_HEARTBEAT_TIMEOUT_SECONDS (its worker died): requeued at most
# timeout + sweep interval (40 s by default) after the death.
SCORING_HEARTBEAT_SECONDS = envfloat("SCORING_HEARTBEAT_SECONDS", 5.0)
SCORING_HEARTBEAT_TIMEOUT_SECONDS = envfloat("SCORING_HEARTBEAT_TIMEOUT_SECONDS", 30.0)
# Every process of a scoring worker writes a worker heartbeat every WORKER_HEARTBEAT_SECONDS, busy or
# idle (leaderboard/core/liveness.py). `manage.py serve` restarts its worker when none of its
# processes has beaten for WORKER_STALL_SECONDS, or when a queued submission has waited that long
# while the worker took no task; /readyz calls the worker down past the same age.
WORKER_HEARTBEAT_SECONDS = envfloat("WORKER_HEARTBEAT_SECONDS", 10.0)
WORKER_STALL_SECONDS = envfloat("WORKER_STALL_SECONDS", 60.0)
# A new pool process must report ready within this many seconds or Celery kills it and forks
# another (Celery's default is 4 s). The kinds are imported before forking, so a new pool
# process has little to do; the margin is for a machine under heavy load (issue 19).
CELERY_WORKER_PROC_ALIVE_TIMEOUT = envfloat("CELERY_WORKER_PROC_ALIVE_TIMEOUT", 30.0)
# Uploads whose task never reached the broker wait this long (the request that
# stored them may still be publishing) before the sweep publishes them.
OUTBOX_GRACE_SECONDS = envfloat("OUTBOX_GRACE_SECONDS", 5.0)
# A submission queued (and handed to the broker) or scoring without heartbeats
# for longer than this is requeued by the sweep, and failed with a reason
# after SCORING_MAX_ATTEMPTS tries.
SCORING_STUCK_AFTER_SECONDS = envint("SCORING_STUCK_AFTER_SECONDS", 300)
SCORING_MAX_ATTEMPTS = envint("SCORING_MAX_ATTEMPTS", 3)
# Slow motion for demonstrations and the worker-killed test: seconds a scoring
# task sleeps after marking a submission as scoring. 0 in production.
SCORING_DELAY_SECONDS = envfloat("SCORING_DELAY_SECONDS", 0.0)

# --- Notifications (leaderboard/core/delivery.py) ---------------------------------
# false: no event is written to the outbox at all (no mail, no webhook); for measuring what
# notifications cost (benchmarks/notifications.py) or a site that wants none.
NOTIFICATIONS_ENABLED = envbool("NOTIFICATIONS_ENABLED", True)
# Links in mails and webhook payloads start with SITE_URL (the site as its users reach it).
SITE_URL = envstr("SITE_URL", f"http://127.0.0.1:{envint('PORT', 8000)}").rstrip("/")
# Webhook URLs that resolve to private, loopback or link-local addresses are refused at delivery
# time unless this is true (or DEBUG is on): a local receiver for development and the tests.
WEBHOOK_ALLOW_PRIVATE_NETWORKS = envbool("WEBHOOK_ALLOW_PRIVATE_NETWORKS", False)
WEBHOOK_TIMEOUT_SECONDS = envfloat("WEBHOOK_TIMEOUT_SECONDS", 10.0)
# At most WEBHOOK_MAX_ATTEMPTS POSTs per delivery; the wait after attempt n is
# WEBHOOK_RETRY_BASE_SECONDS x 3^(n-1): 1, 3, 9, 27, 81, 243 and 729 minutes, about 18 hours in all.
WEBHOOK_MAX_ATTEMPTS = envint("WEBHOOK_MAX_ATTEMPTS", 8)
WEBHOOK_RETRY_BASE_SECONDS = envfloat("WEBHOOK_RETRY_BASE_SECONDS", 60.0)
# A webhook that has failed for this long without a single success is disabled; its owner is mailed.
WEBHOOK_DISABLE_AFTER_SECONDS = envfloat("WEBHOOK_DISABLE_AFTER_SECONDS", 86400.0)
# Deliveries and mails are sent in batches of this many per task on the notifications queue.
NOTIFICATION_BATCH_SIZE = envint("NOTIFICATION_BATCH_SIZE", 200)
# A batch handed to a worker that has not finished after this long is handed out again (its worker
# died): longer than a batch can take (200 deliveries, 8 at a time, 10 s each at worst).
NOTIFICATION_CLAIM_STALE_SECONDS = envfloat("NOTIFICATION_CLAIM_STALE_SECONDS", 600.0)
# Notification tasks run on their own queue, so that a round of 10,000 entrants resolving never
# waits behind (or delays) scoring; `manage.py serve` and docker-compose run a worker for it.
CELERY_TASK_ROUTES = {"leaderboard.notifications.*": {"queue": "notifications"}}

# --- Mail (Django's mail API) ------------------------------------------------
# EMAIL_URL selects an SMTP server (leaderboard/env.py, email_url); unset, every message is
# written as one .eml file to $DATA_DIR/mail/ (leaderboard/core/mailfiles.py), so a laptop
# and `make demo` show every mail without a server.
EMAIL_URL = os.environ.get("EMAIL_URL", "")
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", f"{SITE_NAME} <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
if EMAIL_URL:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    _smtp = email_url(EMAIL_URL)
    EMAIL_HOST, EMAIL_PORT = _smtp["EMAIL_HOST"], _smtp["EMAIL_PORT"]
    EMAIL_HOST_USER, EMAIL_HOST_PASSWORD = _smtp["EMAIL_HOST_USER"], _smtp["EMAIL_HOST_PASSWORD"]
    EMAIL_USE_TLS, EMAIL_USE_SSL, EMAIL_TIMEOUT = _smtp["EMAIL_USE_TLS"], _smtp["EMAIL_USE_SSL"], _smtp["EMAIL_TIMEOUT"]
else:
    EMAIL_BACKEND = "leaderboard.core.mailfiles.EmlFileBackend"
    EMAIL_FILE_PATH = DATA_DIR / "mail"

# The staff's fair-play page (leaderboard/core/services/fairplay.py): pairs of entrants whose predictions
# correlate at or above this within a round or split; the search samples this many values per entrant
# (then checks candidates exactly); a report is reused this long while nothing new is submitted.
FAIRPLAY_CORRELATION_THRESHOLD = envfloat("FAIRPLAY_CORRELATION_THRESHOLD", 0.99)
if not 0 < FAIRPLAY_CORRELATION_THRESHOLD <= 1:
    raise ValueError("FAIRPLAY_CORRELATION_THRESHOLD must be above 0 and at most 1")
FAIRPLAY_SAMPLE_VALUES = envint("FAIRPLAY_SAMPLE_VALUES", 512)
FAIRPLAY_CACHE_SECONDS = envint("FAIRPLAY_CACHE_SECONDS", 600)

# The OpenAI-compatible endpoint for the de-identification pipeline (optional).
DEID_LLM_URL = os.environ.get("DEID_LLM_URL", "")
DEID_LLM_MODEL = os.environ.get("DEID_LLM_MODEL", "")
DEID_LLM_API_KEY = os.environ.get("DEID_LLM_API_KEY", "")
DEID_LLM_TIMEOUT = envfloat("DEID_LLM_TIMEOUT", 60.0)

# Every process logs to stderr, plain or JSON lines, each line with its request
# (or task) id; unhandled exceptions with their traceback (leaderboard/logconfig.py).
LOG_FORMAT = envchoice("LOG_FORMAT", "plain", ("plain", "json"))
LOG_LEVEL = envchoice("LOG_LEVEL", "info", ("debug", "info", "warning", "error", "critical")).upper()
LOGGING = logging_config(fmt=LOG_FORMAT, level=LOG_LEVEL)

# --- Operations: /healthz, /readyz, /metrics and error reports (docs/operations.md) ----------
# /metrics is open from the loopback address and with DEBUG on; from anywhere else it needs
# "Authorization: Bearer <METRICS_TOKEN>" (unset: refused).
METRICS_TOKEN = envstr("METRICS_TOKEN", "")
# A folder the processes of one gunicorn share their HTTP counters through (prometheus-client's
# multiprocess mode); leaderboard/gunicorn_conf.py makes a fresh one when it is unset.
PROMETHEUS_MULTIPROC_DIR = envstr("PROMETHEUS_MULTIPROC_DIR", "")
SENTRY_DSN = envstr("SENTRY_DSN", "")
sentry_start(dsn=SENTRY_DSN, environment=envstr("SENTRY_ENVIRONMENT", ""), release=envstr("SENTRY_RELEASE", ""),
             send_pii=envbool("SENTRY_SEND_PII", False),
             traces_sample_rate=envfloat("SENTRY_TRACES_SAMPLE_RATE", 0.0))

# --- HTTPS behind a proxy (docs/deploy.md) ------------------------------------
# "HTTP_X_FORWARDED_PROTO,https": the proxy says which requests came over HTTPS.
# Only set it when a proxy of ours sets that header and strips the client's.
_proxy_ssl = envlist("SECURE_PROXY_SSL_HEADER", [])
if _proxy_ssl:
    if len(_proxy_ssl) != 2:
        raise ValueError("SECURE_PROXY_SSL_HEADER must be 'HEADER,value', e.g. HTTP_X_FORWARDED_PROTO,https")
    SECURE_PROXY_SSL_HEADER = (_proxy_ssl[0], _proxy_ssl[1])
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", not DEBUG)
# Scripts, styles, images and fonts from this site only; no inline script or style, no framing.
# The pages and the API docs are built to need nothing more (tests/browser/test_csp.py).
# Set but empty: no header at all (envstr would read empty as unset and send the default).
CONTENT_SECURITY_POLICY = os.environ.get("CONTENT_SECURITY_POLICY", (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")).strip()
