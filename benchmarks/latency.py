"""Public reads under load: the board API and the benchmark page at 16 concurrent clients, on gunicorn
with PostgreSQL (and Redis as the cache when REDIS_URL is set), as `manage.py serve` runs them.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/leaderboard_bench REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python benchmarks/latency.py [--entrants 2000] [--per-entrant 50] [--seconds 15]

Give it a scratch database: it is dropped, created, migrated and filled (the demo antibody benchmark,
``--entrants`` entrants with ``--per-entrant`` scored submissions each and a board row: 100,000
submissions by default). gunicorn runs as `manage.py serve` does by default (2 workers x 8 threads,
DEBUG off, the abuse throttles at their production rates) as if behind one proxy: each request names
a random visitor's address in X-Forwarded-For, as the traffic of many visitors would. Each of the
16 clients keeps one HTTP/1.1 connection and asks for a page again as soon as it has the last one,
for ``--seconds``; the clients run in 4 processes so the load generator is not one interpreter's
lock. Prints requests a second and p50/p95 latency per target:

* the board API, page 1 (anonymous);
* the benchmark page, page 1 (anonymous) and logged in (the viewer's own "find me" and nav);

each right after a board change (``boards_changed``: the first request rebuilds, timed apart), then
under load. ``--compare`` runs the same targets again with the board cache off
(``BOARD_CACHE_SECONDS=0``), under the same machine load.

``--uploads N`` instead measures upload-to-scored latency end to end (HTTP upload, a real worker, the
real broker): median and worst time from POST to a poll saying "scored".
"""
from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.cookies import SimpleCookie
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CLIENTS = 16
PROCESSES = 4


def _scratch_database(fresh: bool) -> bool:
    url = os.environ.get("DATABASE_URL", "")
    if "postgres" not in url:
        os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="latency-"))
        return False
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone()
        if exists and fresh:
            conn.execute(f'drop database "{name}"')
        if not exists or fresh:
            conn.execute(f'create database "{name}"')
    return True


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="latency-"))
    import django

    django.setup()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


# -- load generator (runs in child processes: no Django) ----------------------------

def _client_process(base: str, path: str, cookie: str, threads: int, seconds: float, out) -> None:
    parsed = urllib.parse.urlsplit(base)
    stop = time.monotonic() + seconds
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def loop() -> None:
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        headers = {"Cookie": cookie} if cookie else {}
        mine: list[float] = []
        rng = random.Random()
        while time.monotonic() < stop:
            # Many visitors, as behind the proxy of docs/deploy.md: the abuse throttles keep their
            # production rates, per address, and none of these addresses comes near them.
            headers["X-Forwarded-For"] = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
            t0 = time.perf_counter()
            try:
                conn.request("GET", path, headers=headers)
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    errors.append(f"HTTP {resp.status}")
                mine.append((time.perf_counter() - t0) * 1000)
            except Exception as exc:
                errors.append(repr(exc))
                conn.close()
                conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        conn.close()
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    out.put((latencies, errors))


def with_set_cookies(cookie: str, set_cookies: list[str]) -> str:
    """``cookie`` (a Cookie header) with the cookies a response set (its Set-Cookie headers) added or replaced."""
    jar = SimpleCookie()
    jar.load(cookie)
    for header in set_cookies:
        jar.load(header)
    return "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items())


