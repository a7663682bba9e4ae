"""CPU per request of the public reads in one process, beside the bare view: where read_ceiling.py's ratios go.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lb_pagecpu REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python benchmarks/page_cpu.py [--entrants 2000] [--requests 2000] [--profile TARGET] [--parts]
            [--viewer-memo]

The same site, board and viewer as ``read_ceiling.py`` (a scratch PostgreSQL database, dropped and
filled; a Redis database), but no server and no load generator: each request is handed to the site's
WSGI application (``leaderboard/wsgi.py``, what gunicorn calls: the board replay, then the whole
middleware stack) in this process, and ``time.process_time`` is divided by the number of requests. The bare view (``benchmarks/read_ceiling_site.py``) answers the same bytes
as each target. The ratio bare / target is below what read_ceiling.py measures: under gunicorn each
request also costs the server's own work, the same for both, which brings the ratio nearer 1.

``--parts`` also times the signed-in page's own steps (``PARTS``: each function's CPU per request,
by ``time.process_time`` around it, in a second run of ``--requests`` requests), so what the view
spends where can be compared between commits; the rest of the request is Django's handler and
middleware. Without a profiler's overhead, unlike ``--profile``.

``--viewer-memo`` times the signed-in page once more with the viewer's PostgreSQL query made only on
a session's first view (``personal._session_viewer``'s answer kept in this process, per session and
benchmark): what a cache of the viewer's row outside the database could save at most. Not a thing
the site may do as it is (a changed password, entrants or quota would not be seen); a measure of
the lever.
"""
from __future__ import annotations

import argparse
import cProfile
import importlib
import os
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import latency

from tests.support.wsgi import wsgi_get


def cpu_ms(get, requests: int, *, warm: bool = True) -> float:
    if warm:
        for _ in range(min(200, requests)):  # warm: the page stored, connections open, code loaded
            get()
    started = time.process_time()
    for _ in range(requests):
        get()
    return (time.process_time() - started) / requests * 1000


# The signed-in page's steps --parts times, as (module, name, what it is); indented: inside the one above.
PARTS = (
    ("leaderboard.core.views", "prefetch", "the session and the board's generation: one Redis MGET"),
    ("leaderboard.core.views", "public_read", "the shared page, from this process's memory"),
    ("leaderboard.core.views", "personal_page", "the viewer's page made from it"),
    ("leaderboard.core.personal", "_session_viewer", "  the viewer's row, entrants and quota: one PostgreSQL query"),
    ("leaderboard.core.personal", "find_me", "  the viewer's best rank"),
    ("leaderboard.core.personal", "_masked_token", "  the CSRF token"),
    ("leaderboard.core.personal", "_spliced", "  the parts put into the page"),
)


def time_parts(get, requests: int) -> list[tuple[str, str, float]]:
    """CPU ms per request of each of ``PARTS`` over ``requests`` calls of ``get``."""
    spent: dict[str, float] = {}
    saved = []

    def timed(name, function):
        def wrapper(*args, **kwargs):
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - started
        return wrapper

    for _ in range(min(200, requests)):  # warm, as cpu_ms does, before anything is timed
        get()
    for module_name, name, _ in PARTS:
        module = importlib.import_module(module_name)
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, timed(f"{module_name}.{name}", getattr(module, name)))
    try:
        total = cpu_ms(get, requests, warm=False)
    finally:
        for module, name, function in saved:
            setattr(module, name, function)
    rows = [(f"{module_name.rsplit('.', 1)[1]}.{name}", what, spent.get(f"{module_name}.{name}", 0.0) / requests * 1000)
            for module_name, name, what in PARTS]
    return [*rows, ("(the whole request)", "", total)]


