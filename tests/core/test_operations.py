"""/healthz, /readyz and /metrics (INTERFACE "Operations"): their answers when all is well, with the
database down and with no worker; the metrics' values after real uploads and a round resolve; who may
read /metrics; HTTP answers counted across gunicorn's processes; repeated tracebacks thinned in the log."""
from __future__ import annotations

import datetime as dt
import json
import logging
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from leaderboard.core.models import Submission, WorkerHeartbeat
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from leaderboard.core.services.uploads import submission_create
from leaderboard.logconfig import JsonFormatter, PlainFormatter, RepeatedTracebackFilter
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.server import free_port, start_gunicorn
from tests.support.signals import SignalsRound, signals_benchmark
from tests.support.tcpproxy import silent_server
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_for, wait_until_ready

LOOPBACK = {"REMOTE_ADDR": "127.0.0.1"}


def samples(text: str) -> dict[tuple, float]:
    """{(sample name, frozenset of labels): value} read with prometheus-client's own parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(parsed: dict, name: str, **labels) -> float | None:
    return parsed.get((name, frozenset(labels.items())))


def scrape(client) -> dict:
    resp = client.get("/metrics", **LOOPBACK)
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(resp.content.decode())


def get(url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


# -- /healthz ---------------------------------------------------------------------------------
def test_healthz_answers_any_host_over_plain_http_and_touches_nothing(client, settings):
    # No database fixture: a query would raise here.
    settings.ALLOWED_HOSTS = ["leaderboard.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    resp = client.get("/healthz", HTTP_HOST="web:8000")
    assert resp.status_code == 200 and resp.json() == {"status": "ok"}
    assert client.get("/", HTTP_HOST="web:8000").status_code == 400  # the host check still guards the site
    assert client.post("/healthz").status_code == 405


# -- /readyz ------------------------------------------------------------------------------------
def _beat(age_seconds: float) -> None:
    now = timezone.now()
    WorkerHeartbeat.objects.update_or_create(name="celery@test/1", defaults={
        "hostname": "celery@test", "pid": 1, "started_at": now - dt.timedelta(hours=1),
        "beat_at": now - dt.timedelta(seconds=age_seconds)})


def test_readyz_without_a_worker_heartbeat_is_503_and_names_the_worker(client, db, settings):
    resp = client.get("/readyz")
    assert resp.status_code == 503 and resp["Retry-After"]
    body = resp.json()
    assert body["status"] == "fail"
    checks = body["checks"]
    assert set(checks) == {"database", "cache", "broker", "worker"}
    assert checks["database"]["ok"] and checks["cache"]["ok"] and checks["broker"]["ok"]
    assert checks["broker"]["depth"]["scoring"] >= 0
    assert checks["worker"] == {"ok": False, "heartbeat_age_seconds": None,
                                "error": "no worker has ever written a heartbeat"}
    assert body["oldest_queued_seconds"] == 0.0
    # Any Host, plain HTTP: a probe is answered, neither refused for its host nor redirected.
    settings.ALLOWED_HOSTS = ["leaderboard.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/readyz", HTTP_HOST="10.0.0.7:8000").status_code == 503

    _beat(125)  # a worker that stopped beating two minutes ago
    worker = client.get("/readyz").json()["checks"]["worker"]
    assert not worker["ok"] and worker["heartbeat_age_seconds"] >= 125
    assert "s old (limit 60 s)" in worker["error"]

    _beat(3)
    resp = client.get("/readyz")
    assert resp.status_code == 200 and resp.json()["status"] == "ok"
    assert resp.json()["checks"]["worker"]["ok"]


@pytest.mark.django_db(transaction=True)
def test_readyz_with_the_database_down_is_503_while_healthz_still_answers():
    dead = f"postgres://nobody@127.0.0.1:{free_port()}/nothing"  # nothing listens there
    proc, base = start_gunicorn(workers=1, threads=2, env_overrides={"DATABASE_URL": dead}, ready_path="/healthz")
    try:
        status, headers, body = get(base + "/readyz")
        health_status, _, health = get(base + "/healthz")
        metrics_status, _, metrics = get(base + "/metrics")
    finally:
        log = stop_worker(proc)
    assert status == 503, log[-2000:]
    ready = json.loads(body)
    assert ready["status"] == "fail" and headers["Retry-After"]
    assert not ready["checks"]["database"]["ok"]
    assert ready["checks"]["database"]["error"].startswith("OperationalError")
    assert not ready["checks"]["worker"]["ok"] and "database" in ready["checks"]["worker"]["error"]
    assert ready["checks"]["cache"]["ok"] and ready["checks"]["broker"]["ok"]
    assert ready["oldest_queued_seconds"] is None
    assert (health_status, json.loads(health)) == (200, {"status": "ok"})
    parsed = samples(metrics.decode())
    assert metrics_status == 200
    assert value(parsed, "leaderboard_check_ok", check="database") == 0.0
    assert value(parsed, "leaderboard_check_ok", check="broker") == 1.0
    assert "Service Unavailable: /readyz" not in log  # an unready answer is not logged as a server error


def _timed(call):
    """``(call(), the seconds it took)``."""
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


@pytest.mark.django_db(transaction=True)
def test_a_database_that_accepts_connections_but_never_answers_gives_503_within_seconds():
    """A PostgreSQL that takes the TCP connection and then says nothing (a hung or overloaded server,
    a half-open network path): /readyz and the pages answer 503 within seconds, as documented, rather
    than hold a gunicorn thread for as long as the operating system keeps the connection."""
    with silent_server() as port:
        url = f"postgres://nobody@127.0.0.1:{port}/nothing"
        proc, base = start_gunicorn(workers=1, threads=4, env_overrides={"DATABASE_URL": url}, ready_path="/healthz")
        try:
            (status, headers, body), readyz_seconds = _timed(lambda: get(base + "/readyz"))
            (page_status, page_headers, _), page_seconds = _timed(lambda: get(base + "/api/benchmarks/"))
        finally:
            log = stop_worker(proc)
    assert status == 503, log[-2000:]
    assert not json.loads(body)["checks"]["database"]["ok"]
    assert readyz_seconds < 15, readyz_seconds
    assert page_status == 503 and page_headers["Retry-After"] == "10"
    assert page_seconds < 15, page_seconds


@pytest.mark.django_db(transaction=True)
def test_a_redis_that_accepts_connections_but_never_answers_still_takes_uploads(mini_benchmark, users):
    """docs/operations.md, "Redis down": uploads are still accepted (202) and wait in the outbox, and /readyz
    answers within seconds. A Redis that takes the connection and then says nothing (stuck, or a
    half-open network path) must not hold the upload, or the probe, for ever."""
    from leaderboard.core.api.auth import token_create

    with silent_server() as port:
        _, key = token_create(user=users["owner"])
        redis_url = f"redis://127.0.0.1:{port}/0"
        proc, base = start_gunicorn(workers=1, threads=4, env_overrides={"REDIS_URL": redis_url}, ready_path="/healthz")
        boundary = "auditboundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.csv\"\r\n"
                f"Content-Type: text/csv\r\n\r\n").encode() + submission_csv(MINI_ROWS) + f"\r\n--{boundary}--\r\n".encode()
        upload = urllib.request.Request(
            base + f"/api/benchmarks/{mini_benchmark.slug}/submissions/", data=body, method="POST",
            headers={"Authorization": f"Token {key}", "Content-Type": f"multipart/form-data; boundary={boundary}"})

        def send() -> int:
            try:
                with urllib.request.urlopen(upload, timeout=30) as resp:
                    return resp.status
            except urllib.error.HTTPError as err:
                return err.code

        try:
            upload_status, upload_seconds = _timed(send)
            (status, _, body_ready), readyz_seconds = _timed(lambda: get(base + "/readyz"))
        finally:
            log = stop_worker(proc)
    assert upload_status == 202, log[-2000:]
    assert upload_seconds < 15, upload_seconds
    connection.close()
    assert Submission.objects.get(user=users["owner"]).status == "queued"  # in the outbox
    assert status == 503 and not json.loads(body_ready)["checks"]["broker"]["ok"]
    assert readyz_seconds < 15, readyz_seconds


# -- who may read /metrics ------------------------------------------------------------------------
def test_metrics_open_from_loopback_and_with_debug_else_only_with_the_token(client, db, settings):
    settings.DEBUG = False
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", **LOOPBACK).status_code == 200
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 403 and b"METRICS_TOKEN" in refused.content
    # Through a proxy on this machine: the connection is from 127.0.0.1 but the client is not.
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 403

    settings.METRICS_TOKEN = "s3cret-token-for-prometheus"
    missing = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert missing.status_code == 401 and missing["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9",
                      HTTP_AUTHORIZATION="Token s3cret-token-for-prometheus").status_code == 401
    ok = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-token-for-prometheus")
    assert ok.status_code == 200 and b"leaderboard_queue_depth" in ok.content

    settings.METRICS_TOKEN = ""
    settings.DEBUG = True
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 200


def test_metrics_name_every_series_the_interface_promises(client, db):
    parsed = scrape(client)
    text = client.get("/metrics", **LOOPBACK).content.decode()
    for family in ("leaderboard_submissions_total", "leaderboard_queue_depth", "leaderboard_scoring_seconds",
                   "leaderboard_round_scoring_seconds", "leaderboard_worker_heartbeat_age_seconds"):
        assert f"# TYPE {family} " in text, family
    assert "# TYPE leaderboard_scoring_seconds histogram" in text
    assert "# TYPE leaderboard_round_scoring_seconds histogram" in text
    assert value(parsed, "leaderboard_worker_heartbeat_age_seconds") == float("inf")  # no worker ever beat


# -- the values, after real work ---------------------------------------------------------------
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_metrics_and_readyz_after_real_uploads_scored_by_a_real_worker(client, api_for, mini_benchmark):
    purge_broker()
    api = api_for("owner")
    url = f"/api/benchmarks/{mini_benchmark.slug}/submissions/"
    worker = start_worker()
    try:
        wait_until_ready(worker)
        ids = []
        for _ in range(3):
            resp = api.post(url, {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS))}, format="multipart")
            assert resp.status_code == 202
            ids.append(resp.json()["id"])

        def all_scored():
            connection.close()
            return Submission.objects.filter(pk__in=ids, status="scored").count() == 3

        wait_for(all_scored, timeout=60, message="the worker to score three uploads")
        ready = client.get("/readyz")
        parsed = scrape(client)
    finally:
        log = stop_worker(worker)
    assert ready.status_code == 200, (ready.json(), log[-2000:])
    assert ready.json()["checks"]["worker"]["heartbeat_age_seconds"] < 60
    for status in ("queued", "scoring", "scored"):
        assert value(parsed, "leaderboard_submissions_total", status=status) == 3, status
    assert value(parsed, "leaderboard_submissions_total", status="failed") == 0
    assert value(parsed, "leaderboard_scoring_seconds_count", kind="properties") == 3
    assert 0 < value(parsed, "leaderboard_scoring_seconds_sum", kind="properties") < 60
    assert value(parsed, "leaderboard_scoring_seconds_bucket", kind="properties", le="+Inf") == 3
    assert value(parsed, "leaderboard_queue_depth", queue="scoring") == 0
    assert 0 <= value(parsed, "leaderboard_worker_heartbeat_age_seconds") < 60
    assert value(parsed, "leaderboard_check_ok", check="worker") == 1

    # The worker is gone: two more uploads wait in the broker, and the metrics say so.
    try:
        for _ in range(2):
            assert api.post(url, {"file": SimpleUploadedFile("p.csv", submission_csv(MINI_ROWS))},
                            format="multipart").status_code == 202
        parsed = scrape(client)
        waited = client.get("/readyz").json()["oldest_queued_seconds"]
    finally:
        purge_broker()
    assert value(parsed, "leaderboard_queue_depth", queue="scoring") == 2
    assert value(parsed, "leaderboard_submissions_total", status="queued") == 5
    assert value(parsed, "leaderboard_oldest_queued_seconds") >= 0 and waited >= 0


def test_metrics_after_a_round_resolves(client, tmp_path, users):
    bench = signals_benchmark(tmp_path)
    gen = SignalsRound(200, seed=3)
    round_ = round_open(benchmark=bench, data=gen.universe_csv(), filename="u.csv")
    for i, name in enumerate(("owner", "member", "outsider")):
        submission_create(user=users[name], benchmark=bench, data=gen.submission_csv(gen.predictions(0.5, i)),
                          filename="p.csv")
    round_close(round_=round_)
    before = scrape(client)
    assert value(before, "leaderboard_round_scoring_seconds_count", kind="signals") is None
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(2.0, 7)), filename="t1.csv", final=False,
                     as_of=dt.date(2026, 1, 5))
    assert round_version_score(round_id=round_.pk, version=1) == "scored"
    round_truth_load(round_=round_, data=gen.truth_csv(gen.target(1.0, 8)), filename="t2.csv", final=True)
    assert round_version_score(round_id=round_.pk, version=2) == "scored"
    parsed = scrape(client)
    assert value(parsed, "leaderboard_round_scoring_seconds_count", kind="signals") == 2  # interim and final
    assert value(parsed, "leaderboard_round_scoring_seconds_bucket", kind="signals", le="+Inf") == 2
    assert value(parsed, "leaderboard_round_scoring_seconds_sum", kind="signals") > 0
    # Uploads are accepted into the round; the final truth scores all three with the whole round.
    assert value(parsed, "leaderboard_submissions_total", status="accepted") == 3
    assert value(parsed, "leaderboard_submissions_total", status="scored") == 3
    assert value(parsed, "leaderboard_scoring_seconds_count", kind="signals") is None  # never one by one


def test_metrics_submission_counts_never_go_down_when_submissions_are_deleted(
        client, mini_benchmark, users, django_capture_on_commit_callbacks):
    def upload():
        with django_capture_on_commit_callbacks(execute=True):  # scored inline (eager) once stored
            submission_create(user=users["owner"], benchmark=mini_benchmark, data=submission_csv(MINI_ROWS),
                              filename="p.csv")

    upload()
    upload()
    assert value(scrape(client), "leaderboard_submissions_total", status="scored") == 2
    Submission.objects.filter(benchmark=mini_benchmark).first().delete()  # its events go with it
    assert value(scrape(client), "leaderboard_submissions_total", status="scored") == 2  # a drop reads as a reset
    upload()
    assert value(scrape(client), "leaderboard_submissions_total", status="scored") == 2  # 1 left + 1 new
    upload()
    assert value(scrape(client), "leaderboard_submissions_total", status="scored") == 3


# -- HTTP answers across gunicorn's processes, and the log -------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_metrics_count_server_errors_of_every_gunicorn_process_and_the_log_thins_repeated_tracebacks(db):
    proc, base = start_gunicorn(workers=2, threads=2, env_overrides={
        "DJANGO_SETTINGS_MODULE": "tests.support.boom_settings", "DEBUG": "false", "SECRET_KEY": "s" * 60})
    try:
        ids = []
        for _ in range(12):
            status, headers, _ = get(base + "/api/boom/")
            assert status == 500
            ids.append(headers["X-Request-ID"])
        # Several scrapes, answered by either process: each adds up both processes' counts.
        counts = {samples(get(base + "/metrics")[2].decode())[("leaderboard_http_responses_total",
                                                                   frozenset({("status", "5xx")}))]
                  for _ in range(6)}
    finally:
        log = stop_worker(proc)
    assert counts == {12.0}, log[-2000:]
    # One full traceback per cause and process (two processes here); the repeats keep a line with their id.
    assert log.count("Traceback (most recent call last)") <= 2
    assert log.count("its traceback was logged at") >= 10
    assert all(request_id in log for request_id in ids)


def _record(created: float, *, line: int = 1) -> logging.LogRecord:
    try:
        exec(compile("\n" * (line - 1) + "raise ValueError('bad')", "worker.py", "exec"))
    except ValueError:
        record = logging.getLogger("leaderboard.x").makeRecord("leaderboard.x", logging.ERROR, __file__, 1,
                                                                "failed", (), exc_info=sys.exc_info())
    record.created = created
    return record


def test_repeated_tracebacks_are_shown_once_per_window_and_counted():
    thin = RepeatedTracebackFilter(window=60, max_lines=3)
    plain, as_json = PlainFormatter("%(message)s"), JsonFormatter()
    shown = [r for r in (_record(1000 + i) for i in range(6)) if thin.filter(r)]
    assert len(shown) == 4  # the first in full, three short lines, two dropped
    assert "Traceback" in plain.format(shown[0])
    note = "ValueError at worker.py:1; its traceback was logged at 00:16:40 UTC and is shown once per 60 s"
    assert plain.format(shown[1]) == f"failed [{note}]"
    assert json.loads(as_json.format(shown[2]))["traceback_omitted"] == note
    assert "traceback" not in json.loads(as_json.format(shown[3]))
    assert shown[1].exc_info is not None  # the record itself keeps its exception (for Sentry)
    # Another cause (another line) is shown in full at once; the first cause again after the window.
    other = _record(1010, line=5)
    assert thin.filter(other) and "Traceback" in plain.format(other)
    later = _record(1061)
    assert thin.filter(later)
    text = plain.format(later)
    assert "Traceback" in text and "this traceback repeated 5 times in the 60 s after the last one shown" in text
    assert json.loads(as_json.format(later))["traceback_repeats"].startswith("this traceback repeated 5 times")


@pytest.mark.django_db
def test_metrics_http_series_leave_out_the_probes_so_an_unready_readyz_is_no_server_error(client, mini_benchmark):
    """With no worker, /readyz answers 503 to a load balancer every few seconds. Counted as a 5xx answer it
    paged LeaderboardServerErrors on a quiet site ("find them in django.request ERROR lines": there are
    none, that 503 is deliberately not logged) beside LeaderboardNoWorker, which says what is wrong."""
    from leaderboard.core.metrics import PROBE_PATHS
    from leaderboard.core.probes import PROBES

    assert set(PROBES) == PROBE_PATHS
    before = scrape(client)
    for _ in range(5):
        assert client.get("/readyz").status_code == 503  # no worker has ever beaten in this test
        assert client.get("/healthz/").status_code == 200
    assert client.get("/b/mini-props/").status_code == 200  # a user's page is still counted
    after = scrape(client)
    for status in ("2xx", "5xx"):
        was = value(before, "leaderboard_http_responses_total", status=status) or 0.0
        now = value(after, "leaderboard_http_responses_total", status=status) or 0.0
        assert now - was == (1.0 if status == "2xx" else 0.0), (status, was, now)
