"""Fifty concurrent API posts against several server processes accept exactly five."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Submission
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.server import start_gunicorn, worker_pids
from tests.support.worker import stop_worker


def _multipart(data: bytes, filename: str) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: text/csv\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.django_db(transaction=True)
def test_quota_fifty_concurrent_http_posts_across_processes(mini_bundle, users):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    _, key = token_create(user=users["owner"])
    proc, base = start_gunicorn(workers=3, threads=8, env_overrides={"CELERY_TASK_ALWAYS_EAGER": "true"})
    try:
        assert len(worker_pids(proc)) == 3, "expected three server processes"
        body, ctype = _multipart(submission_csv(MINI_ROWS), "preds.csv")
        barrier = threading.Barrier(50)

        def post(_):
            req = urllib.request.Request(f"{base}/api/benchmarks/{benchmark.slug}/submissions/", data=body,
                                         method="POST", headers={"Authorization": f"Token {key}",
                                                                 "Content-Type": ctype})
            barrier.wait()
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    return resp.status, dict(resp.headers), json.loads(resp.read())
            except urllib.error.HTTPError as err:
                return err.code, dict(err.headers), json.loads(err.read())

        with ThreadPoolExecutor(max_workers=50) as pool:
            results = list(pool.map(post, range(50)))
    finally:
        log = stop_worker(proc)
    codes = [r[0] for r in results]
    assert codes.count(202) == 5, (codes, log[-3000:])
    assert codes.count(429) == 45, codes
    accepted = sorted(r[2]["remaining_today"] for r in results if r[0] == 202)
    assert accepted == [0, 1, 2, 3, 4]
    for code, headers, payload in results:
        if code == 429:
            assert int(headers["Retry-After"]) > 0
            assert "resets at" in payload["errors"][0]["message"]
            assert payload["remaining_today"] == 0
    assert Submission.objects.filter(user=users["owner"]).count() == 5