def load(base: str, path: str, *, cookie: str = "", seconds: float) -> dict:
    """CLIENTS clients for ``seconds`` on one path: requests/s, p50, p95, errors."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_client_process, args=(base, path, cookie, CLIENTS // PROCESSES, seconds, out))
             for _ in range(PROCESSES)]
    t0 = time.monotonic()
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    elapsed = time.monotonic() - t0
    latencies = [v for lat, _ in results for v in lat]
    errors = [e for _, err in results for e in err]
    return {"rps": len(latencies) / elapsed, "p50": statistics.median(latencies), "p95": pct(latencies, 0.95),
            "n": len(latencies), "errors": len(errors), "first_error": errors[0] if errors else None}


# -- data ---------------------------------------------------------------------------

def fill(benchmark, entrants: int, per_entrant: int) -> int:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from leaderboard.core.boardcache import boards_changed
    from leaderboard.core.models import Entrant, LeaderboardRow, Round, Submission

    user_model = get_user_model()
    round_ = Round.objects.get(benchmark=benchmark)
    base = timezone.now() - dt.timedelta(days=1)
    rng = random.Random(1)
    total = 0
    for start in range(0, entrants, 500):
        # One participant per entrant, as on a real board (the planner's estimates depend on it).
        names = [f"filler-{start + i}" for i in range(min(500, entrants - start))]
        owners = user_model.objects.bulk_create([user_model(username=name, password="!") for name in names])
        made = Entrant.objects.bulk_create([Entrant(owner=owner, name=name) for owner, name in zip(owners, names)])
        subs = Submission.objects.bulk_create([
            Submission(benchmark=benchmark, round=round_, entrant=e, user=e.owner, original_name="p.csv", size=1,
                       audit_hash=uuid.uuid4().hex * 2, status="scored",
                       received_at=base + dt.timedelta(seconds=(start + i) * per_entrant + j))
            for i, e in enumerate(made) for j in range(per_entrant)], batch_size=5000)
        total += len(subs)
        last = {s.entrant_id: s for s in subs}
        rows = []
        for e in made:
            score = rng.uniform(-0.2, 0.6)
            rows.append(LeaderboardRow(round=round_, split="public", entrant=e, submission=last[e.pk], score=score,
                                       metrics={"score": score, "spearman": score, "recall": score},
                                       submissions_count=per_entrant, order_missing=False, order_value=-score,
                                       order_at=last[e.pk].received_at))
        LeaderboardRow.objects.bulk_create(rows, batch_size=5000)
    boards_changed(benchmark.pk)
    return total


def read_site(entrants: int, per_entrant: int):
    """The site the read benchmarks measure, in the scratch database (Django set up): migrated, static
    files collected (with DEBUG off the pages need the manifest), the demo antibody benchmark with
    ``entrants`` filler entrants on its board, analysed as autovacuum would a live table (the planner
    needs the counts), and a ``viewer`` who owns the middle one. ``(benchmark, viewer, submissions)``."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from leaderboard.core.models import Entrant
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from leaderboard.demo import properties as demo

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    bundle = Path(tempfile.mkdtemp()) / "bundle"
    bundle.mkdir()
    demo.write_bundle(bundle)
    benchmark = benchmark_load_bundle(bundle).benchmark
    submissions = fill(benchmark, entrants, per_entrant)
    with connection.cursor() as cursor:
        for table in ("core_leaderboardrow", "core_entrant", "core_submission"):
            cursor.execute(f"VACUUM ANALYZE {table}")
    viewer = get_user_model().objects.create_user("viewer", password="viewer-password-1")
    Entrant.objects.filter(name=f"filler-{entrants // 2}").update(owner=viewer)
    return benchmark, viewer, submissions


