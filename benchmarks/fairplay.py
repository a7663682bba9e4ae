"""Benchmark: the fair-play search on a large round (the staff's report, scoring/metrics_similarity.py).

    .venv/bin/python benchmarks/fairplay.py [--entrants 10000] [--ids 5000] [--copies 20] [--sample 512]

A round of ``--ids`` ids and ``--entrants`` counted submissions, independent but for ``--copies``
planted near-copies (each a submission plus 2% noise: correlation about 0.9998). Prints the time of
the whole search (sampled candidates, then the exact check), the pairs found against the planted
ones, and the process' peak memory. The machine may be shared: the load average is printed.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring.metrics_similarity import correlated_pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=10_000)
    parser.add_argument("--ids", type=int, default=5_000)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--sample", type=int, default=512)
    parser.add_argument("--threshold", type=float, default=0.99)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    values = rng.random((args.entrants, args.ids))
    planted = set()
    for k in range(args.copies):
        a, b = 2 * k, args.entrants - 1 - k
        values[b] = values[a] + 0.02 * rng.standard_normal(args.ids)
        planted.add((a, b))
    load = os.getloadavg()[0]
    started = time.perf_counter()
    pairs, candidates = correlated_pairs(values, args.threshold, sample=args.sample)
    seconds = time.perf_counter() - started
    found = {(p.a, p.b) for p in pairs}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.entrants:,} entrants x {args.ids:,} ids, sample {args.sample}: {seconds:.1f} s "
          f"(load average {load:.2f} at the start); {len(pairs)} pairs >= {args.threshold} from {candidates} "
          f"candidates; planted {len(planted)}, found {len(found & planted)}, others {len(found - planted)}; "
          f"peak memory {peak:,.0f} MB")


if __name__ == "__main__":
    main()
