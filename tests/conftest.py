"""Shared fixtures: a fixed cast (owner, member, outsider, organiser) and small bundles."""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from leaderboard.core.api.auth import token_create


def write_properties_bundle(directory: Path, rows: list[dict], *, properties=None, slug="mini-props",
                            daily_limit=5, extra_config=None) -> Path:
    """A properties bundle: rows are dicts with sequence_id, fold, split and one value per property."""
    properties = properties or [
        {"name": "A", "higher_is_better": True, "recall": True},
        {"name": "B", "higher_is_better": False, "recall": False},
    ]
    directory.mkdir(parents=True, exist_ok=True)
    config = {"properties": properties, "weights": {"spearman": 0.6, "recall": 0.4}, "recall_fraction": 0.1}
    config.update(extra_config or {})
    (directory / "benchmark.json").write_text(json.dumps({
        "slug": slug, "title": slug.replace("-", " ").title(), "kind": "properties",
        "description": "A small test benchmark.", "daily_limit": daily_limit, "config": config,
    }))
    columns = ["sequence_id", "fold", "split", *[p["name"] for p in properties]]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (directory / "cases.csv").write_text(buf.getvalue())
    return directory


# Ten antibodies: seven public, three private. Values chosen so ranks are easy to work by hand.
MINI_ROWS = [
    {"sequence_id": f"ab{i:02d}", "fold": i % 5, "split": "public" if i < 7 else "private",
     "A": a, "B": b}
    for i, (a, b) in enumerate([(1.0, 9.0), (2.0, 8.0), (3.0, 7.5), (4.0, 6.0), (5.0, 5.0), (6.0, 4.0),
                                (7.0, 3.0), (8.0, 2.0), (9.0, 1.0), (10.0, 0.5)])
]


def submission_csv(rows: list[dict], *, a=None, b=None, columns=("sequence_id", "A", "B", "fold")) -> bytes:
    """A submission predicting ``a[i]`` and ``b[i]`` for MINI-like rows (defaults: the truth itself)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for i, row in enumerate(rows):
        values = {"sequence_id": row["sequence_id"], "fold": row["fold"],
                  "A": row["A"] if a is None else a[i], "B": row["B"] if b is None else b[i]}
        writer.writerow([values[c] for c in columns])
    return out.getvalue().encode()


@pytest.fixture
def mini_bundle(tmp_path) -> Path:
    return write_properties_bundle(tmp_path / "mini", MINI_ROWS)


@pytest.fixture
def mini_benchmark(db, mini_bundle):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    return benchmark_load_bundle(mini_bundle).benchmark


@pytest.fixture
def users(db):
    User = get_user_model()
    return {
        "owner": User.objects.create_user("owner", password="pw-owner-123"),
        "member": User.objects.create_user("member", password="pw-member-123"),
        "outsider": User.objects.create_user("outsider", password="pw-outsider-123"),
        "organiser": User.objects.create_user("organiser", password="pw-organiser-123", is_staff=True,
                                              is_superuser=True),
    }


@pytest.fixture
def api_for(users):
    """api_for("owner") -> an APIClient authenticated with a real token of that user."""

    def make(name: str) -> APIClient:
        client = APIClient()
        _, key = token_create(user=users[name])
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    return make


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """Each pytest-xdist worker starts with a Redis database and a data folder of its own
    (tests/support/parallel.py), set in its environment before its Django reads the settings."""
    from tests.support.parallel import worker_environment

    for spec in specs:
        spec.env.update(worker_environment(spec.id))


@pytest.fixture(scope="session", autouse=True)
def _collected_static():
    """Pages name the hashed static files of collectstatic's manifest, as in production: collect once a run
    (into the tests' own STATIC_ROOT, which the live servers the tests start read too)."""
    from django.core.management import call_command

    call_command("collectstatic", "--noinput", verbosity=0)


@pytest.fixture(scope="session")
def live_server(request, _collected_static):
    """pytest-django's live server, serving /static/ from STATIC_ROOT (collectstatic's hashed, compressed files)
    as WhiteNoise and nginx do in production, rather than from the source folders, which lack the hashed names."""
    import django.contrib.staticfiles.handlers as handlers
    from django.test.testcases import _StaticFilesHandler
    from pytest_django.live_server_helper import LiveServer

    addr = request.config.getvalue("liveserver") or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost"
    finders_handler = handlers.StaticFilesHandler
    handlers.StaticFilesHandler = _StaticFilesHandler  # what LiveServer picks up while it starts
    try:
        server = LiveServer(addr)
    finally:
        handlers.StaticFilesHandler = finders_handler
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _test_settings(settings, tmp_path):
    # Files uploaded by tests go to a temporary media folder.
    settings.MEDIA_ROOT = tmp_path / "media"
    # Mail without EMAIL_URL: one .eml file per message, here in the test's own folder.
    settings.EMAIL_FILE_PATH = tmp_path / "mail"
    # Hashing passwords with a million PBKDF2 rounds is slow and tests nothing here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server in the test process (tests/support/smtp.py); Django's mail goes to it,
    configured through the same ``EMAIL_URL`` parsing as the settings."""
    from leaderboard.env import email_url
    from tests.support.smtp import start_smtp

    server, controller = start_smtp()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    for name, value in email_url(server.url).items():
        setattr(settings, name, value)
    yield server
    controller.stop()


@pytest.fixture(autouse=True)
def _api_answers_checked_against_the_schema(settings):
    """Every /api/ answer a test receives must be one the OpenAPI schema declares (tests/support/openapi.py)."""
    settings.MIDDLEWARE = ["tests.support.openapi.SchemaCheckedResponses", *settings.MIDDLEWARE]


@pytest.fixture(autouse=True)
def _celery_eager(request):
    """Tasks run inline unless a test talks to a real worker (marked ``worker``)."""
    from leaderboard.celery import app

    eager = request.node.get_closest_marker("worker") is None
    old = app.conf.task_always_eager
    app.conf.task_always_eager = eager
    yield
    app.conf.task_always_eager = old


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """Abuse throttles count across requests; each test starts with none used, and with no cached board."""
    from django.core.cache import cache

    client_of = getattr(getattr(cache, "_cache", None), "get_client", None)
    if client_of is not None:  # Redis: delete throttle keys only, never the broker's
        client = client_of(None, write=True)
        # and cached boards (leaderboard/core/boardcache.py), the metrics' last counts
        # (leaderboard/core/metrics.py) and django-allauth's rate limits
        for pattern in ("*throttle_*", "*boards:*", "*metrics:*", "*allauth:rl:*"):
            for key in client.scan_iter(match=pattern):
                client.delete(key)
    else:
        cache.clear()
