"""Slow-header clients against the production recipe and against `serve` alone (issue 19, item 4).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lb_i19 .venv/bin/python benchmarks/slow_clients.py \\
        [--clients 200] [--seconds 60] [--direct-seconds 20]

gunicorn runs as `manage.py serve` runs it (2 processes x 8 threads, DEBUG off) against the given
database (without DATABASE_URL: a scratch SQLite one); Debian's nginx runs deploy/nginx.conf in front
of it (tests/support/nginx.py). ``--clients`` connections trickle their request head a byte a second
(reopened whenever dropped, tests/support/slowclients.py) for ``--seconds`` while one normal client
asks for the home page every 0.1 s through nginx. Then the same slow clients go straight at gunicorn
for ``--direct-seconds``: what `serve` alone, exposed directly, would suffer. Prints, for each, the
pages answered, failures (10 s timeout) and p50/p95 latency, with the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--direct-seconds", type=float, default=20)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATA_DIR"] = tempfile.mkdtemp(prefix="slow-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from tests.support.nginx import start_nginx
    from tests.support.server import start_gunicorn
    from tests.support.slowclients import SlowHeaderClients, p95, timed_requests
    from tests.support.worker import stop_worker

    call_command("migrate", verbosity=0)
    production = {"DEBUG": "false", "SECRET_KEY": "slow-clients-benchmark-" + "k" * 40, "ALLOWED_HOSTS": "127.0.0.1"}
    gunicorn, base = start_gunicorn(workers=2, threads=8, env_overrides=production)
    nginx, port = start_nginx(int(base.rsplit(":", 1)[1]), Path(tempfile.mkdtemp(prefix="slow-nginx-")))

    def report(name: str, took: list[float], failures: int, reopened: int) -> None:
        p50 = statistics.median(took) * 1000 if took else float("nan")
        print(f"{name}: {len(took)} pages answered, {failures} failed, p50 {p50:.0f} ms, "
              f"p95 {p95(took) * 1000:.0f} ms; {reopened} slow connections reopened; "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)

    try:
        quiet, _ = timed_requests(f"http://127.0.0.1:{port}/", 5)
        report("through nginx, no slow clients", quiet, 0, 0)
        with SlowHeaderClients(port, args.clients) as slow:
            took, failures = timed_requests(f"http://127.0.0.1:{port}/", args.seconds)
        report(f"through nginx, {args.clients} slow-header clients for {args.seconds:g} s", took, failures,
               slow.reopened)
        with SlowHeaderClients(int(base.rsplit(":", 1)[1]), args.clients) as slow:
            took_direct, failures_direct = timed_requests(base + "/", args.direct_seconds)
        report(f"straight at gunicorn (serve alone), {args.clients} slow-header clients for "
               f"{args.direct_seconds:g} s", took_direct, failures_direct, slow.reopened)
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        stop_worker(gunicorn)
    return 0 if not failures and p95(took) < 0.2 else 1


if __name__ == "__main__":
    sys.exit(main())
