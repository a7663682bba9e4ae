"""Static scoring end to end: a properties upload from POST to "scored", alone and with 8 clients.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/leaderboard_static_bench \\
    REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python benchmarks/static_scoring.py \\
        [--uploads 40] [--clients 8] [--seconds 15]

Without DATABASE_URL and REDIS_URL it runs on the embedded default (SQLite and the file broker
in a scratch data folder). With them, give it a scratch database (dropped and created) and a
scratch Redis database. The site runs as ``manage.py serve`` runs it: gunicorn (2 workers x 8
threads, DEBUG off) and a Celery worker with 2 pool processes; the benchmark is the demo's
antibody benchmark (kind ``properties``, GDPa1: every upload is scored on its public and private
cases and writes one per-case row per antibody).

* alone: one client uploads the demo's baseline file ``--uploads`` times, each time waiting for
  the status API to say "scored" (polled every 5 ms), and prints p50/p95 of POST to scored (and
  of ``received_at`` to ``scored_at`` as the database has them);
* ``--clients`` clients upload back to back for ``--seconds`` (a burst of participants; nobody
  waits for a score, so no polling competes for the cores): scored submissions a second, from
  the first upload to the last score, and the uploads' p50/p95.

Both print the CPU time per scored submission of the worker (main and pool processes) and of
gunicorn (the upload and the polls); PostgreSQL's own work is not in them.

Goals (issue 26, this 2-core machine, shared with the clients, gunicorn and the database):
upload to scored at most 150 ms alone; at least 10 scored a second with 8 clients.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.scratch import recreate_database


def scratch() -> str:
    url = os.environ.get("DATABASE_URL", "")
    os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="static-bench-"))
    if "postgres" not in url:
        return "SQLite + file broker"
    recreate_database(url)
    return "PostgreSQL + Redis" if os.environ.get("REDIS_URL") else "PostgreSQL + file broker"


def process_tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its children still running (user + system)."""
    pids = [pid] + [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                                     text=True).stdout.split()]
    total = 0.0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Uploader:
    def __init__(self, base: str, slug: str, key: str, data: bytes, poll: float):
        self.url = f"{base}/api/benchmarks/{slug}/submissions/"
        self.key = key
        self.data = data
        self.poll = poll

    def post(self) -> float:
        t0 = time.perf_counter()
        self._post()
        return time.perf_counter() - t0

    def _post(self) -> str:
        """Upload the file once; the submission's status URL."""
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.csv\"\r\n\r\n"
                ).encode() + self.data + f"\r\n--{boundary}--\r\n".encode()
        req = urllib.request.Request(self.url, data=body, headers={
            "Authorization": f"Token {self.key}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())["url"]

    def upload_and_wait(self) -> float:
        t0 = time.perf_counter()
        status_url = self._post()
        while True:
            with urllib.request.urlopen(urllib.request.Request(
                    status_url, headers={"Authorization": f"Token {self.key}"}), timeout=60) as resp:
                status = json.loads(resp.read())["status"]
            if status in ("scored", "failed"):
                break
            time.sleep(self.poll)
        if status != "scored":
            raise SystemExit(f"an upload ended {status}")
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=40)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    backend = scratch()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from leaderboard.core.api.auth import token_create
    from leaderboard.core.models import Submission
    from leaderboard.core.services.benchmarks import benchmark_load_bundle
    from leaderboard.demo import properties as demo
    from tests.support.server import start_gunicorn
    from tests.support.worker import purge_broker, start_worker, stop_worker, wait_until_ready

    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start; {backend}")
    call_command("migrate", verbosity=0)
    bundle = Path(tempfile.mkdtemp()) / "bundle"
    bundle.mkdir()
    demo.write_bundle(bundle)
    benchmark = benchmark_load_bundle(bundle).benchmark
    benchmark.daily_limit = 1_000_000
    benchmark.save()
    data = next(iter(demo.baseline_submissions(bundle).values()))
    keys = []
    for i in range(max(1, args.clients)):
        user, _ = get_user_model().objects.get_or_create(username=f"static-bench-{i}")
        keys.append(token_create(user=user)[1])

    purge_broker()
    worker = start_worker(pool="prefork", concurrency=2)
    # Polling every 5 ms is this script's business, not abuse: lift the abuse throttles.
    lifted = dict.fromkeys(("THROTTLE_USER", "THROTTLE_UPLOAD", "THROTTLE_ANON"), "100000000/min")
    server, base = start_gunicorn(workers=2, threads=8, env_overrides={
        **lifted, "DEBUG": "false", "SECRET_KEY": "bench", "ALLOWED_HOSTS": "127.0.0.1", "WEB_ACCESS_LOG": "false"})
    try:
        wait_until_ready(worker, timeout=60)
        alone = Uploader(base, benchmark.slug, keys[0], data, poll=0.005)
        for _ in range(3):  # warm the pool processes and gunicorn's threads up
            alone.upload_and_wait()
        cpu0, web0, first = process_tree_cpu(worker.pid), process_tree_cpu(server.pid), Submission.objects.count()
        times = [alone.upload_and_wait() * 1000 for _ in range(args.uploads)]
        alone_cpu = (process_tree_cpu(worker.pid) - cpu0) / args.uploads * 1000
        web_cpu = (process_tree_cpu(server.pid) - web0) / args.uploads * 1000
        server_side = [(s - r).total_seconds() * 1000 for r, s in Submission.objects.order_by("id")[first:]
                       .values_list("received_at", "scored_at")]
        print(f"\nalone: {args.uploads} uploads of the {len(data):,}-byte demo file, POST to scored: "
              f"p50 {statistics.median(times):.0f} ms, p95 {pct(times, 0.95):.0f} ms, best {min(times):.0f} ms "
              f"(goal p50 150 ms: ratio {statistics.median(times) / 150:.2f}); "
              f"worker CPU {alone_cpu:.0f} ms a submission, gunicorn CPU {web_cpu:.0f} ms (upload and polls); "
              f"received_at to scored_at p50 {statistics.median(server_side):.0f} ms; "
              f"load average {os.getloadavg()[0]:.2f}")

        # 8 clients upload back to back (a burst of participants; nobody waits for a score) for
        # --seconds; the clock runs from the first upload to the last score.
        posts: list[float] = []
        lock = threading.Lock()
        first = Submission.objects.count()
        stop_at = time.monotonic() + args.seconds

        def client(key: str) -> None:
            uploader = Uploader(base, benchmark.slug, key, data, poll=0)
            while time.monotonic() < stop_at:
                took = uploader.post()
                with lock:
                    posts.append(took * 1000)

        cpu0, web0, t0 = process_tree_cpu(worker.pid), process_tree_cpu(server.pid), time.perf_counter()
        threads = [threading.Thread(target=client, args=(key,)) for key in keys[: args.clients]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        uploaded = time.perf_counter() - t0
        while Submission.objects.filter(id__gt=0).exclude(status__in=("scored", "failed")).exists():
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        cpu = process_tree_cpu(worker.pid) - cpu0
        web = process_tree_cpu(server.pid) - web0
        scored = Submission.objects.order_by("id")[first:].values_list("status", flat=True)
        scored = [st for st in scored if st == "scored"]
        rate = len(scored) / elapsed
        print(f"{args.clients} clients uploading back to back for {uploaded:.1f} s: {len(posts)} uploads (POST p50 "
              f"{statistics.median(posts):.0f} ms, p95 {pct(posts, 0.95):.0f} ms), the last scored after "
              f"{elapsed:.1f} s: {rate:.1f} scored a second (goal 10: ratio {rate / 10:.2f}); worker CPU "
              f"{cpu / len(scored) * 1000:.0f} ms a submission, gunicorn CPU {web / len(scored) * 1000:.0f} ms; "
              f"load average {os.getloadavg()[0]:.2f}")
    finally:
        stop_worker(server)
        stop_worker(worker)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
