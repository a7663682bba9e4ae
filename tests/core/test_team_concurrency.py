"""Teams under real concurrency (PostgreSQL in CI): many server processes, simultaneous requests."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import DailyQuota, Submission, TeamMembership
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.teams import invite_accept, team_create, team_invite
from tests.conftest import MINI_ROWS, submission_csv
from tests.core.test_quota_http import _multipart
from tests.support.server import start_gunicorn
from tests.support.worker import stop_worker

pytestmark = pytest.mark.django_db(transaction=True)


def _post(url: str, key: str, body: bytes = b"", ctype: str | None = None):
    headers = {"Authorization": f"Token {key}", **({"Content-Type": ctype} if ctype else {})}
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_fifty_concurrent_uploads_from_three_members_accept_exactly_the_team_limit(mini_bundle, users):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark  # daily_limit 5
    members = [users["owner"], users["member"], users["outsider"]]
    team = team_create(user=members[0], benchmark=benchmark, name="Trio")
    for user in members[1:]:
        invite_accept(invite_id=team_invite(team=team, by=members[0], username=user.username).pk, user=user)
    keys = [token_create(user=u)[1] for u in members]
    proc, base = start_gunicorn(workers=3, threads=8, env_overrides={"CELERY_TASK_ALWAYS_EAGER": "true"})
    body, ctype = _multipart(submission_csv(MINI_ROWS), "preds.csv")
    barrier = threading.Barrier(50)

    def post(i):
        barrier.wait()
        return _post(f"{base}/api/benchmarks/{benchmark.slug}/submissions/", keys[i % 3], body, ctype)

    try:
        with ThreadPoolExecutor(max_workers=50) as pool:
            results = list(pool.map(post, range(50)))
    finally:
        log = stop_worker(proc)
    codes = [code for code, _ in results]
    assert (codes.count(202), codes.count(429)) == (5, 45), (codes, log[-3000:])
    assert sorted(p["remaining_today"] for c, p in results if c == 202) == [0, 1, 2, 3, 4]
    refusal = next(p for c, p in results if c == 429)["errors"][0]["message"]
    assert "shared by the members of team Trio" in refusal
    connection.close()
    assert Submission.objects.filter(entrant=team.entrant).count() == 5
    assert Submission.objects.exclude(entrant=team.entrant).count() == 0
    assert list(DailyQuota.objects.values_list("team_id", "user_id", "used")) == [(team.pk, None, 5)]


def test_two_invites_accepted_at_once_never_make_two_memberships(mini_bundle, users):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    User = get_user_model()
    teams = [team_create(user=users["owner"], benchmark=benchmark, name="North"),
             team_create(user=users["member"], benchmark=benchmark, name="South")]
    invitees = [User.objects.create_user(f"twin{i}", password="pw-twin-123") for i in range(8)]
    jobs = []
    for user in invitees:
        key = token_create(user=user)[1]
        for team, by in zip(teams, (users["owner"], users["member"])):
            jobs.append((key, team_invite(team=team, by=by, username=user.username).pk))
    proc, base = start_gunicorn(workers=3, threads=8)
    barrier = threading.Barrier(len(jobs))

    def accept(job):
        key, invite_id = job
        barrier.wait()
        return _post(f"{base}/api/invites/{invite_id}/accept/", key)

    try:
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            results = list(pool.map(accept, jobs))
    finally:
        log = stop_worker(proc)
    codes = [code for code, _ in results]
    assert (codes.count(200), codes.count(409)) == (8, 8), (results, log[-3000:])
    assert all("already in" in p["detail"] for c, p in results if c == 409)
    connection.close()
    for user in invitees:
        assert TeamMembership.objects.filter(user=user, benchmark=benchmark).count() == 1
