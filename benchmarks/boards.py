"""Boards at scale: a benchmark board of 10,000 entrants on gunicorn + PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/leaderboard_bench \
        .venv/bin/python benchmarks/boards.py [--entrants 10000] [--requests 200] [--seconds 10]

Give it a scratch database (dropped and created, migrated, a benchmark loaded into
it). Prints:

* the board API (page 1, and a random page of 100) and the board page (HTML,
  page 1 and a random page, with the viewer's "find me"): p50 and p95 latency
  with one client;
* throughput with 16 concurrent clients on a mix of those four requests;
* refresh cost per scored submission: the time ``leaderboard_refresh_entrant``
  takes inside ``submission_score`` for real uploads, at 1,000 and at 10,000
  entrants (goal < 20 ms, flat in board size).

gunicorn runs 2 workers x 4 threads (this machine has 2 cores). Board rows of
the filler entrants are bulk-created; the timed submissions go through the real
upload and scoring services.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.scratch import scratch_site

scratch_site("boards-bench-")
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"

import django

django.setup()

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from leaderboard.core.models import Entrant, LeaderboardRow, Round, Submission
from leaderboard.core.services import submissions as submission_service
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.uploads import submission_create
from leaderboard.demo import properties as demo
from tests.support.server import start_gunicorn
from tests.support.worker import stop_worker


def fill(benchmark, start: int, n: int) -> None:
    """Entrants start..start+n-1 with one scored row each (bulk-created)."""
    owner, _ = get_user_model().objects.get_or_create(username="filler")
    round_ = Round.objects.get(benchmark=benchmark)
    base = timezone.now() - dt.timedelta(days=1)
    entrants = Entrant.objects.bulk_create([Entrant(owner=owner, name=f"filler-{start + i}") for i in range(n)],
                                           batch_size=2000)
    subs = Submission.objects.bulk_create([
        Submission(benchmark=benchmark, round=round_, entrant=e, user=owner, original_name="p.csv", size=1,
                   audit_hash=f"{start + i:064x}", status="scored", received_at=base + dt.timedelta(seconds=i))
        for i, e in enumerate(entrants)], batch_size=2000)
    rng = random.Random(start)
    rows = []
    for e, s in zip(entrants, subs):
        score = rng.uniform(-0.2, 0.6)
        rows.append(LeaderboardRow(round=round_, split="public", entrant=e, submission=s, score=score,
                                   metrics={"score": score, "spearman": score, "recall": score},
                                   submissions_count=1, order_missing=False, order_value=-score,
                                   order_at=s.received_at))
    LeaderboardRow.objects.bulk_create(rows, batch_size=2000)


def refresh_cost(benchmark, files: list[bytes], uploads: int) -> list[float]:
    """Upload and score ``uploads`` real submissions (new entrants); the refresh step's times in ms."""
    times: list[float] = []
    real = submission_service.leaderboard_refresh_entrant

    def timed(round_, entrant_id):
        t0 = time.perf_counter()
        real(round_, entrant_id)
        times.append((time.perf_counter() - t0) * 1000)

    submission_service.leaderboard_refresh_entrant = timed
    try:
        User = get_user_model()
        for i in range(uploads):
            user, _ = User.objects.get_or_create(username=f"bench-{benchmark.pk}-{time.monotonic_ns()}-{i}")
            accepted = submission_create(user=user, benchmark=benchmark, data=files[i % len(files)],
                                         filename="p.csv")
            # Eager tasks: the upload's on-commit task has scored it already (through the timed refresh).
            submission_service.submission_score(submission_id=accepted.submission.pk)
            assert Submission.objects.get(pk=accepted.submission.pk).status == "scored"
    finally:
        submission_service.leaderboard_refresh_entrant = real
    return times


def fetch(url: str, cookie: str | None = None) -> float:
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()
        assert resp.status == 200
    return (time.perf_counter() - t0) * 1000


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--uploads", type=int, default=30)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG off: pages name the hashed files
    bundle = Path(tempfile.mkdtemp()) / "bundle"
    bundle.mkdir()
    demo.write_bundle(bundle)
    benchmark = benchmark_load_bundle(bundle).benchmark
    benchmark.daily_limit = 10_000
    benchmark.save()
    files = list(demo.baseline_submissions(bundle).values())

    small = min(1_000, args.entrants)
    fill(benchmark, 0, small)
    refresh_small = refresh_cost(benchmark, files, args.uploads)
    fill(benchmark, small, args.entrants - small)
    refresh_big = refresh_cost(benchmark, files, args.uploads)
    board = LeaderboardRow.objects.filter(round__benchmark=benchmark, split="public").count()
    # What autovacuum does on a live table: statistics and the visibility map (index-only scans).
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("core_leaderboardrow", "core_entrant", "core_submission"):
            cursor.execute(f"VACUUM ANALYZE {table}")

    # The viewer owns an entrant in the middle of the board: the page computes its "find me".
    viewer = get_user_model().objects.create_user("viewer", password="viewer-password-1")
    Entrant.objects.filter(name=f"filler-{args.entrants // 2}").update(owner=viewer)
    server, base = start_gunicorn(workers=2, threads=4, env_overrides={
        "THROTTLE_ANON": "100000000/min", "THROTTLE_USER": "100000000/min", "DEBUG": "false",
        "SECRET_KEY": "bench", "ALLOWED_HOSTS": "127.0.0.1"})
    try:
        from django.test import Client

        client = Client()
        client.force_login(viewer)
        cookie = f"sessionid={client.cookies['sessionid'].value}"
        pages = board // 100
        slug = benchmark.slug
        kinds = {
            "API page 1": lambda: f"{base}/api/benchmarks/{slug}/leaderboard/",
            "API random page": lambda: f"{base}/api/benchmarks/{slug}/leaderboard/?page={random.randint(1, pages)}",
            "HTML page 1 (logged in)": lambda: f"{base}/b/{slug}/",
            "HTML random page (logged in)": lambda: f"{base}/b/{slug}/?page={random.randint(1, pages)}",
        }
        for make in kinds.values():  # warm up every gunicorn thread
            for _ in range(10):
                fetch(make(), cookie)
        print(f"\nboard of {board:,} rows, 1 client, {args.requests} requests each:")
        for label, make in kinds.items():
            lat = [fetch(make(), cookie if "logged" in label else None) for _ in range(args.requests)]
            print(f"  {label:30s} p50 {statistics.median(lat):6.1f} ms   p95 {pct(lat, 0.95):6.1f} ms")

        done: list[float] = []
        errors = []
        stop = time.monotonic() + args.seconds
        makers = list(kinds.items())

        def client_loop(i: int) -> None:
            n = 0
            while time.monotonic() < stop:
                label, make = makers[(i + n) % len(makers)]
                n += 1
                try:
                    done.append(fetch(make(), cookie if "logged" in label else None))
                except Exception as exc:
                    errors.append(repr(exc))

        threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(16)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        print(f"\n16 clients for {elapsed:.1f} s on the mix: {len(done) / elapsed:.1f} requests/s, "
              f"p50 {statistics.median(done):.0f} ms, p95 {pct(done, 0.95):.0f} ms, {len(errors)} errors")
    finally:
        stop_worker(server)

    print("\nrefresh cost per scored submission (leaderboard_refresh_entrant inside submission_score):")
    for n, times in ((small, refresh_small), (board, refresh_big)):
        print(f"  board of {n:>6,} entrants: median {statistics.median(times):5.2f} ms, "
              f"p95 {pct(times, 0.95):5.2f} ms, max {max(times):5.2f} ms ({len(times)} uploads)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
