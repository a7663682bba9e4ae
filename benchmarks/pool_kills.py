"""Kill scoring pool processes mid-task under a heavy load and time each recovery (issue 19, item 1).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lb_i19 REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python benchmarks/pool_kills.py [--kills 100] [--load 10] [--port 8119]

Runs `manage.py serve` (gunicorn, a prefork worker of 2 pool processes, beat) against the given
database and broker (without DATABASE_URL: SQLite and the embedded broker in a scratch DATA_DIR).
The database is migrated and given a small benchmark; the scoring queue is purged first, so give it
a database and Redis DB of your own. CPU burners at nice 19 (they take little from other work but
count in the load average) are added until the 1-minute load average reaches ``--load``.

Each trial uploads a submission (scoring sleeps 2 s, SCORING_DELAY_SECONDS), waits until a pool
process is scoring it (its heartbeat says busy), SIGKILLs that pool process, and times until the
submission is scored and the worker again has two live pool processes that beat. A trial recovers
if both happen within 60 s. Prints every trial's seconds on one line, then the count recovered, the
median, p95 and max, Celery's "Timed out waiting for UP message" lines (a replacement pool process
killed for starting too slowly: the loop of issue 19) and serve's restarts, with the load average.
Exits 1 unless every trial recovered.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PY = sys.executable
from benchmarks.serving import multipart_file, serve_start, serve_stop

LIMIT = 60.0


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--load", type=float, default=10.0)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8119")))
    args = parser.parse_args()

    env = dict(os.environ, PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="leaderboard.settings",
               SCORING_DELAY_SECONDS="2", WORKER_HEARTBEAT_SECONDS="1")
    if not env.get("DATABASE_URL"):
        env["DATA_DIR"] = tempfile.mkdtemp(prefix="kills-")
        env.pop("REDIS_URL", None)
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from leaderboard.celery import app
    from leaderboard.core.models import Submission, WorkerHeartbeat
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from leaderboard.core.services.tokens import token_create

    call_command("migrate", verbosity=0)
    bundle = Path(tempfile.mkdtemp(prefix="kills-bundle-"))
    slug = f"kills-{uuid.uuid4().hex[:6]}"
    (bundle / "benchmark.json").write_text(json.dumps({
        "slug": slug, "title": "Pool kills", "kind": "properties", "description": "Kill trials.",
        "daily_limit": 100000, "config": {"properties": [{"name": "A", "higher_is_better": True, "recall": True}],
                                          "weights": {"spearman": 0.6, "recall": 0.4}, "recall_fraction": 0.1}}))
    (bundle / "cases.csv").write_text("sequence_id,fold,split,A\n" + "".join(
        f"k{i:02d},{i % 5},{'public' if i < 14 else 'private'},{i * 0.5}\n" for i in range(20)))
    benchmark_load_bundle(bundle)
    user, _ = get_user_model().objects.get_or_create(username="pool-killer")
    _, key = token_create(user=user)
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("scoring")

    log_path = Path(tempfile.mkdtemp(prefix="kills-log-")) / "serve.log"
    base = f"http://127.0.0.1:{args.port}"
    burners: list[subprocess.Popen] = []
    serve = serve_start(port=args.port, env=env, log_path=log_path)
    results: list[float | None] = []
    loads: list[float] = []
    try:
        # Load: burners at nice 19 until the 1-minute load average reaches --load (at most 16).
        ramp_until = time.monotonic() + 240
        while os.getloadavg()[0] < args.load and time.monotonic() < ramp_until:
            if len(burners) < 16:
                burners.append(subprocess.Popen(["nice", "-n", "19", PY, "-c", "while True: pass"]))
            time.sleep(15)
        print(f"kills: {len(burners)} burners, load average {os.getloadavg()}", flush=True)

        worker_main = int(re.findall(r"scoring worker started, pid (\d+)", log_path.read_text())[-1])
        csv = "sequence_id,A,fold\n" + "".join(f"k{i:02d},{random.random()},{i % 5}\n" for i in range(20))
        body, ctype = multipart_file(csv)
        headers = {"Authorization": f"Token {key}", "Content-Type": ctype}
        for trial in range(args.kills):
            req = urllib.request.Request(f"{base}/api/benchmarks/{slug}/submissions/", data=body, headers=headers)
            with urllib.request.urlopen(req, timeout=60) as resp:
                pk = json.loads(resp.read())["id"]
            # The pool process scoring it (its heartbeat says busy).
            victim = None
            wait_until = time.monotonic() + 60
            while victim is None and time.monotonic() < wait_until:
                connection.close()
                pool = set(_children(worker_main))
                busy = WorkerHeartbeat.objects.filter(pid__in=pool, busy_since__isnull=False).values_list("pid", flat=True)
                victim = next(iter(busy), None)
                if victim is None:
                    time.sleep(0.1)
            if victim is None:
                print(f"kills: trial {trial}: no pool process took submission {pk} within 60 s", flush=True)
                results.append(None)
                continue
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            loads.append(os.getloadavg()[0])
            recovered = None
            while time.monotonic() - killed_at < LIMIT:
                connection.close()
                scored = Submission.objects.filter(pk=pk, status="scored").exists()
                pool = set(_children(worker_main)) - {victim}
                fresh = timezone.now() - timezone.timedelta(seconds=3)
                beating = WorkerHeartbeat.objects.filter(pid__in=pool, beat_at__gte=fresh).count()
                if scored and len(pool) == 2 and beating == 2:
                    recovered = time.monotonic() - killed_at
                    break
                time.sleep(0.2)
            results.append(recovered)
            print(f"{recovered:.1f}" if recovered is not None else "FAIL", end=" ", flush=True)
        print()
    finally:
        for b in burners:
            b.kill()
            b.wait()
        serve_stop(serve)
    text = log_path.read_text(errors="replace")
    done = sorted(r for r in results if r is not None)
    print(f"kills: {len(done)} of {len(results)} recovered within {LIMIT:.0f} s")
    if done:
        p95 = done[min(len(done) - 1, int(0.95 * len(done)))]
        print(f"kills: seconds from kill to scored with a full beating pool: median {statistics.median(done):.1f}, "
              f"p95 {p95:.1f}, max {done[-1]:.1f}")
    if loads:
        print(f"kills: 1-minute load average at the kills: min {min(loads):.1f}, median {statistics.median(loads):.1f}, "
              f"max {max(loads):.1f}")
    print(f"kills: 'Timed out waiting for UP message' lines {text.count('Timed out waiting for UP message')}, "
          f"serve restarts {text.count('Restarted it as pid')}; log {log_path}")
    return 0 if len(done) == len(results) == args.kills else 1


if __name__ == "__main__":
    sys.exit(main())
