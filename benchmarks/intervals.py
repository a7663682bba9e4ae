"""Benchmark: the cost of a round board's 95% intervals against the board's scoring time.

    .venv/bin/python benchmarks/intervals.py [--submissions 10000] [--ids 5000] [--rank-by corr]

A synthetic signals round (binned targets, a fifth of the submissions heavily tied,
no features) scored by the kind as the worker does (``score_round_version``: corr,
MMC, BMC, CWMM and the pairwise MCWNM/APCWNM), then the board's intervals
(``round_intervals``: 1,000 resamples over the ids, every submission at once) of the ranking
metric ``--rank-by`` (corr, mmc, bmc, cwmm, fnc with 10 features, apcwnm, mcwnm). Prints the CPU
time of each too (both cores, BLAS's threads included).
Goal: the intervals within twice the scoring time. Prints both wall times, their
ratio, peak RSS and the load average (the machine may be shared).
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

from scoring.kinds import get_kind
from scoring.kinds.base import RoundInputs, RoundTruth, Universe


def synthetic_inputs(n_subs: int, n_ids: int, seed: int = 0, features: int = 0) -> RoundInputs:
    rng = np.random.default_rng(seed)
    signal = rng.standard_normal(n_ids)
    target = np.digitize(signal + rng.standard_normal(n_ids), np.quantile(signal, [0.1, 0.3, 0.7, 0.9])) / 4
    values = 0.05 * signal[None, :] + rng.standard_normal((n_subs, n_ids))
    lo, hi = values.min(axis=1, keepdims=True), values.max(axis=1, keepdims=True)
    values = (values - lo) / (hi - lo)
    tied = n_subs // 5
    values[:tied] = np.round(values[:tied] * 4) / 4
    universe = Universe(tuple(f"id{i:05d}" for i in range(n_ids)),
                        {f"feature_{k}": rng.integers(0, 5, n_ids) / 4 for k in range(features)})
    return RoundInputs(universe=universe, keys=list(range(n_subs)), values=values[:, :, None],
                       meta=[{}] * n_subs, stakes=rng.gamma(1.0, 100.0, n_subs),
                       benchmark_models=np.arange(n_subs) < 50,
                       truth=RoundTruth(values=target[:, None], columns=("target",)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--ids", type=int, default=5_000)
    parser.add_argument("--rank-by", default="corr", choices=["corr", "mmc", "bmc", "cwmm", "fnc", "apcwnm", "mcwnm"])
    args = parser.parse_args()
    kind = get_kind("signals")
    inputs = synthetic_inputs(args.submissions, args.ids, features=10 if args.rank_by == "fnc" else 0)
    config = {"rank_by": args.rank_by}
    t0, c0 = time.perf_counter(), time.process_time()
    intervals = kind.round_intervals(inputs, config, seed=1)
    t1, c1 = time.perf_counter(), time.process_time()
    assert intervals is not None
    outcome = kind.score_round_version(inputs, config)
    t2, c2 = time.perf_counter(), time.process_time()
    corr = np.array([np.nan if m.get(args.rank_by) is None else m[args.rank_by] for m in outcome.metrics],
                    dtype=float)
    inside = np.mean((intervals[0] <= corr + 1e-9) & (corr - 1e-9 <= intervals[1]))
    load = os.getloadavg()
    print(f"signals round {args.submissions:,} submissions x {args.ids:,} ids, rank_by {args.rank_by}")
    print(f"scoring (score_round_version): {t2 - t1:.2f} s (CPU {c2 - c1:.2f} s)")
    print(f"intervals (round_intervals, 1,000 resamples): {t1 - t0:.2f} s (CPU {c1 - c0:.2f} s)  "
          f"ratio {(t1 - t0) / (t2 - t1):.2f}, CPU {(c1 - c0) / (c2 - c1):.2f} (goal <= 2)")
    print(f"{args.rank_by} inside its interval: {inside:.1%}; "
          f"median width {np.nanmedian(intervals[1] - intervals[0]):.4f}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    main()
