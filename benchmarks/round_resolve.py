"""A signals round at full scale: 10,000 counted submissions x 5,000 ids, resolved by a real worker.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/leaderboard_round_bench \
    REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python benchmarks/round_resolve.py \
        [--submissions 10000] [--ids 5000] [--uploads 60] [--pairwise-at-resolve] [--json FIGURES.json]

Give it a scratch database (dropped and created) and a scratch Redis database.
The round's submissions are bulk-created directly (entrants, submissions and their
float64 arrays, as the upload service stores them; going through HTTP 10,000 times
would take hours), stakes for all of them, 50 benchmark models. Then, timed, with a
real Celery worker (solo pool, Redis broker):

* ``round_close``: on commit the worker computes the round's truth-free metrics (MCWNM,
  APCWNM: every pair of submissions) and stores them; the clock stops when they are stored.
* ``truth_load`` of the final truth to a complete board: the command's service
  stores the version and enqueues the task; the worker runs ``score_round_version``
  (every other metric, RoundScore rows, the board, 10,000 status changes, standings);
  the clock stops when the board holds every row. ``--pairwise-at-resolve`` drops what
  the close stored first, so the resolve computes MCWNM and APCWNM too (as when the
  close's task was lost). Peak memory: the worker process' high-water RSS (VmHWM),
  reset between the two.
* upload latency of a 5,000-id file to an open round: POST to gunicorn (2 workers x
  4 threads) with PostgreSQL and Redis, one client, p50 and p95.

Goals on this 2-core machine: 20,000 x 5,000 resolved within 30 s and 2 GB (issue 26; the older goal
for 10,000 was 30 s and 3 GB); upload p50 <= 150 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.scratch import scratch_site

scratch_site("round-bench-", redis=True)

import django

django.setup()

import numpy as np
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from leaderboard.core.api.auth import token_create
from leaderboard.core.models import (
    Entrant,
    LeaderboardRow,
    RoundTruthFreeScores,
    Stake,
    Submission,
    SubmissionArray,
    TruthVersion,
)
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load
from tests.support.server import start_gunicorn
from tests.support.signals import signals_benchmark
from tests.support.worker import purge_broker, start_worker, stop_worker, wait_until_ready


def universe_csv(ids: list[str], rng) -> bytes:
    feats = rng.standard_normal((len(ids), 4))
    lines = ["id,feature_0,feature_1,feature_2,feature_3"]
    lines += [f"{cid},{a:.4f},{b:.4f},{c:.4f},{d:.4f}" for cid, (a, b, c, d) in zip(ids, feats)]
    return ("\n".join(lines) + "\n").encode(), feats


def fill_round(benchmark, round_, n_subs: int, n_ids: int, signal: np.ndarray, rng) -> None:
    owner, _ = get_user_model().objects.get_or_create(username="bench-owner")
    now = timezone.now()
    batch = 500
    for start in range(0, n_subs, batch):
        count = min(batch, n_subs - start)
        entrants = Entrant.objects.bulk_create(
            [Entrant(owner=owner, name=f"model-{start + i:05d}", is_benchmark_model=(start + i) % 200 == 0)
             for i in range(count)])
        skill = rng.uniform(-0.05, 0.3, count)
        raw = skill[:, None] * signal[None, :] + rng.standard_normal((count, n_ids))
        raw[: count // 5] = np.round(raw[: count // 5] * 2) / 2  # a fifth heavily tied
        values = (raw.argsort(axis=1).argsort(axis=1) + 0.5) / n_ids
        subs = Submission.objects.bulk_create([
            Submission(benchmark=benchmark, round=round_, entrant=e, user=owner, original_name="p.csv", size=0,
                       audit_hash=f"{start + i:064x}", status="accepted", is_counted=True, received_at=now,
                       payload={"columns": ["prediction"], "meta": {}}) for i, e in enumerate(entrants)])
        SubmissionArray.objects.bulk_create([
            SubmissionArray(submission=s, rows=n_ids, columns=["prediction"], data=values[i].tobytes())
            for i, s in enumerate(subs)])
        Stake.objects.bulk_create([Stake(entrant=e, round=round_, amount=float(rng.gamma(1.0, 100.0)))
                                   for e in entrants])
        print(f"\r  {start + count:,} submissions stored", end="", flush=True)
    print()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def vm_hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_hwm(pid: int) -> None:
    """Reset a process' VmHWM to its current RSS (Linux: write 5 to clear_refs), so the next
    reading is the peak of what follows."""
    with open(f"/proc/{pid}/clear_refs", "w") as fh:
        fh.write("5")


def wait_for(done, worker) -> None:
    while True:
        connection.close()
        if done():
            return
        if worker.poll() is not None:
            raise SystemExit("the worker died:\n" + stop_worker(worker)[-3000:])
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--ids", type=int, default=5_000)
    parser.add_argument("--uploads", type=int, default=60, help="0: measure the resolve only")
    parser.add_argument("--pairwise-at-resolve", action="store_true",
                        help="drop what the close computed, so the resolve computes MCWNM and APCWNM too")
    parser.add_argument("--json", help="also write the resolve's figures to this file (benchmarks/round_scaling.py)")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
    call_command("migrate", verbosity=0)
    benchmark = signals_benchmark(Path(tempfile.mkdtemp()), slug="bench-signals", daily_limit=100_000)
    rng = np.random.default_rng(0)
    ids = [f"ID{i:05d}" for i in range(args.ids)]
    data, feats = universe_csv(ids, rng)
    round_ = round_open(benchmark=benchmark, data=data, filename="universe.csv")
    signal = feats[:, 0] + rng.standard_normal(args.ids)
    t = time.perf_counter()
    fill_round(benchmark, round_, args.submissions, args.ids, signal, rng)
    print(f"  filled in {time.perf_counter() - t:.0f} s")
    latent = signal + rng.standard_normal(args.ids)
    target = np.digitize(latent, np.quantile(latent, [0.05, 0.25, 0.75, 0.95])) / 4
    truth = ("id,target\n" + "\n".join(f"{cid},{v:g}" for cid, v in zip(ids, target)) + "\n").encode()

    purge_broker()
    worker = start_worker()  # solo pool: the scoring runs in this process, so its VmHWM is the peak
    try:
        wait_until_ready(worker, timeout=60)
        idle_mb = vm_hwm_mb(worker.pid)
        # The close: on commit, the worker computes the truth-free metrics (MCWNM, APCWNM).
        cpu0, t0 = cpu_seconds(worker.pid), time.perf_counter()
        round_close(round_=round_)
        wait_for(lambda: RoundTruthFreeScores.objects.filter(round=round_).exists(), worker)
        close_seconds = time.perf_counter() - t0
        close_cpu, close_peak_mb = cpu_seconds(worker.pid) - cpu0, vm_hwm_mb(worker.pid)
        if args.pairwise_at_resolve:  # as if the close's task had been lost: the resolve computes them
            RoundTruthFreeScores.objects.filter(round=round_).delete()
        reset_hwm(worker.pid)
        cpu0 = cpu_seconds(worker.pid)
        t0 = time.perf_counter()
        version = round_truth_load(round_=round_, data=truth, filename="truth.csv", final=True)
        stored = time.perf_counter() - t0
        wait_for(lambda: TruthVersion.objects.filter(pk=version.pk, scored_at__isnull=False).exists(), worker)
        elapsed = time.perf_counter() - t0
        rows = LeaderboardRow.objects.filter(round=round_).count()
        peak_mb = vm_hwm_mb(worker.pid)
        worker_cpu = cpu_seconds(worker.pid) - cpu0
    finally:
        log = stop_worker(worker)
    assert rows == args.submissions, rows
    scored = Submission.objects.filter(round=round_, status="scored").count()
    print(f"\nclose {args.submissions:,} submissions x {args.ids:,} ids: MCWNM and APCWNM stored {close_seconds:.1f} s "
          f"after the close (worker CPU {close_cpu:.1f} s, peak memory {close_peak_mb:,.0f} MB)")
    print(f"resolve {args.submissions:,} submissions x {args.ids:,} ids"
          f"{' (pairwise metrics computed at the resolve)' if args.pairwise_at_resolve else ''}: truth_load to a "
          f"complete board {elapsed:.1f} s (truth stored in {stored:.1f} s), {rows:,} board rows, "
          f"{scored:,} submissions scored")
    print(f"  worker CPU time {worker_cpu:.1f} s (all threads; PostgreSQL's own work not included)")
    print(f"  worker peak memory (VmHWM) during the resolve {peak_mb:,.0f} MB (idle worker {idle_mb:,.0f} MB)")
    stages = close_stages = ""
    for line in log.splitlines():
        if "scored for" in line:
            stages = line.split("INFO", 1)[-1].strip()
            print("  worker:", stages)
        if "submissions stored in" in line:
            close_stages = line.split("INFO", 1)[-1].strip()
    if args.json:
        Path(args.json).write_text(json.dumps({
            "submissions": args.submissions, "ids": args.ids, "seconds": elapsed, "worker_cpu": worker_cpu,
            "peak_mb": peak_mb, "idle_mb": idle_mb, "stages": stages, "load_start": load_start,
            "close_seconds": close_seconds, "close_cpu": close_cpu, "close_peak_mb": close_peak_mb,
            "close_stages": close_stages, "pairwise_at_resolve": args.pairwise_at_resolve,
            "load_end": os.getloadavg()[0]}))
    if args.uploads <= 0:
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        return

    # Upload latency to an open round of the same size, on gunicorn + PostgreSQL + Redis.
    round2 = round_open(benchmark=benchmark, data=data, filename="universe2.csv")
    user = get_user_model().objects.create_user("uploader")
    _, key = token_create(user=user)
    server, base = start_gunicorn(workers=2, threads=4, env_overrides={
        "THROTTLE_USER": "1000000/min", "THROTTLE_UPLOAD": "1000000/min", "DEBUG": "false",
        "SECRET_KEY": "bench", "ALLOWED_HOSTS": "127.0.0.1"})
    try:
        times = []
        for i in range(args.uploads + 5):  # the first five warm the gunicorn threads up
            values = (rng.permutation(args.ids) + 0.5) / args.ids
            body_csv = ("id,prediction\n" + "\n".join(f"{cid},{v:.6f}" for cid, v in zip(ids, values)) + "\n").encode()
            boundary = uuid.uuid4().hex
            body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.csv\"\r\n"
                    f"Content-Type: text/csv\r\n\r\n").encode() + body_csv + f"\r\n--{boundary}--\r\n".encode()
            req = urllib.request.Request(f"{base}/api/benchmarks/{benchmark.slug}/submissions/", data=body,
                                         headers={"Authorization": f"Token {key}",
                                                  "Content-Type": f"multipart/form-data; boundary={boundary}"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req, timeout=30) as resp:
                assert resp.status == 202, resp.status
                resp.read()
            if i >= 5:
                times.append((time.perf_counter() - t0) * 1000)
    finally:
        stop_worker(server)
    counted = Submission.objects.filter(round=round2, is_counted=True).count()
    times.sort()
    print(f"\nupload of a {args.ids:,}-id file ({len(body_csv):,} bytes) to an open round, gunicorn + PostgreSQL + "
          f"Redis, 1 client, {len(times)} uploads: p50 {statistics.median(times):.0f} ms, "
          f"p95 {times[int(0.95 * (len(times) - 1))]:.0f} ms, max {times[-1]:.0f} ms ({counted} counted)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
