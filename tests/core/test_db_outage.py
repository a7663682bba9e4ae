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
from django.http import HttpResponse
from django.test import Client

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.core.test_quota_http import _multipart
from tests.support.openapi import check_api_response
from tests.support.server import start_gunicorn
from tests.support.tcpproxy import TcpRelay
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_for, wait_until_ready

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


def _relayed_database() -> tuple[TcpRelay, str]:
    """A relay to the test database and the DATABASE_URL that goes through it."""
    db = connection.settings_dict
    relay = TcpRelay((db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)))
    relay.start()
    return relay, f"postgres://{db.get('USER') or 'postgres'}@127.0.0.1:{relay.port}/{db['NAME']}"


def test_db_outage_answers_503_with_retry_after_logs_once_and_recovers_at_once(mini_bundle, users):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    _, key = token_create(user=users["owner"])
    browser = Client()
    browser.force_login(users["member"])
    session = browser.cookies["sessionid"].value
    relay, url = _relayed_database()
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
        for path, headers, _data in must_503.values():
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
                    # The OpenAPI schema declares it: status, media type and error body.
                    check_api_response("POST" if data else "GET", path,
                                       HttpResponse(content, status=code, content_type=hdrs["Content-Type"]))
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


@pytest.mark.worker
def test_db_outage_worker_retries_scoring_and_scores_once_the_database_returns(mini_bundle, users):
    """The worker (with beat) loses the database: an upload's scoring is tried again every 10 s, the
    periodic jobs wait, one log line per kind of failure, no traceback; scored once the database is back."""
    purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    relay, url = _relayed_database()
    worker = start_worker({"DATABASE_URL": url, "SWEEP_INTERVAL_SECONDS": "2"}, beat=True)
    try:
        wait_until_ready(worker)
        relay.stop()  # the database goes away for the worker; this test still reaches it directly
        sub = submission_create(user=users["owner"], benchmark=benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
        log = lambda: open(worker.log_path).read()  # noqa: E731
        wait_for(lambda: log().count("Retry in 10s") >= 2, timeout=60, message="two retries of the scoring task")
        connection.close()
        assert Submission.objects.get(pk=sub.pk).status == "queued"
        relay.start()  # back
        wait_for(lambda: (connection.close() or Submission.objects.get(pk=sub.pk).status) == "scored", timeout=30,
                 message="the upload to be scored after the database returned")
    finally:
        text = stop_worker(worker)  # first: the writes that follow a scoring are not the outage this test makes
        relay.stop()
    outage = [line for line in text.splitlines() if "database unreachable" in line or "heartbeat not" in line]
    print("\n".join(outage))
    assert any("scoring tasks retried 10 s later" in line for line in outage), text[-3000:]
    assert any("periodic jobs skipped until their next run" in line for line in outage), text[-3000:]
    assert len(outage) <= 5, "\n".join(outage)  # one per kind of failure, not one per task or sweep
    assert "Traceback" not in text, text[-4000:]


def test_db_outage_while_recording_a_scoring_time_is_one_line_without_traceback(caplog):
    """The worker's last write after scoring (the timing histogram) meets an unreachable database:
    one warning saying so, no traceback, and the scoring it followed is not failed."""
    from leaderboard.core import outage
    from leaderboard.core.services.timings import timing_record

    relay, _ = _relayed_database()
    port = connection.settings_dict["PORT"]
    outage._last_logged.clear()
    try:
        connection.close()
        connection.settings_dict["PORT"] = relay.port
        relay.stop()
        with caplog.at_level("WARNING"):
            timing_record(metric="scoring", kind="properties", seconds=0.2)
            timing_record(metric="scoring", kind="properties", seconds=0.3)
    finally:
        connection.close()
        connection.settings_dict["PORT"] = port
        relay.stop()
    lines = [r for r in caplog.records if r.name.startswith("leaderboard.")]
    assert len(lines) == 1, [r.getMessage() for r in lines]  # the second failure is counted, not logged
    assert "database unreachable, a scoring time not recorded" in lines[0].getMessage()
    assert lines[0].exc_info is None


def _last_statement(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def test_the_health_check_asks_the_server_only_when_the_connection_has_something_waiting():
    """A kept connection whose socket is quiet is taken as it is (no ``SELECT 1``: that was one round
    trip of a signed-in page's two); one the server terminated is replaced before the request's query."""
    from django.db import connections

    kept = connections.create_connection("default")
    try:
        kept.ensure_connection()
        pid = kept.connection.info.backend_pid
        with kept.cursor() as cursor:
            cursor.execute("SELECT 'the request before'")
        kept.health_check_done = False  # a new request
        kept.close_if_health_check_failed()
        assert kept.connection is not None and _last_statement(pid) == "SELECT 'the request before'"

        with connection.cursor() as cursor:  # the server ends it between two requests
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        wait_for(lambda: _last_statement_gone(pid), timeout=10, message="the backend to end")
        kept.health_check_done = False
        kept.close_if_health_check_failed()
        assert kept.connection is None  # closed, so the request's first query opens a new one
        with kept.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            assert cursor.fetchone()[0] != pid
    finally:
        kept.close()


def _last_statement_gone(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0] == 0


def test_a_kept_connection_cut_while_idle_is_replaced_before_the_next_request_uses_it():
    """gunicorn keeps its connection between requests; the database restarts while nobody asks (the
    relay cuts the connection and takes new ones at once): the next request is answered, not a 503."""
    relay, url = _relayed_database()
    proc, base = start_gunicorn(workers=1, threads=1, env_overrides={
        "DATABASE_URL": url, "DEBUG": "false", "SECRET_KEY": "outage-test-" + "x" * 40, "ALLOWED_HOSTS": "127.0.0.1"})
    try:
        assert _ask(base + "/api/benchmarks/")[0] == 200
        relay.stop()
        relay.start()
        for _ in range(3):
            code, _, content = _ask(base + "/api/benchmarks/")
            assert code == 200, content[:300]
    finally:
        relay.stop()
        log = stop_worker(proc)
    assert "database unreachable" not in log, log[-3000:]
