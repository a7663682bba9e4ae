"""Public reads against the framework's ceiling: each target beside a bare Django view returning its bytes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/lb_ceiling REDIS_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python benchmarks/read_ceiling.py [--entrants 2000] [--seconds 10] [--repeat 2] [--viewer-memo]

Give it a scratch PostgreSQL database (dropped, created, migrated and filled: the demo antibody
benchmark with ``--entrants`` entrants on its board) and a Redis database. gunicorn runs with the
project's config (``leaderboard/gunicorn_conf.py``: 2 workers x 8 gthreads, DEBUG off, the abuse
throttles at their production rates, behind one trusted proxy: each request names a random visitor's
address in X-Forwarded-For). The settings are the site's plus one URL, ``/bench/bare/<name>``
(``benchmarks/read_ceiling_site.py``, never in production): a bare Django view answering fixed bytes,
the bytes the target answered, through the same middleware in the same processes.

Targets: the board API, page 1; the benchmark page, anonymous; the same page logged in. For each,
``--repeat`` times: the bare view, then the target, ``--seconds`` each under 16 keep-alive clients
(wrk with 2 threads when installed, else 16 Python clients in 4 processes). Prints req/s, p50, the
ratio of the target's req/s to the bare view's just before it, and the load average before each run.
Goals (issue 26): board API 0.8, anonymous page 0.5, logged-in page 0.35.

``--viewer-memo`` measures a lever, not the site: each gunicorn process makes the signed-in page's
viewer query once per session and keeps the answer (``read_ceiling_site.memoise_viewer``), the most a
cache of the viewer's row could gain.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import latency

CLIENTS = 16
GOALS = {"api": 0.8, "anonymous": 0.5, "logged in": 0.35}

WRK_SCRIPT = """
local counter = 0
math.randomseed(os.time() + tonumber(string.sub(tostring({}), 8), 16))
request = function()
  wrk.headers["X-Forwarded-For"] = "10." .. math.random(0, 255) .. "." .. math.random(0, 255) .. "." ..
    math.random(1, 254)
  return wrk.format(nil, nil)
