"""`manage.py serve`, the command `make demo` runs: gunicorn, a worker and beat, watched; Ctrl-C stops all."""
from __future__ import annotations

import json
import os
import signal
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, submission_csv
from tests.core.test_quota_http import _multipart
from tests.support.serve import alive, start_serve
from tests.support.worker import purge_broker, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _post(url: str, key: str, body: bytes, ctype: str):
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Authorization": f"Token {key}", "Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def _statuses(user) -> list[str]:
    connection.close()  # read what the server's processes committed
    return list(Submission.objects.filter(user=user).order_by("id").values_list("status", flat=True))


def test_serve_fifty_concurrent_uploads_accept_exactly_five_and_ctrl_c_stops_all(mini_bundle, users):
    """The race of issue 12 against the demo's own server command: 5 accepted, 45 refused, none reset."""
    purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    _, key = token_create(user=users["owner"])
    serve = start_serve()
    try:
        assert "(gunicorn)" in serve.log()
        body, ctype = _multipart(submission_csv(MINI_ROWS), "preds.csv")
        url = f"{serve.base}/api/benchmarks/{benchmark.slug}/submissions/"
        barrier = threading.Barrier(50)

        def post(_):
            barrier.wait()
            try:
                return _post(url, key, body, ctype)
            except Exception as exc:  # a reset or refused connection is a failure of this test
                return type(exc).__name__, {}, {"error": str(exc)}

        with ThreadPoolExecutor(max_workers=50) as pool:
            results = list(pool.map(post, range(50)))
        codes = [r[0] for r in results]
        assert codes.count(202) == 5 and codes.count(429) == 45, (codes, serve.log()[-3000:])
        assert all(int(r[1]["Retry-After"]) > 0 for r in results if r[0] == 429)
        assert sorted(r[2]["remaining_today"] for r in results if r[0] == 202) == [0, 1, 2, 3, 4]
        # serve's own worker scores them.
        wait_for(lambda: _statuses(users["owner"]) == ["scored"] * 5, timeout=90,
                 message="serve's worker to score the five accepted uploads")
        children = serve.pids("web server") + serve.pids("scoring worker") + serve.pids("beat scheduler")
        assert len(children) == 3 and all(alive(pid) for pid in children)
    finally:
        code = serve.stop()
    log = serve.log()
    assert code == 0, log[-3000:]
    assert "serve: stopped" in log
    assert not any(alive(pid) for pid in children), log[-3000:]


def test_serve_restarts_a_dead_worker_and_beat_then_stops_when_the_worker_keeps_dying(mini_bundle, users):
    purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    _, key = token_create(user=users["owner"])
    serve = start_serve()
    try:
        first_worker = serve.pids("scoring worker")[0]
        os.kill(first_worker, signal.SIGKILL)
        wait_for(lambda: len(serve.pids("scoring worker")) == 2, timeout=15, message="serve to restart the worker")
        log = serve.log()
        assert f"the scoring worker (pid {first_worker}) was killed by SIGKILL" in log
        assert "Restarted it as pid" in log and "none is lost" in log

        # The new worker scores uploads.
        body, ctype = _multipart(submission_csv(MINI_ROWS), "preds.csv")
        code, _, payload = _post(f"{serve.base}/api/benchmarks/{benchmark.slug}/submissions/", key, body, ctype)
        assert code == 202, payload
        wait_for(lambda: _statuses(users["owner"]) == ["scored"], timeout=90,
                 message="the restarted worker to score an upload")

        first_beat = serve.pids("beat scheduler")[0]
        os.kill(first_beat, signal.SIGTERM)
        wait_for(lambda: len(serve.pids("beat scheduler")) == 2, timeout=15, message="serve to restart beat")
        assert f"the beat scheduler (periodic sweep) (pid {first_beat}) exited" in serve.log()

        # A worker that keeps dying: serve gives up loudly and stops the site rather than serve without one.
        for expected in (3, 4, 5):
            os.kill(serve.pids("scoring worker")[-1], signal.SIGKILL)
            if expected < 5:
                wait_for(lambda expected=expected: len(serve.pids("scoring worker")) == expected, timeout=15,
                         message=f"restart {expected - 1} of the worker")
        code = serve.proc.wait(timeout=60)
    finally:
        serve.stop()
    log = serve.log()
    assert code == 1, log[-3000:]
    assert "4 times within 60 s" in log and "must not take uploads that nothing would score" in log
    with pytest.raises(OSError):
        urllib.request.urlopen(serve.base + "/api/benchmarks/", timeout=5)
    assert not any(alive(pid) for pid in serve.pids("web server") + serve.pids("beat scheduler"))


