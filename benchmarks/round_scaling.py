"""How resolving a signals round grows with its submissions: time, worker CPU and peak memory.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/leaderboard_round_bench \\
    REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python benchmarks/round_scaling.py \\
        [--sizes 2500,5000,10000,20000] [--ids 5000] [--save DIR] [DIR/SIZE.json ...]

Runs ``benchmarks/round_resolve.py --uploads 0`` once per size, each in a fresh scratch
database (the one named, dropped and created again) with a fresh real worker: the close (the
worker computes MCWNM and APCWNM, every pair of submissions, and stores them), then truth_load
of the final truth to a complete board; for each, the wall time, the worker's CPU time (all its
threads; PostgreSQL's own work is not in it) and its peak memory (VmHWM). Then fits
``figure = c * submissions ** k`` by least squares on the logarithms and prints each exponent
k: of the close, of the resolve, and of the whole round (the two times summed, the larger peak). ``--pairwise-at-resolve``: the resolve computes MCWNM and APCWNM itself (as before they
moved to the close, or when the close's task was lost).

Goals (issue 26, this 2-core machine): 20,000 x 5,000 within 30 s and 2 GB; exponents of at
most 1.1 from 2,500 to 50,000 submissions (``--sizes 2500,5000,10000,20000,50000``; the
50,000 run stores 2 GB of arrays and takes a few minutes to fill; ``--save DIR`` keeps each run's
figures, and giving those files again reports and fits them beside new sizes, e.g.
``--sizes 50000 DIR/2500.json DIR/5000.json``). The machine may be shared:
each run prints its load average, and the CPU time moves far less than the wall time.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def exponent(sizes: list[int], values: list[float]) -> float:
    xs, ys = [math.log(s) for s in sizes], [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2500,5000,10000,20000")
    parser.add_argument("--ids", type=int, default=5000)
    parser.add_argument("--save", help="keep each run's figures as SIZE.json in this folder")
    parser.add_argument("runs", nargs="*", help="figures of earlier runs (--save) to report and fit with these")
    parser.add_argument("--pairwise-at-resolve", action="store_true",
                        help="the resolve computes MCWNM and APCWNM too (what the close stored is dropped)")
    args = parser.parse_args()
    if "postgres" not in os.environ.get("DATABASE_URL", "") or not os.environ.get("REDIS_URL"):
        sys.exit("set DATABASE_URL (a scratch PostgreSQL database) and REDIS_URL (a scratch Redis database)")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else []
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
    runs = [json.loads(Path(p).read_text()) for p in args.runs]
    for size in sizes:
        out = Path(tempfile.mkdtemp(prefix="round-scaling-")) / "figures.json"
        subprocess.run([sys.executable, str(HERE / "round_resolve.py"), "--submissions", str(size), "--ids",
                        str(args.ids), "--uploads", "0", "--json", str(out),
                        *(["--pairwise-at-resolve"] if args.pairwise_at_resolve else [])], check=True)
        runs.append(json.loads(out.read_text()))
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            (Path(args.save) / f"{size}.json").write_text(out.read_text())
    runs.sort(key=lambda r: r["submissions"])

    mode = "the resolve computes MCWNM/APCWNM too" if args.pairwise_at_resolve else "MCWNM/APCWNM at the close"
    print(f"\nsignals round, {args.ids:,} ids, real worker (solo pool); {mode}")
    print("| submissions | load at start / end | close: pairwise stored (worker CPU, peak) |"
          " truth_load to board | worker CPU | peak memory (VmHWM) | worker stages (wall; CPU) |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        stages = r["stages"].split("(", 1)[-1].rstrip(")") if "(" in r["stages"] else ""
        print(f"| {r['submissions']:,} | {r['load_start']:.2f} / {r['load_end']:.2f} | {r['close_seconds']:.1f} s "
              f"({r['close_cpu']:.1f} s, {r['close_peak_mb']:,.0f} MB) | {r['seconds']:.1f} s | "
              f"{r['worker_cpu']:.1f} s | {r['peak_mb']:,.0f} MB | {stages} |")
    if len(runs) >= 2:
        n = [r["submissions"] for r in runs]
        for what, keys in (("resolve", ("seconds", "worker_cpu", "peak_mb")),
                           ("close", ("close_seconds", "close_cpu", "close_peak_mb"))):
            fits = [exponent(n, [r[key] for r in runs]) for key in keys]
            print(f"fitted exponents of the {what} over {n[0]:,} to {n[-1]:,} submissions (goal <= 1.1): "
                  f"time {fits[0]:.2f}, worker CPU {fits[1]:.2f}, peak memory {fits[2]:.2f}")
        whole = [exponent(n, [r["close_seconds"] + r["seconds"] for r in runs]),
                 exponent(n, [r["close_cpu"] + r["worker_cpu"] for r in runs]),
                 exponent(n, [max(r["close_peak_mb"], r["peak_mb"]) for r in runs])]
        print(f"fitted exponents of the whole round (close, then resolve: times summed, the larger peak) "
              f"(goal <= 1.1): time {whole[0]:.2f}, worker CPU {whole[1]:.2f}, peak memory {whole[2]:.2f}")
    for r in runs:
        if r["submissions"] == 20_000:
            print(f"20,000 submissions: resolve {r['seconds']:.1f} s (goal 30 s: ratio {r['seconds'] / 30:.2f}), "
                  f"peak {max(r['peak_mb'], r['close_peak_mb']):,.0f} MB (goal 2,048 MB: ratio "
                  f"{max(r['peak_mb'], r['close_peak_mb']) / 2048:.2f})")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