def viewer_memo_ms(get, requests: int) -> float:
    """CPU ms per signed-in request with the viewer's query made once per session (``--viewer-memo``:
    ``read_ceiling_site.memoise_viewer``)."""
    from benchmarks.read_ceiling_site import memoise_viewer

    served, restore = memoise_viewer()
    try:
        ms = cpu_ms(get, requests)
    finally:
        restore()
    assert served[0] >= requests, "the page did not take the memo: not a spliced signed-in page"
    return ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=2000)
    parser.add_argument("--per-entrant", type=int, default=5)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--profile", metavar="TARGET", choices=["api", "anonymous", "logged in"],
                        help="also print where TARGET's CPU goes (cProfile on CPU time: the 60 functions costliest "
                             "in their own code)")
    parser.add_argument("--parts", action="store_true", help="also time the signed-in page's own steps (PARTS)")
    parser.add_argument("--viewer-memo", action="store_true",
                        help="also time the signed-in page with the viewer's query made once per session (what a "
                             "viewer cache could save at most)")
    args = parser.parse_args()
    if not latency._scratch_database(fresh=True):
        print("page_cpu.py: skipped, set DATABASE_URL to a scratch PostgreSQL database (it is dropped and "
              "created) and REDIS_URL to a Redis database")
        return
    bare_dir = Path(tempfile.mkdtemp(prefix="page-cpu-"))
    os.environ.update({"DJANGO_SETTINGS_MODULE": "benchmarks.read_ceiling_site", "BENCH_BARE_DIR": str(bare_dir),
                       "DEBUG": "false", "SECRET_KEY": "bench", "ALLOWED_HOSTS": "testserver"})
    latency._setup_django()
    from django.test import Client


    benchmark, viewer, _ = latency.read_site(args.entrants, args.per_entrant)
    signed_in, anonymous = Client(), Client()
    signed_in.force_login(viewer)

    def address() -> str:  # a new visitor each time, as read_ceiling.py's: the throttle never refuses
        return f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.{random.randint(1, 254)}"

    from leaderboard.wsgi import application

    def get(path: str, cookies: str) -> None:
        status, _, _ = wsgi_get(application, path, address=address(), HTTP_USER_AGENT="page_cpu",
                                **({"HTTP_COOKIE": cookies} if cookies else {}))
        assert status.startswith("200 "), (path, status)

    page, api = f"/b/{benchmark.slug}/", f"/api/benchmarks/{benchmark.slug}/leaderboard/"
    targets = [("api", anonymous, api, "api.json"), ("anonymous", anonymous, page, "anonymous.html"),
               ("logged in", signed_in, page, "logged-in.html")]
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}; board of {args.entrants:,} "
          f"entrants; PostgreSQL; Redis; {args.requests:,} requests each, in this process\n")
    print(f"{'target':10s} {'bare ms':>8s} {'target ms':>9s} {'ratio':>6s}")
    for label, client, path, name in targets:
        response = client.get(path, REMOTE_ADDR=address())
        assert response.status_code == 200, (path, response.status_code)
        if client is signed_in:
            assert b'title="Signed in">viewer<' in response.content, "the session cookie was not accepted"
        (bare_dir / name).write_bytes(response.content)
        cookies = "; ".join(f"{k}={m.value}" for k, m in client.cookies.items())  # the browser's, sent back
        bare = cpu_ms(lambda: get(f"/bench/bare/{name}", cookies), args.requests)  # noqa: B023
        real = cpu_ms(lambda: get(path, cookies), args.requests)  # noqa: B023
        print(f"{label:10s} {bare:8.3f} {real:9.3f} {bare / real:6.2f}", flush=True)
        if label == args.profile:
            profiler = cProfile.Profile(time.process_time)  # CPU, not waiting
            profiler.runcall(lambda: [get(path, cookies) for _ in range(args.requests)])  # noqa: B023
            pstats.Stats(profiler).sort_stats("tottime").print_stats(60)
        if args.parts and client is signed_in:
            print(f"\n{'the signed-in page, by part':36s} {'ms/req':>7s}")
            for name, what, ms in time_parts(lambda: get(path, cookies), args.requests):  # noqa: B023
                print(f"{name:36s} {ms:7.3f}  {what}")
            print()
        if args.viewer_memo and client is signed_in:
            memo = viewer_memo_ms(lambda: get(path, cookies), args.requests)  # noqa: B023
            print(f"{'logged in, viewer memoised':26s} {memo:.3f} ms (bare / this {bare / memo:.2f})", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
