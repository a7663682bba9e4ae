"""Races answer 200/4xx, never 500 (issue 14, point 7): real concurrency, on PostgreSQL in CI.

Before: two simultaneous `select` posts for one entrant collided on the
one-selected constraint (25 of 50 answered 500), and concurrent creations of
one entrant name passed the existence check together (3 of 40 answered 500).
"""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test import Client

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import Entrant, LeaderboardRow, Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.uploads import submission_create
from tests.conftest import MINI_ROWS, submission_csv
from tests.support.server import start_gunicorn
from tests.support.worker import stop_worker

pytestmark = pytest.mark.django_db(transaction=True)


def _scored(user, benchmark, a=None):
    sub = submission_create(user=user, benchmark=benchmark, data=submission_csv(MINI_ROWS, a=a),
                            filename="p.csv").submission  # scored at once: tasks run eagerly on commit here
    sub.refresh_from_db()
    assert sub.status == "scored"
    return sub


def test_concurrency_fifty_simultaneous_selects_for_one_entrant(mini_bundle, users):
    benchmark = benchmark_load_bundle(mini_bundle).benchmark
    first = _scored(users["owner"], benchmark)
    second = _scored(users["owner"], benchmark, a=[10 - r["A"] for r in MINI_ROWS])
    _, key = token_create(user=users["owner"])
    proc, base = start_gunicorn(workers=3, threads=8, env_overrides={"CELERY_TASK_ALWAYS_EAGER": "true"})
    barrier = threading.Barrier(50)

    def select(i):
        pk = (first, second)[i % 2].pk
        req = urllib.request.Request(f"{base}/api/submissions/{pk}/select/", data=b"", method="POST",
                                     headers={"Authorization": f"Token {key}"})
        barrier.wait()
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, err.read()[:300]
        except Exception as exc:
            return type(exc).__name__, str(exc)

    try:
        with ThreadPoolExecutor(max_workers=50) as pool:
            results = list(pool.map(select, range(50)))
    finally:
        log = stop_worker(proc)
    codes = [r[0] for r in results]
    assert set(codes) <= {200, 409}, (results, log[-3000:])
    assert codes.count(200) >= 1
    connection.close()
    selected = list(Submission.objects.filter(entrant__owner=users["owner"], is_selected=True)
                    .values_list("pk", flat=True))
    assert len(selected) == 1
    # The private board follows the one selection.
    assert list(LeaderboardRow.objects.filter(split="private").values_list("submission_id", flat=True)) == selected


def test_concurrency_forty_simultaneous_creations_of_one_entrant_name(db):
    User = get_user_model()
    people = [User.objects.create_user(f"racer{i}", password="pw-racer-123") for i in range(40)]
    clients = []
    for person in people:
        client = Client()
        client.force_login(person)
        clients.append(client)
    barrier = threading.Barrier(40)
    names = ["Swift", "swift", "SWIFT", "sWiFt"]

    def create(i):
        barrier.wait()
        try:
            resp = clients[i].post("/accounts/profile/", {"action": "create_entrant", "name": names[i % 4]})
            return resp.status_code, resp.content.decode()
        except Exception as exc:  # an error the server would have answered with 500
            return type(exc).__name__, str(exc)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=40) as pool:
        results = list(pool.map(create, range(40)))
    codes = [r[0] for r in results]
    assert codes.count(302) == 1, [(c, t[:200]) for c, t in results if c not in (302, 400)]
    assert codes.count(400) == 39
    assert all("is taken" in text for code, text in results if code == 400)
    assert Entrant.objects.filter(name__iexact="swift").count() == 1
