"""A database outage (issue 19, item 3): 503 with Retry-After, one log line per kind of failure, at once back.

gunicorn (the production settings, DEBUG off) reaches the real PostgreSQL through a relay in this
test process; stopping the relay is the database going away (the port refuses, open connections are
cut), starting it again is the database returning. The shared PostgreSQL server is never touched.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

import pytest
from django.db import connection
from django.test import Client

from leaderboard.core.api.auth import token_create
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, submission_csv
from tests.core.test_quota_http import _multipart
from tests.support.server import start_gunicorn
from tests.support.tcpproxy import TcpRelay
from tests.support.worker import stop_worker

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="needs PostgreSQL (DATABASE_URL) to take away"),
]


def _ask(url: str, *, headers: dict | None = None, data: bytes | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_db_outage_answers_503_with_retry_after_logs_once_and_recovers_at_once(mini_bundle, users):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    _, key = token_create(user=users["owner"])
    browser = Client()
    browser.force_login(users["member"])
    session = browser.cookies["sessionid"].value
    db = connection.settings_dict
    relay = TcpRelay((db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)))
    relay.start()
    url = f"postgres://{db.get('USER') or 'postgres'}@127.0.0.1:{relay.port}/{db['NAME']}"
    proc, base = start_gunicorn(workers=1, threads=4, env_overrides={
        "DATABASE_URL": url, "DEBUG": "false", "SECRET_KEY": "outage-test-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1", "SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false"})
    body, ctype = _multipart(submission_csv(MINI_ROWS), "preds.csv")
    token = {"Authorization": f"Token {key}"}
    must_503 = {  # name: (path, headers, body), each of which needs the database
        "home page": ("/", {}, None),
        "my submissions (session)": ("/submissions/", {"Cookie": f"sessionid={session}"}, None),
        "API list": ("/api/benchmarks/", {}, None),
        "API upload (token)": (f"/api/benchmarks/{benchmark.slug}/submissions/", {**token, "Content-Type": ctype},
                               body),
    }
    others = ["/accounts/login/", f"/b/{benchmark.slug}/", f"/api/benchmarks/{benchmark.slug}/leaderboard/"]
    try:
        for path, headers, data in must_503.values():
            assert _ask(base + path, headers=headers, data=None)[0] == 200, path
        connection.close()
        relay.stop()  # the database goes away
        outage_started = time.monotonic()
        answers = []
        for _ in range(5):
            for name, (path, headers, data) in must_503.items():
                code, hdrs, content = _ask(base + path, headers=headers, data=data)
                answers.append(code)
                assert code == 503, (name, code, content[:300])
                assert int(hdrs["Retry-After"]) > 0
                if path.startswith("/api/"):
                    assert hdrs["Content-Type"].startswith("application/json")
                    assert "database cannot be reached" in json.loads(content)["detail"]
                else:
                    assert hdrs["Content-Type"].startswith("text/html")
                    assert b"Unavailable for a moment" in content and b"database" in content
            for path in others:
                code, _, _ = _ask(base + path)
                answers.append(code)
                assert code in (200, 503), (path, code)  # a cached board may still answer; never a 500
        assert time.monotonic() - outage_started < 30  # refusals are quick, not timeouts
        relay.start()  # the database is back: the very next request of each kind is answered
        for name, (path, headers, data) in must_503.items():
            code, _, content = _ask(base + path, headers=headers, data=data)
            assert code == (202 if data else 200), (name, code, content[:300])
    finally:
        relay.stop()
        log = stop_worker(proc)
    assert answers.count(503) >= 20
    outage_lines = [line for line in log.splitlines() if "database unreachable, answering 503" in line]
    # One line per kind of failure (a refused connection, a connection cut mid-use) per minute, not one per answer.
    assert 1 <= len(outage_lines) <= 3, "\n".join(outage_lines)
    assert "Traceback" not in log and "Internal Server Error" not in log, log[-4000:]
