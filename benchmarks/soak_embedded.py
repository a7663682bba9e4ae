"""Soak the embedded stack as `make demo` serves it: SQLite, the SQLite broker, `manage.py serve`.

    .venv/bin/python benchmarks/soak_embedded.py [--minutes 60] [--port 8119] [--seed 19]

No DATABASE_URL, no REDIS_URL (both are removed from the environment): a fresh DATA_DIR is
migrated and given the demo (`manage.py demo_setup`, as `make demo` does) plus a small soak
benchmark with no practical daily limit, then `manage.py serve` runs gunicorn, the worker and
beat. For ``--minutes`` the client alternates busy stretches (an upload every 1 to 5 s, for 1 to
4 minutes) with idle ones (1 to 6 minutes: the broker is polled and the sweep runs with nothing
to do, where the old filesystem transport's worker died). Then it waits up to 3 minutes for the
last uploads and prints:

* uploads made, and how many ended scored / failed / not final;
* worker and beat restarts by serve, and any CRITICAL or "Unrecoverable error" line in the log;
* upload-to-scored latency (received_at to scored_at on the server): median, p95, max;
* the load average at the start and the end.

It exits 1 unless every upload ended scored with no worker crash. serve's whole log is kept
(its path is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PY = sys.executable
from benchmarks.serving import multipart_file, serve_start, serve_stop

ROWS = 40


def _env(data_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SQLITE_PATH")}
    env.update(DATA_DIR=data_dir, PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="leaderboard.settings")
    return env


def _manage(env: dict, *args: str) -> str:
    done = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _bundle(directory: Path) -> None:
    rng = random.Random(0)
    directory.mkdir(parents=True)
    (directory / "benchmark.json").write_text(json.dumps({
        "slug": "soak", "title": "Soak", "kind": "properties", "description": "Uploads for the soak.",
        "daily_limit": 100000,
        "config": {"properties": [{"name": "A", "higher_is_better": True, "recall": True}],
                   "weights": {"spearman": 0.6, "recall": 0.4}, "recall_fraction": 0.1}}))
    lines = ["sequence_id,fold,split,A"] + [
        f"s{i:03d},{i % 5},{'public' if i < ROWS * 0.7 else 'private'},{rng.uniform(0, 10):.4f}" for i in range(ROWS)]
    (directory / "cases.csv").write_text("\n".join(lines) + "\n")


def _upload(base: str, key: str, rng: random.Random) -> int:
    csv = "sequence_id,A,fold\n" + "".join(f"s{i:03d},{rng.uniform(0, 10):.4f},{i % 5}\n" for i in range(ROWS))
    body, ctype = multipart_file(csv)
    req = urllib.request.Request(f"{base}/api/benchmarks/soak/submissions/", data=body, method="POST", headers={
        "Authorization": f"Token {key}", "Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())["id"]


def _get(base: str, key: str, pk: int) -> dict:
    req = urllib.request.Request(f"{base}/api/submissions/{pk}/", headers={"Authorization": f"Token {key}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8119")))
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    data_dir = tempfile.mkdtemp(prefix="soak-")
    env = _env(data_dir)
    _manage(env, "migrate", "--noinput")
    _manage(env, "demo_setup")
    _bundle(Path(data_dir) / "soak-bundle")
    _manage(env, "load_benchmark", str(Path(data_dir) / "soak-bundle"))
    key = _manage(env, "apitoken", "soaker", "--create").strip()

    log_path = Path(data_dir) / "serve.log"
    base = f"http://127.0.0.1:{args.port}"
    load_start = os.getloadavg()
    serve = serve_start(port=args.port, env=env, log_path=log_path)
    try:
        print(f"soak: serving {base} from {data_dir}; {args.minutes:g} minutes; load {load_start}", flush=True)
        ids: list[int] = []
        upload_errors: list[str] = []
        end = time.monotonic() + args.minutes * 60
        busy = True
        while time.monotonic() < end:
            stretch_end = min(end, time.monotonic() + (rng.uniform(60, 240) if busy else rng.uniform(60, 360)))
            print(f"soak: {'busy' if busy else 'idle'} until +{(stretch_end - end) / 60 + args.minutes:.1f} min, "
                  f"{len(ids)} uploads so far", flush=True)
            while time.monotonic() < stretch_end:
                if busy:
                    try:
                        ids.append(_upload(base, key, rng))
                    except (OSError, urllib.error.HTTPError) as exc:
                        upload_errors.append(f"{type(exc).__name__}: {exc}")
                    time.sleep(rng.uniform(1, 5))
                else:
                    time.sleep(min(5.0, max(0.0, stretch_end - time.monotonic())))
            busy = not busy
        # The last uploads: every one must end scored.
        wait_until = time.monotonic() + 180
        results: dict[int, dict] = {}
        while time.monotonic() < wait_until:
            for pk in ids:
                if results.get(pk, {}).get("status") not in ("scored", "failed"):
                    results[pk] = _get(base, key, pk)
            if all(r["status"] in ("scored", "failed") for r in results.values()):
                break
            time.sleep(2)
    finally:
        serve_stop(serve)
    load_end = os.getloadavg()
    text = log_path.read_text(errors="replace")
    statuses = [r["status"] for r in results.values()]
    latencies = sorted((_when(r["scored_at"]) - _when(r["created_at"])).total_seconds()
                       for r in results.values() if r["status"] == "scored" and r.get("scored_at"))
    worker_deaths = re.findall(r"the scoring worker \(pid \d+\) (was killed by \w+|exited with code -?\d+)", text)
    beat_deaths = re.findall(r"the beat scheduler \(periodic sweep\) \(pid \d+\) (was killed|exited)", text)
    stalls = text.count("makes no progress")
    critical = [line for line in text.splitlines() if "CRITICAL" in line or "Unrecoverable error" in line]
    print(f"soak: {args.minutes:g} minutes, {len(ids)} uploads ({len(upload_errors)} upload errors)")
    print(f"soak: scored {statuses.count('scored')}, failed {statuses.count('failed')}, "
          f"not final {sum(s not in ('scored', 'failed') for s in statuses)}")
    print(f"soak: worker crashes {len(worker_deaths)}, worker stall restarts {stalls}, beat deaths {len(beat_deaths)}, "
          f"CRITICAL/Unrecoverable lines {len(critical)}, serve exit code {serve.returncode}")
    if latencies:
        p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
        print(f"soak: upload-to-scored median {statistics.median(latencies):.2f} s, p95 {p95:.2f} s, "
              f"max {latencies[-1]:.2f} s")
    print(f"soak: load average start {load_start[0]:.2f}, end {load_end[0]:.2f}; serve log {log_path}")
    for line in (upload_errors[:5] + critical[:5]):
        print("  ", line)
    ok = (ids and statuses.count("scored") == len(ids) and not worker_deaths and not critical
          and not upload_errors and serve.returncode == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