def _beating(node_prefix: str, since_pids: set[int]) -> bool:
    from leaderboard.core.models import WorkerHeartbeat

    connection.close()
    return WorkerHeartbeat.objects.filter(hostname__startswith=node_prefix).exclude(pid__in=since_pids).exists()


def test_serve_restarts_a_worker_that_runs_but_makes_no_progress(mini_bundle, users):
    """Issue 19: a worker whose main process lives but scores nothing (a pool that never gets going,
    a consumer that hangs) is restarted by serve, and what waited is scored."""
    from leaderboard.core.models import WorkerHeartbeat

    purge_broker()
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    _, key = token_create(user=users["owner"])
    serve = start_serve({"WORKER_HEARTBEAT_SECONDS": "1", "WORKER_STALL_SECONDS": "12"})
    node = f"serve-{serve.proc.pid}@"
    body, ctype = _multipart(submission_csv(MINI_ROWS), "preds.csv")
    url = f"{serve.base}/api/benchmarks/{benchmark.slug}/submissions/"
    try:
        wait_for(lambda: _beating(node, set()), timeout=30, message="the worker's processes to beat")
        old_pids = set(WorkerHeartbeat.objects.filter(hostname__startswith=node).values_list("pid", flat=True))
        # 1. The main process hangs (it consumes nothing); its pool processes still beat.
        first = serve.pids("scoring worker")[-1]
        os.kill(first, signal.SIGSTOP)
        code, _, payload = _post(url, key, body, ctype)
        assert code == 202, payload
        wait_for(lambda: serve.pids("scoring worker")[-1] != first, timeout=90, message="serve to restart the worker")
        assert f"the scoring worker (pid {first}) makes no progress" in serve.log()
        # Its pool still beats, so it is found not consuming; on a loaded machine the pool's beats
        # can lapse past the limit too, and it is found silent (test_liveness.py checks each reason).
        assert "it does not consume" in serve.log() or "no heartbeat" in serve.log()
        wait_for(lambda: _statuses(users["owner"]) == ["scored"], timeout=90,
                 message="the new worker to score what waited")
        # 2. The whole worker hangs, pool included: no heartbeat at all.
        wait_for(lambda: _beating(node, old_pids), timeout=30, message="the new worker's processes to beat")
        second = serve.pids("scoring worker")[-1]
        os.killpg(second, signal.SIGSTOP)
        wait_for(lambda: serve.pids("scoring worker")[-1] != second, timeout=90, message="serve to restart it again")
        assert f"the scoring worker (pid {second}) makes no progress: no heartbeat" in serve.log()
        assert not alive(second)
        code, _, payload = _post(url, key, body, ctype)
        assert code == 202, payload
        wait_for(lambda: _statuses(users["owner"]) == ["scored", "scored"], timeout=90,
                 message="the third worker to score an upload")
    finally:
        code = serve.stop()
    assert code == 0, serve.log()[-3000:]


def test_serve_with_json_logs_writes_its_own_lines_as_json_too():
    """docs/operations.md: with LOG_FORMAT=json every line is one JSON object, and serve starts Celery
    quietly so that no banner breaks the stream. serve's own lines (which child started, a worker
    restarted) must not break it either: a log shipper parsing JSON would drop or choke on them."""
    serve = start_serve({"LOG_FORMAT": "json"})
    try:
        assert serve.pids("scoring worker")
    finally:
        serve.stop()
    lines = [line for line in serve.log().splitlines() if line.strip()]
    plain = [line for line in lines if line.startswith("serve:")]
    assert not plain, "\n".join(plain)
    messages = [json.loads(line) for line in lines if line.startswith("{")]
    started = [m for m in messages if "scoring worker started" in m["message"]]
    assert started and started[0]["level"] == "INFO"
    assert any("stopped" in m["message"] for m in messages if m["message"].startswith("serve:"))