end
"""


def _ms(text: str) -> float:
    found = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if found is None:
        print(f"(wrk printed a latency this script cannot read: {text!r})")
        return float("nan")
    value, unit = found.groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}[unit]


def load_wrk(base: str, path: str, *, cookie: str, seconds: float, script: Path) -> dict:
    cmd = ["wrk", "-t", "2", "-c", str(CLIENTS), "-d", f"{seconds:.0f}s", "--latency", "-s", str(script)]
    if cookie:
        cmd += ["-H", f"Cookie: {cookie}"]
    out = subprocess.run([*cmd, base + path], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _ms(re.search(r"^\s*50%\s+(\S+)", out, re.MULTILINE).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    n_errors = (int(bad.group(1)) if bad else 0) + (sum(int(g) for g in errors.groups()) if errors else 0)
    return {"rps": rps, "p50": p50, "errors": n_errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=2000)
    parser.add_argument("--per-entrant", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--python-clients", action="store_true", help="the Python load generator even if wrk is there")
    parser.add_argument("--only", choices=sorted(GOALS), action="append", help="only this target (repeatable)")
    parser.add_argument("--viewer-memo", action="store_true",
                        help="each server process makes the signed-in page's viewer query once per session "
                             "(read_ceiling_site.memoise_viewer): what a viewer cache could gain at most, not the site")
    args = parser.parse_args()
    if not latency._scratch_database(fresh=True):
        print("read_ceiling.py: skipped, set DATABASE_URL to a scratch PostgreSQL database (it is dropped and "
              "created) and REDIS_URL to a Redis database")
        return
    os.environ["SECRET_KEY"] = "bench"  # the session cookie made here must be valid in gunicorn
    latency._setup_django()
    from django.test import Client

    from tests.support.server import start_gunicorn
    from tests.support.worker import stop_worker

    use_wrk = shutil.which("wrk") is not None and not args.python_clients
    print(f"machine: {os.cpu_count()} cores, shared; load average {os.getloadavg()[0]:.2f} at start")
    benchmark, viewer, _ = latency.read_site(args.entrants, args.per_entrant)
    client = Client()
    client.force_login(viewer)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    bare_dir = Path(tempfile.mkdtemp(prefix="read-ceiling-"))
    script = bare_dir / "xff.lua"
    script.write_text(WRK_SCRIPT)
    targets = [("api", f"/api/benchmarks/{benchmark.slug}/leaderboard/", "", "api.json"),
               ("anonymous", f"/b/{benchmark.slug}/", "", "anonymous.html"),
               ("logged in", f"/b/{benchmark.slug}/", cookie, "logged-in.html")]
    targets = [t for t in targets if not args.only or t[0] in args.only]
    generator = "wrk (2 threads)" if use_wrk else "Python clients (4 processes x 4 threads)"
    print(f"board of {args.entrants:,} entrants; PostgreSQL; Redis; gunicorn 2 workers x 8 threads (the project's "
          f"config); {CLIENTS} keep-alive clients by {generator}; {args.seconds:.0f} s per run\n")
    server, base = start_gunicorn(env_overrides={
        "DJANGO_SETTINGS_MODULE": "benchmarks.read_ceiling_site", "BENCH_BARE_DIR": str(bare_dir),
        "TRUSTED_PROXY_COUNT": "1", "DEBUG": "false", "SECRET_KEY": "bench", "ALLOWED_HOSTS": "127.0.0.1",
        "WEB_ACCESS_LOG": "false", **({"BENCH_VIEWER_MEMO": "1"} if args.viewer_memo else {})})
    if args.viewer_memo:
        print("--viewer-memo: the signed-in page's viewer query is made once per session in each process: "
              "not the site as it is\n")

    def run(path: str, cookie_: str) -> dict:
        if use_wrk:
            return load_wrk(base, path, cookie=cookie_, seconds=args.seconds, script=script)
        return latency.load(base, path, cookie=cookie_, seconds=args.seconds)

    print(f"{'target':10s} {'run':>3s} {'load avg':>8s} {'bare req/s':>10s} {'bare p50':>8s} {'req/s':>8s} "
          f"{'p50 ms':>7s} {'ratio':>6s} {'goal':>5s} {'errors':>6s} {'bytes':>7s}")
    summary = []
    try:
        for label, path, cookie_, name in targets:
            req = urllib.request.Request(base + path, headers={"Cookie": cookie_} if cookie_ else {})
            with urllib.request.urlopen(req, timeout=30) as resp:
                body = resp.read()
                if cookie_:  # a browser sends back the CSRF cookie the page set (for its logout form's token)
                    cookie_ = latency.with_set_cookies(cookie_, resp.headers.get_all("Set-Cookie") or [])
            if cookie_ and b"viewer" not in body:
                sys.exit("the logged-in page does not show the viewer: the session cookie was not accepted")
            (bare_dir / name).write_bytes(body)
            with urllib.request.urlopen(f"{base}/bench/bare/{name}", timeout=30) as resp:
                assert resp.read() == body
            ratios = []
            for i in range(args.repeat):
                load_avg = os.getloadavg()[0]
                bare = run(f"/bench/bare/{name}", cookie_)
                real = run(path, cookie_)
                ratio = real["rps"] / bare["rps"]
                ratios.append(ratio)
                print(f"{label:10s} {i + 1:3d} {load_avg:8.2f} {bare['rps']:10.1f} {bare['p50']:8.1f} "
                      f"{real['rps']:8.1f} {real['p50']:7.1f} {ratio:6.2f} {GOALS[label]:5.2f} "
                      f"{bare['errors'] + real['errors']:6d} {len(body):7d}", flush=True)
            summary.append((label, statistics.median(ratios)))
            time.sleep(1)
    finally:
        stop_worker(server)
    print("\nmedian ratio to the bare view: " + "; ".join(
        f"{label} {ratio:.2f} (goal {GOALS[label]:.2f}: {'met' if ratio >= GOALS[label] else 'not met'})"
        for label, ratio in summary))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