def reads(args) -> None:
    if not _scratch_database(fresh=True):
        print("latency.py (reads): skipped, set DATABASE_URL to a scratch PostgreSQL database (it is dropped "
              "and created); `--uploads N` measures upload-to-scored latency on SQLite too")
        return
    # The session cookie made here must be valid in gunicorn, which runs with SECRET_KEY=bench: with
    # another key the "logged in" target was served as an anonymous visitor (issue 26).
    os.environ["SECRET_KEY"] = "bench"
    _setup_django()
    from django.test import Client

    from leaderboard.core.boardcache import boards_changed
    from tests.support.server import start_gunicorn
    from tests.support.worker import stop_worker

    print(f"machine: {os.cpu_count()} cores, shared; load average {os.getloadavg()[0]:.2f} at start")
    benchmark, viewer, submissions = read_site(args.entrants, args.per_entrant)
    client = Client()
    client.force_login(viewer)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    cache = "Redis" if os.environ.get("REDIS_URL") else "the file cache"
    print(f"board of {args.entrants:,} entrants, {submissions:,} submissions; PostgreSQL; {cache}")

    targets = [("board API, page 1", f"/api/benchmarks/{benchmark.slug}/leaderboard/", ""),
               ("benchmark page, page 1 (anonymous)", f"/b/{benchmark.slug}/", ""),
               ("benchmark page, page 1 (logged in)", f"/b/{benchmark.slug}/", cookie)]
    print(f"gunicorn {args.workers} workers x {args.threads} threads; {CLIENTS} clients, {args.seconds:.0f} s per "
          f"target\n")
    print(f"{'target':40s} {'cache':>5s} {'req/s':>8s} {'p50 ms':>8s} {'p95 ms':>8s} {'errors':>7s}  first request "
          f"after a board change")
    for cache_seconds in ("300", "0") if args.compare else ("300",):
        server, base = start_gunicorn(workers=args.workers, threads=args.threads, env_overrides={
            "TRUSTED_PROXY_COUNT": "1", "DEBUG": "false", "SECRET_KEY": "bench", "ALLOWED_HOSTS": "127.0.0.1",
            "WEB_ACCESS_LOG": "false", "BOARD_CACHE_SECONDS": cache_seconds})
        try:
            for label, path, cookie_ in targets:
                boards_changed(benchmark.pk)
                req = urllib.request.Request(base + path, headers={"Cookie": cookie_} if cookie_ else {})
                t0 = time.perf_counter()
                with urllib.request.urlopen(req, timeout=30) as resp:
                    resp.read()
                    if cookie_:  # a browser sends back the CSRF cookie the page set (its logout form's token)
                        cookie_ = with_set_cookies(cookie_, resp.headers.get_all("Set-Cookie") or [])
                rebuild = (time.perf_counter() - t0) * 1000
                r = load(base, path, cookie=cookie_, seconds=args.seconds)
                print(f"{label:40s} {'on' if cache_seconds != '0' else 'off':>5s} {r['rps']:8.1f} {r['p50']:8.1f} "
                      f"{r['p95']:8.1f} {r['errors']:7d}  {rebuild:.0f} ms"
                      + (f"  ({r['first_error']})" if r["first_error"] else ""))
        finally:
            stop_worker(server)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


def uploads(n: int) -> None:
    _scratch_database(fresh=False)
    _setup_django()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from leaderboard.core.api.auth import token_create
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from leaderboard.demo import properties as demo
    from tests.support.server import start_gunicorn
    from tests.support.worker import start_worker, stop_worker

    call_command("migrate", verbosity=0)
    bundle = Path(tempfile.mkdtemp()) / "bundle"
    bundle.mkdir()
    demo.write_bundle(bundle)
    benchmark = benchmark_load_bundle(bundle).benchmark
    benchmark.daily_limit = 10_000
    benchmark.save()
    user, _ = get_user_model().objects.get_or_create(username="latency-bot")
    _, key = token_create(user=user)
    data = next(iter(demo.baseline_submissions(bundle).values()))
    worker = start_worker(pool="prefork", concurrency=2)
    # Polling every 10 ms is this script's business, not abuse: lift the per-user throttle.
    server, base = start_gunicorn(workers=2, threads=4, env_overrides={"THROTTLE_USER": "1000000/min"})
    try:
        times = []
        for i in range(n + 1):  # the first upload warms the worker up and is not counted
            boundary = uuid.uuid4().hex
            body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.csv\"\r\n\r\n"
                    ).encode() + data + f"\r\n--{boundary}--\r\n".encode()
            req = urllib.request.Request(f"{base}/api/benchmarks/{benchmark.slug}/submissions/", data=body,
                                         headers={"Authorization": f"Token {key}",
                                                  "Content-Type": f"multipart/form-data; boundary={boundary}"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req) as resp:
                url = json.loads(resp.read())["url"]
            while True:
                status_req = urllib.request.Request(url, headers={"Authorization": f"Token {key}"})
                with urllib.request.urlopen(status_req) as resp:
                    status = json.loads(resp.read())["status"]
                if status in ("scored", "failed"):
                    break
                time.sleep(0.01)
            assert status == "scored", status
            if i:
                times.append(time.perf_counter() - t0)
    finally:
        stop_worker(server)
        stop_worker(worker)
    backend = "PostgreSQL + Redis" if os.environ.get("REDIS_URL") else "SQLite + file broker"
    print(f"{backend}: {n} uploads of the {len(data):,}-byte demo file, upload to scored: "
          f"median {statistics.median(times) * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms, "
          f"best {min(times) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=2000)
    parser.add_argument("--per-entrant", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--compare", action="store_true", help="also run each target with the board cache off")
    parser.add_argument("--uploads", type=int, default=0, help="measure upload-to-scored latency instead")
    args = parser.parse_args()
    if args.uploads:
        uploads(args.uploads)
    else:
        reads(args)


if __name__ == "__main__":
    main()
