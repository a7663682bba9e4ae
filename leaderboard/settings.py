"""Settings, all read from the environment here and nowhere else.

Defaults run on one laptop with no servers: SQLite in ``data/`` and a Celery
broker in an SQLite file beside it. ``DATABASE_URL`` and ``REDIS_URL`` switch to
PostgreSQL and Redis.
"""
from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

from leaderboard.env import envbool, envchoice, envfloat, envint, envlist, envstr
from leaderboard.logconfig import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

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
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "leaderboard.core",
]

MIDDLEWARE = [
    # First: every answer, a 500 included, carries X-Request-ID, and every log line the id.
    "leaderboard.core.middleware.RequestIdMiddleware",
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
        },
    },
]

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Health checks: a kept connection that a database outage broke is replaced at the next request's
    # first query, so the site answers again as soon as the database is back (leaderboard/core/outage.py).
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=envint("DB_CONN_MAX_AGE", 60),
                                                  conn_health_checks=True)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH") or DATA_DIR / "db.sqlite3",
            # Wait for the writer lock instead of failing at once: the web
            # server and the worker write to the same file.
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"},
            # A file, not memory, so a worker process started by a test sees it.
            "TEST": {"NAME": DATA_DIR / "test_db.sqlite3"},
        }
    }
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
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Uploads larger than the biggest benchmark cap are cut off before a view runs.
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 12 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 12 * 1024 * 1024

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "benchmark_list"
LOGOUT_REDIRECT_URL = "benchmark_list"

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    # Falls back to each process's memory while Redis is unreachable (leaderboard/core/cache.py).
    CACHES = {"default": {"BACKEND": "leaderboard.core.cache.ResilientRedisCache", "LOCATION": REDIS_URL,
                          "OPTIONS": {"socket_connect_timeout": envfloat("REDIS_CONNECT_TIMEOUT", 1.0),
                                      "socket_timeout": envfloat("REDIS_TIMEOUT", 2.0)}}}
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
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # An unacknowledged task of a dead worker goes back to the queue after
        # this many seconds. A backstop only: heartbeats and the sweep requeue
        # a dead worker's submission within a minute, and a long healthy task
        # is never redelivered before this.
        "visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", 600),
        "socket_connect_timeout": envfloat("REDIS_CONNECT_TIMEOUT", 1.0),
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
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# A worker scoring a submission writes a heartbeat every SCORING_HEARTBEAT_SECONDS;
# the sweep requeues a submission whose heartbeat is older than
# SCORING_HEARTBEAT_TIMEOUT_SECONDS (its worker died): requeued at most
# timeout + sweep interval (40 s by default) after the death.
SCORING_HEARTBEAT_SECONDS = envfloat("SCORING_HEARTBEAT_SECONDS", 5.0)
SCORING_HEARTBEAT_TIMEOUT_SECONDS = envfloat("SCORING_HEARTBEAT_TIMEOUT_SECONDS", 30.0)
# Every process that runs tasks writes a worker heartbeat every WORKER_HEARTBEAT_SECONDS, busy or
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

# The OpenAI-compatible endpoint for the de-identification pipeline (optional).
DEID_LLM_URL = os.environ.get("DEID_LLM_URL", "")
DEID_LLM_MODEL = os.environ.get("DEID_LLM_MODEL", "")
DEID_LLM_API_KEY = os.environ.get("DEID_LLM_API_KEY", "")
DEID_LLM_TIMEOUT = envfloat("DEID_LLM_TIMEOUT", 60.0)

# Every process logs to stderr, plain or JSON lines, each line with its request
# (or task) id; unhandled exceptions with their traceback (leaderboard/logconfig.py).
LOG_FORMAT = envchoice("LOG_FORMAT", "plain", ("plain", "json"))
LOG_LEVEL = envstr("LOG_LEVEL", "INFO").upper()
LOGGING = logging_config(fmt=LOG_FORMAT, level=LOG_LEVEL)

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
CONTENT_SECURITY_POLICY = envstr("CONTENT_SECURITY_POLICY", (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"))
