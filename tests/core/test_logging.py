"""Logging (issue 14, point 8): every unhandled exception logged with its traceback and a request id.

Before, with DEBUG off only the `leaderboard` logger had a handler: none of 47
server errors left a traceback anywhere. Now every process logs through one
configuration; each request has an id, returned in X-Request-ID and written on
each of its log lines; LOG_FORMAT=json gives one JSON object per line.
"""
from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboard.logconfig import JsonFormatter, RequestIdFilter, request_id_var
from tests.support.http import Session
from tests.support.server import start_gunicorn
from tests.support.worker import stop_worker

ROOT = Path(__file__).resolve().parents[2]


def test_logging_every_response_carries_a_request_id(client, db):
    first = client.get("/api/benchmarks/")["X-Request-ID"]
    second = client.get("/")["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", first) and re.fullmatch(r"[0-9a-f]{32}", second) and first != second
    # The proxy's id (nginx's $request_id) is kept; anything unsafe is replaced.
    assert client.get("/", HTTP_X_REQUEST_ID="a1b2c3d4e5f60718")["X-Request-ID"] == "a1b2c3d4e5f60718"
    assert client.get("/", HTTP_X_REQUEST_ID="bad id\nwith newline")["X-Request-ID"] != "bad id\nwith newline"


@pytest.fixture
def boom_client(client, settings):
    settings.ROOT_URLCONF = "tests.support.boom_urls"
    settings.DEBUG = False
    client.raise_request_exception = False
    return client


@pytest.fixture
def request_log():
    """Records of django.request, as its configured handler sees them (it does not propagate to the root)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            RequestIdFilter().filter(record)
            records.append(record)

    handler = Keep()
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def test_logging_unhandled_exception_in_the_api_is_logged_with_traceback_and_id(boom_client, request_log, db):
    resp = boom_client.get("/api/boom/")
    assert resp.status_code == 500
    request_id = resp["X-Request-ID"]
    body = resp.json()
    assert body["request_id"] == request_id and request_id in body["detail"]
    errors = [r for r in request_log if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].request_id == request_id
    assert errors[0].exc_info and errors[0].exc_info[0].__name__ == "BoomError"


def test_logging_unhandled_exception_on_a_page_shows_the_request_id(boom_client, request_log, db):
    resp = boom_client.get("/boom/")
    assert resp.status_code == 500 and resp["Content-Type"].startswith("text/html")
    assert resp["X-Request-ID"] in resp.content.decode()
    assert [r.request_id for r in request_log if r.levelno == logging.ERROR] == [resp["X-Request-ID"]]


def test_logging_json_formatter_writes_one_object_with_the_traceback():
    token = request_id_var.set("rid-123456")
    try:
        try:
            raise ValueError("bad")
        except ValueError:
            record = logging.getLogger("x").makeRecord("x", logging.ERROR, __file__, 1, "failed %s", ("here",),
                                                       exc_info=__import__("sys").exc_info())
        RequestIdFilter().filter(record)
        line = JsonFormatter().format(record)
    finally:
        request_id_var.reset(token)
    assert "\n" not in line
    data = json.loads(line)
    assert data["message"] == "failed here" and data["level"] == "ERROR" and data["request_id"] == "rid-123456"
    assert data["exc_type"] == "ValueError" and "Traceback" in data["traceback"]


@pytest.mark.django_db(transaction=True)
def test_logging_live_server_with_debug_off_writes_json_lines_with_traceback_and_id(db):
    proc, base = start_gunicorn(workers=1, threads=4, env_overrides={
        "DJANGO_SETTINGS_MODULE": "tests.support.boom_settings", "LOG_FORMAT": "json", "DEBUG": "false",
        "SECRET_KEY": "s" * 60})
    try:
        resp = Session(base).get("/api/boom/")
        page = Session(base).get("/boom/")
        ok = Session(base).get("/api/benchmarks/")
    finally:
        log = stop_worker(proc)
    assert resp.status == 500 and page.status == 500 and ok.status == 200
    request_id = resp.headers["X-Request-ID"]
    assert resp.json()["request_id"] == request_id
    lines = [line for line in log.splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    errors = [r for r in records if r["logger"] == "django.request" and r["level"] == "ERROR"]
    assert {r["request_id"] for r in errors} == {request_id, page.headers["X-Request-ID"]}
    assert all(error["status"] == 500 and error["exc_type"] == "BoomError" for error in errors)
    # The same cause twice: its traceback once, then a note pointing at it (RepeatedTracebackFilter).
    assert "BoomError: boom, for the logging test" in errors[0]["traceback"]
    assert "traceback" not in errors[1] and errors[1]["traceback_omitted"].startswith("BoomError at boom_urls.py:")
    access = [r for r in records if r["logger"] == "gunicorn.access"]
    assert any(f"rid={request_id}" in r["message"] and '" 500 ' in r["message"] for r in access)
    assert any(f"rid={ok.headers['X-Request-ID']}" in r["message"] for r in access)


@pytest.mark.django_db(transaction=True)
def test_web_access_log_false_writes_no_access_line_and_every_other_line(db):
    """``WEB_ACCESS_LOG=false``: no access line per request (a proxy in front logs them), while
    gunicorn's own lines still come."""
    proc, base = start_gunicorn(workers=1, threads=2, env_overrides={"WEB_ACCESS_LOG": "false", "LOG_FORMAT": "json"})
    try:
        ok = Session(base).get("/api/benchmarks/")
    finally:
        log = stop_worker(proc)
    assert ok.status == 200
    records = [json.loads(line) for line in log.splitlines() if line.strip()]
    assert any(r["logger"].startswith("gunicorn.error") for r in records), records
    assert not [r for r in records if r["logger"] == "gunicorn.access"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_logging_routine_periodic_jobs_write_no_line_when_they_find_nothing(db):
    # Every periodic job (the sweeps, the round closer, the notifications sweep) runs every few seconds;
    # with nothing to do, none of them may write Celery's "Sending due task" / "received" / "succeeded"
    # lines, or an idle site writes a dozen lines a minute that bury everything else.
    import time

    from tests.support.worker import purge_broker, start_worker, wait_until_ready

    purge_broker()
    worker = start_worker({"SWEEP_INTERVAL_SECONDS": "0.5", "ROUND_CLOSE_INTERVAL_SECONDS": "0.5"}, beat=True,
                          queues="scoring,notifications")
    try:
        wait_until_ready(worker)
        time.sleep(4)  # eight runs of every job
    finally:
        log = stop_worker(worker)
    assert "beat: Starting" in log
    lines = [line for line in log.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", line)]  # not the banner's task list
    for job in ("sweep-stuck-submissions", "sweep_stuck_submissions", "sweep-round-versions", "close-due-rounds",
                "sweep-notifications", "notifications.sweep"):
        assert not [line for line in lines if job in line], f"{job} logged:\n" + "\n".join(
            line for line in lines if job in line)[:2000]


def test_a_log_level_that_does_not_exist_is_refused_naming_the_setting():
    # Logging's own "Unable to configure logger 'leaderboard'" named neither the variable nor the levels.
    env = {**os.environ, "LOG_LEVEL": "verbose", "DJANGO_SETTINGS_MODULE": "leaderboard.settings"}
    run = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True,
                         text=True, timeout=60, cwd=ROOT)
    assert run.returncode != 0
    assert "LOG_LEVEL='verbose' is not one of debug, info, warning, error, critical" in run.stderr
    env["LOG_LEVEL"] = "Warning"  # any case, as before
    assert subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env, timeout=60,
                          cwd=ROOT).returncode == 0
