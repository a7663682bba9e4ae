"""Redis unreachable: pages, reads and the login form keep working; uploads wait in the outbox (issue 14, point 2).

The live site (`manage.py serve`: gunicorn, worker, beat) is started with
REDIS_URL pointing at a closed port. Nothing may answer 500; uploads through
the API and the form are stored (202 / redirect) and never lost. Then a Redis
server of this test's own starts on that port: the worker and beat reconnect
and the sweep hands the waiting uploads to the broker; they must be scored
within a minute. (The shared Redis other tests use is never touched.)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
from django.db import connection

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.http import Session, live_password, multipart
from tests.support.serve import start_serve
from tests.support.server import free_port
from tests.support.worker import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-owner-123"


def _redis_server() -> str:
    path = shutil.which("redis-server")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is not installed; CI=true, so the Redis-down test must run", pytrace=False)
        pytest.skip("redis-server is not installed")
    return path


def _rows(user):
    connection.close()
    return list(Submission.objects.filter(user=user).order_by("id").values_list("status", "enqueued_at"))


def test_redis_down_site_degrades_then_drains_the_outbox_when_redis_returns(mini_bundle, users, tmp_path):
    redis_server = _redis_server()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    _, key = token_create(user=users["owner"])
    live_password(users["owner"], PASSWORD)
    port = free_port()  # nothing listens here until the test starts its own Redis
    serve = start_serve({
        "REDIS_URL": f"redis://127.0.0.1:{port}/0", "DEBUG": "false", "SECRET_KEY": "t" * 60,
        "SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false",
    })
    redis = None
    try:
        anonymous = Session(serve.base)
        for path in ("/", f"/b/{benchmark.slug}/", f"/b/{benchmark.slug}/cases/", "/accounts/login/",
                     "/accounts/signup/", "/api/benchmarks/", f"/api/benchmarks/{benchmark.slug}/",
                     f"/api/benchmarks/{benchmark.slug}/leaderboard/", "/api/schema/"):
            resp = anonymous.get(path)
            assert resp.status == 200, (path, resp.status, resp.text[:300])

        # The login form works (its throttle falls back to the process's memory).
        browser = Session(serve.base)
        resp = browser.post_form("/accounts/login/", {"username": "owner", "password": PASSWORD})
        assert resp.status == 302, resp.text[:500]
        assert browser.get("/submissions/").status == 200

        # An upload through the API: stored, answered 202, waiting in the outbox.
        api = Session(serve.base, token=key)
        body, ctype = multipart({}, {"file": ("p.csv", submission_csv(MINI_ROWS))})
        resp = api.request("POST", f"/api/benchmarks/{benchmark.slug}/submissions/", data=body, content_type=ctype)
        assert resp.status == 202 and resp.json()["status"] == "queued", resp.text[:500]
        # And one through the browser's form.
        resp = browser.post_form(f"/b/{benchmark.slug}/submit/", {}, files={"file": ("q.csv", submission_csv(MINI_ROWS))})
        assert resp.status == 302, resp.text[:500]
        assert _rows(users["owner"]) == [("queued", None), ("queued", None)]
        assert api.get(f"/api/benchmarks/{benchmark.slug}/submissions/").status == 200

        time.sleep(2)  # let the log lines land
        log = serve.log()
        assert "Redis cache unreachable" in log
        assert "waits in the outbox" in log
        assert " 500 " not in log and "Internal Server Error" not in log, log[-3000:]

        # Redis comes back: nothing else is done, the waiting uploads are scored within a minute.
        redis = subprocess.Popen([redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", str(tmp_path)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        back_at = time.monotonic()
        wait_for(lambda: [s for s, _ in _rows(users["owner"])] == ["scored", "scored"], timeout=60, interval=0.5,
                 message="the outbox to drain and both uploads to be scored after Redis came back")
        print(f"Redis back -> both waiting uploads scored in {time.monotonic() - back_at:.1f} s")
        assert all(enqueued is not None for _, enqueued in _rows(users["owner"]))
    finally:
        code = serve.stop()
        if redis is not None:
            redis.terminate()
            redis.wait(timeout=10)
    assert code == 0, serve.log()[-3000:]
