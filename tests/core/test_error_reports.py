"""Error reports (SENTRY_DSN): a real HTTP receiver on this machine stands in for the Sentry server, and
the real sentry-sdk in a live gunicorn and a real Celery worker posts its envelopes to it."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from leaderboard.core.models import Submission
from leaderboard.core.services.uploads import submission_create
from leaderboard.logconfig import request_id_var
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.server import start_gunicorn
from tests.support.worker import ROOT, purge_broker, start_worker, stop_worker, wait_for, worker_env


class Receiver:
    """Takes Sentry envelopes over HTTP (POST /api/<project>/envelope/) and keeps their events."""

    def __init__(self):
        self.events: list[dict] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                elif encoding == "br":
                    import brotli

                    body = brotli.decompress(body)
                receiver.paths.append(self.path)
                receiver.take(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def dsn(self) -> str:
        return f"http://publickey@127.0.0.1:{self.server.server_address[1]}/42"

    def take(self, envelope: bytes) -> None:
        lines = envelope.split(b"\n")
        i = 1  # the first line is the envelope's header
        while i + 1 < len(lines):
            item = json.loads(lines[i])
            length = item.get("length")
            if length is not None:  # a payload of a given length, which may hold newlines
                rest = b"\n".join(lines[i + 1:])
                payload, rest = rest[:length], rest[length + 1:]
                lines = lines[:i + 1] + rest.split(b"\n")
            else:
                payload = lines[i + 1]
            if item.get("type") == "event":
                self.events.append(json.loads(payload))
            i += 2

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _exception_types(event: dict) -> list[str]:
    return [v.get("type") for v in event.get("exception", {}).get("values", [])]


@pytest.mark.django_db(transaction=True)
def test_sentry_gets_a_request_error_with_its_request_id_and_no_personal_data(receiver):
    from tests.support.http import Session

    proc, base = start_gunicorn(workers=1, threads=2, env_overrides={
        "DJANGO_SETTINGS_MODULE": "tests.support.boom_settings", "DEBUG": "false", "SECRET_KEY": "s" * 60,
        "SENTRY_DSN": receiver.dsn, "SENTRY_ENVIRONMENT": "test"})
    try:
        session = Session(base)
        first = session.get("/api/boom/", headers={"Cookie": "sessionid=secret-cookie-value",
                                                   "Authorization": "Token secret-token-value",
                                                   "X-Forwarded-For": "198.51.100.23"})
        second = session.get("/boom/")
        wait_for(lambda: len(receiver.events) >= 2, timeout=30, message="two events at the receiver")
    finally:
        log = stop_worker(proc)
    assert first.status == 500 and second.status == 500
    assert receiver.paths[0] == "/api/42/envelope/"
    by_id = {e["tags"]["request_id"]: e for e in receiver.events}
    # Both reach Sentry whole, though the log shows the second one's traceback as a note (same cause).
    assert set(by_id) == {first.headers["X-Request-ID"], second.headers["X-Request-ID"]}, log[-2000:]
    event = by_id[first.headers["X-Request-ID"]]
    assert _exception_types(event) == ["BoomError"] and event["environment"] == "test"
    assert event["request"]["url"].endswith("/api/boom/")
    raw = json.dumps(receiver.events)
    for secret in ("secret-cookie-value", "secret-token-value", "198.51.100.23"):
        assert secret not in raw  # no cookies, credentials or client address without SENTRY_SEND_PII
    assert "ip_address" not in event.get("user", {})


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_sentry_gets_a_scoring_failure_from_the_worker_with_its_task_id(receiver, mini_benchmark, users):
    purge_broker()
    token = request_id_var.set("upload-request-0042")  # as if uploaded by a request with this id
    try:
        sub = submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                                filename="p.csv").submission
    finally:
        request_id_var.reset(token)
    # A stored payload the kind cannot read: the scoring raises, the service logs it and fails the submission.
    Submission.objects.filter(pk=sub.pk).update(payload={"broken": True})
    worker = start_worker({"SENTRY_DSN": receiver.dsn, "SCORING_MAX_ATTEMPTS": "1"})
    try:
        wait_for(lambda: receiver.events, timeout=60, message="an event from the worker")
    finally:
        log = stop_worker(worker)
    sub.refresh_from_db()
    assert sub.status == "failed", log[-3000:]
    event = receiver.events[0]
    assert event["logger"] == "leaderboard.submissions"
    assert event["logentry"]["message"] % tuple(event["logentry"].get("params", [])) == \
        f"scoring submission {sub.pk} failed"
    # The task's id, and the id of the request that uploaded it (the worker's log lines carry it too).
    assert len(event["tags"]["task_id"]) == 36 and event["tags"]["request_id"] == "upload-request-0042"
    assert _exception_types(event)  # with its traceback


def test_sentry_unset_imports_and_changes_nothing(tmp_path):
    env = worker_env({"DATA_DIR": str(tmp_path)})
    env.pop("SENTRY_DSN", None)
    code = ("import django, sys; django.setup(); import leaderboard.celery, leaderboard.wsgi; "
            "print('sentry_sdk' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert "SENTRY_DSN" not in os.environ
