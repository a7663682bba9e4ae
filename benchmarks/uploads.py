"""Uploads where people wait: a 5,000-id signals file, its CPU per upload and its latency at 6
concurrent clients, on the embedded default (SQLite) or PostgreSQL.

    .venv/bin/python benchmarks/uploads.py                          # SQLite in a scratch DATA_DIR
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lb_bench_uploads REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python benchmarks/uploads.py                      # PostgreSQL (dropped and created)

Setup: a signals benchmark with one open round of 5,000 ids and 6 users with API tokens. Each
upload is the API's multipart POST run through Django's whole stack in this process (the test
client: middleware, token authentication, the throttles, multipart parsing, the upload service,
the database; DEBUG off), without an HTTP server in between: what is measured is the server's own cost.

1. CPU: ``--serial`` uploads one after another by one client: CPU time (``time.process_time``)
   per upload, median and p95, and of that the kind's parse and audit bytes alone.
2. Latency: 6 clients in 6 processes, each uploading ``--per-client`` times back to back: wall
   time per upload, p50, p95 and max, and CPU per upload.

Prints the load average before and after (the machine's other work shows in every figure).
Goals (issue 26): at most 25 ms CPU, p50 at most 100 ms, p95 at most 300 ms.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.scratch import recreate_database

N_IDS = 5000
CLIENTS = 6


def _scratch() -> str:
    url = os.environ.get("DATABASE_URL", "")
    os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="uploads-"))
    os.environ.update({"DEBUG": "false", "SECRET_KEY": "bench-uploads"})  # as in production
    os.environ["THROTTLE_UPLOAD"] = "100000/min"  # this script's clients are not abuse
    os.environ["THROTTLE_USER"] = "100000/min"
    if "postgres" not in url:
        return "SQLite + file cache"
    recreate_database(url)
    return "PostgreSQL" + (" + Redis cache" if os.environ.get("REDIS_URL") else "")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _upload(client, slug: str, key: str, data: bytes) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    resp = client.post(f"/api/benchmarks/{slug}/submissions/", {"file": SimpleUploadedFile("p.csv", data)},
                       HTTP_AUTHORIZATION=f"Token {key}")
    assert resp.status_code in (201, 202), (resp.status_code, resp.content[:300])


def _client(slug: str, key: str, data: bytes, n: int, out) -> None:
    from django.db import connections
    from django.test import Client

    connections.close_all()  # this process's own connection
    client = Client()
    _upload(client, slug, key, data)  # warm-up, not counted
    walls, cpus = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        _upload(client, slug, key, data)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    out.put((walls, cpus))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serial", type=int, default=30)
    parser.add_argument("--per-client", type=int, default=15)
    args = parser.parse_args()
    backend = _scratch()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections
    from django.test import Client

    from scoring.kinds import get_kind

    from leaderboard.core.services.round_engine import round_open
    from leaderboard.core.services.tokens import token_create
    from tests.support.signals import SignalsRound, signals_benchmark

    call_command("migrate", verbosity=0)
    if connections["default"].vendor == "sqlite":
        with connections["default"].cursor() as cursor:
            modes = [cursor.execute(f"PRAGMA {p}").fetchone()[0] for p in ("journal_mode", "synchronous")]
        backend += f" (journal_mode {modes[0]}, synchronous {({0: 'OFF', 1: 'NORMAL', 2: 'FULL'}).get(modes[1])})"
    benchmark = signals_benchmark(Path(tempfile.mkdtemp()), slug="bench-uploads", daily_limit=100_000)
    rnd = SignalsRound(n=N_IDS, seed=1)
    round_open(benchmark=benchmark, data=rnd.universe_csv(), filename="universe.csv")
    data = rnd.submission_csv(rnd.predictions(0.5, seed=2))
    keys = []
    for i in range(CLIENTS):
        user, _ = get_user_model().objects.get_or_create(username=f"upload-bot-{i}")
        keys.append(token_create(user=user)[1])
    print(f"{backend}: {N_IDS:,}-id signals file of {len(data):,} bytes; load average {os.getloadavg()[0]:.2f} "
          "at the start")

    # The kind's parse and audit bytes alone (pure, no database).
    from leaderboard.core.models import Round
    from leaderboard.core.services.casedata import round_universe

    universe = round_universe(Round.objects.get(benchmark=benchmark))
    kind = get_kind("signals")
    parse = []
    for _ in range(args.serial):
        c0 = time.process_time()
        parsed = kind.parse_round_submission(data, filename="p.csv", universe=universe, config=benchmark.config)
        kind.round_canonical_bytes(parsed, universe)
        parse.append(time.process_time() - c0)

    client = Client()
    _upload(client, benchmark.slug, keys[0], data)  # warm-up
    cpus, walls = [], []
    for _ in range(args.serial):
        t0, c0 = time.perf_counter(), time.process_time()
        _upload(client, benchmark.slug, keys[0], data)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    print(f"  one client, {args.serial} uploads: CPU per upload median {statistics.median(cpus) * 1000:.1f} ms, "
          f"p95 {pct(cpus, 0.95) * 1000:.1f} ms (parse and audit bytes {statistics.median(parse) * 1000:.1f} ms); "
          f"wall median {statistics.median(walls) * 1000:.1f} ms")

    connections.close_all()
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_client, args=(benchmark.slug, key, data, args.per_client, out)) for key in keys]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - t0
    walls = [w for r in results for w in r[0]]
    cpus = [c for r in results for c in r[1]]
    print(f"  {CLIENTS} clients x {args.per_client} uploads: p50 {pct(walls, 0.5) * 1000:.0f} ms, "
          f"p95 {pct(walls, 0.95) * 1000:.0f} ms, max {max(walls) * 1000:.0f} ms; CPU per upload median "
          f"{statistics.median(cpus) * 1000:.1f} ms; {len(walls) / elapsed:.1f} uploads/s; "
          f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
