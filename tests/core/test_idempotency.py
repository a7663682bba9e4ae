"""Uploads with an Idempotency-Key: a retry returns the first answer and never spends a second daily slot."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import DailyQuota, Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle
from tests.support.server import start_gunicorn
from tests.support.worker import stop_worker

GOOD = submission_csv(MINI_ROWS)
OTHER = submission_csv(MINI_ROWS, a=[10 - i for i in range(len(MINI_ROWS))])


def _post(client, slug, body=GOOD, key=None, **extra):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(f"/api/benchmarks/{slug}/submissions/",
                       {"file": SimpleUploadedFile("p.csv", body, content_type="text/csv"), **extra},
                       format="multipart", **headers)


def _used(user, benchmark) -> int:
    return DailyQuota.objects.filter(user=user, benchmark=benchmark).values_list("used", flat=True).first() or 0


def test_idempotency_retry_returns_the_first_answer_and_counts_once(mini_benchmark, users, api_for):
    client = api_for("owner")
    first = _post(client, mini_benchmark.slug, key="retry-1")
    again = _post(client, mini_benchmark.slug, key="retry-1")
    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["audit_hash"] == first.json()["audit_hash"]
    assert first.json()["remaining_today"] == again.json()["remaining_today"] == 4
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Submission.objects.filter(user=users["owner"]).count() == 1
    assert _used(users["owner"], mini_benchmark) == 1


def test_idempotency_json_body_retry_counts_once(mini_benchmark, users, api_for):
    client = api_for("owner")
    predictions = [{"sequence_id": r["sequence_id"], "A": r["A"], "B": r["B"], "fold": r["fold"]} for r in MINI_ROWS]
    answers = [client.post(f"/api/benchmarks/{mini_benchmark.slug}/submissions/", {"predictions": predictions},
                           format="json", HTTP_IDEMPOTENCY_KEY="json-1") for _ in range(3)]
    assert [a.status_code for a in answers] == [202, 202, 202]
    assert len({a.json()["id"] for a in answers}) == 1
    assert _used(users["owner"], mini_benchmark) == 1


def test_idempotency_same_key_with_another_file_is_409(mini_benchmark, users, api_for):
    client = api_for("owner")
    first = _post(client, mini_benchmark.slug, key="k-1")
    other = _post(client, mini_benchmark.slug, body=OTHER, key="k-1")
    assert other.status_code == 409
    error = other.json()["errors"][0]
    assert error["column"] == "Idempotency-Key"
    assert f"submission {first.json()['id']}" in error["message"] and "new key" in error["message"]
    assert Submission.objects.filter(user=users["owner"]).count() == 1
    assert _used(users["owner"], mini_benchmark) == 1


def test_idempotency_same_key_for_another_entrant_is_409(mini_benchmark, users, api_for):
    from leaderboard.core.services.entrants import entrant_create

    client = api_for("owner")
    assert _post(client, mini_benchmark.slug, key="k-2").status_code == 202  # as the default entrant, "owner"
    entrant_create(owner=users["owner"], name="owner-second")
    assert _post(client, mini_benchmark.slug, key="k-2", entrant="owner-second").status_code == 409


def test_idempotency_keys_belong_to_their_user(mini_benchmark, users, api_for):
    mine = _post(api_for("owner"), mini_benchmark.slug, key="shared-key")
    theirs = _post(api_for("member"), mini_benchmark.slug, key="shared-key")
    assert mine.status_code == theirs.status_code == 202
    assert mine.json()["id"] != theirs.json()["id"]


def test_idempotency_retry_after_the_last_slot_is_not_a_429(mini_benchmark, users, api_for):
    client = api_for("owner")
    ids = [_post(client, mini_benchmark.slug, key=f"day-{i}").json()["id"] for i in range(5)]
    retry = _post(client, mini_benchmark.slug, key="day-4")
    assert retry.status_code == 202 and retry.json()["id"] == ids[-1]
    assert retry.json()["remaining_today"] == 0
    assert _post(client, mini_benchmark.slug, key="day-5").status_code == 429


@pytest.mark.parametrize("key", ["x" * 129, "has space", "tab\there", "é-accent", ""],
                         ids=["too long", "space", "control", "non-ascii", "empty"])
def test_idempotency_key_must_be_short_printable_ascii(mini_benchmark, users, api_for, key):
    resp = _post(api_for("owner"), mini_benchmark.slug, key=key)
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["column"] == "Idempotency-Key"
    assert not Submission.objects.exists()


def test_idempotency_key_of_128_characters_is_accepted(mini_benchmark, users, api_for):
    assert _post(api_for("owner"), mini_benchmark.slug, key="k" * 128).status_code == 202


def test_idempotency_header_is_in_the_openapi_schema():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    post = schema["paths"]["/api/benchmarks/{slug}/submissions/"]["post"]
    headers = {p["name"]: p for p in post["parameters"] if p["in"] == "header"}
    assert "Idempotency-Key" in headers and "Idempotent-Replayed" not in headers
    assert headers["Idempotency-Key"].get("required", False) is False
    assert headers["Idempotency-Key"]["schema"]["pattern"] == r"^[!-~]{1,128}$"
    assert "Idempotent-Replayed" in post["responses"]["202"]["headers"]


def _multipart(data: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.csv\"\r\n"
            f"Content-Type: text/csv\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.django_db(transaction=True)
def test_idempotency_concurrent_retries_across_processes_store_one(tmp_path, users):
    """Twenty simultaneous posts with one key: every answer names one submission, one slot is used.

    With a daily limit of 1 the losers meet the limit (the QuotaExceeded path);
    with 5 they meet the unique constraint (the IntegrityError path).
    """
    tight = benchmark_load_bundle(write_properties_bundle(tmp_path / "a", MINI_ROWS, slug="tight",
                                                          daily_limit=1)).benchmark
    roomy = benchmark_load_bundle(write_properties_bundle(tmp_path / "b", MINI_ROWS, slug="roomy")).benchmark
    _, key = token_create(user=users["owner"])
    proc, base = start_gunicorn(workers=3, threads=8, env_overrides={"CELERY_TASK_ALWAYS_EAGER": "true"})
    body, ctype = _multipart(GOOD)
    results = {}
    try:
        for benchmark in (tight, roomy):
            barrier = threading.Barrier(20)

            def post(_, slug=benchmark.slug, barrier=barrier):
                req = urllib.request.Request(f"{base}/api/benchmarks/{slug}/submissions/", data=body, method="POST",
                                             headers={"Authorization": f"Token {key}", "Content-Type": ctype,
                                                      "Idempotency-Key": f"same-{slug}"})
                barrier.wait()
                try:
                    with urllib.request.urlopen(req, timeout=60) as resp:
                        return resp.status, json.loads(resp.read())
                except urllib.error.HTTPError as err:
                    return err.code, json.loads(err.read())

            with ThreadPoolExecutor(max_workers=20) as pool:
                results[benchmark.slug] = list(pool.map(post, range(20)))
    finally:
        log = stop_worker(proc)
    print("races lost:", log.count("IntegrityError); answering"), "on the constraint,",
          log.count("QuotaExceeded); answering"), "on the limit")
    for benchmark in (tight, roomy):
        answers = results[benchmark.slug]
        assert [code for code, _ in answers] == [202] * 20, (answers, log[-3000:])
        assert len({payload["id"] for _, payload in answers}) == 1
        assert Submission.objects.filter(benchmark=benchmark).count() == 1
        assert _used(users["owner"], benchmark) == 1
