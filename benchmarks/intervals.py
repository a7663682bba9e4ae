"""Benchmark: the cost of a round board's 95% intervals against the board's scoring time.

    .venv/bin/python benchmarks/intervals.py [--submissions 10000] [--ids 5000] [--rank-by corr]

A synthetic signals round (binned targets, a fifth of the submissions heavily tied,
no features) scored by the kind as the worker does (``score_round_version``: corr,
MMC, BMC, CWMM and the pairwise MCWNM/APCWNM), then the board's intervals
(``round_intervals``: 1,000 resamples over the ids, every submission at once) of the ranking
metric ``--rank-by`` (corr, mmc, bmc, cwmm, fnc with 10 features, apcwnm, mcwnm). Prints the CPU
time of each too (both cores, BLAS's threads included). For mcwnm it runs the close first, as the
worker does (``score_truth_free``: MCWNM and APCWNM, and each row's nearest partners on a board
too large for the exact interval), and counts what finding the partners adds to the close as part
of the interval's time.
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
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring.kinds import get_kind
from scoring.kinds.base import RoundInputs, RoundTruth, Universe
from scoring.kinds.signals import MCWNM_PARTNER_PREFIX
from scoring.rounds import RoundMatrix, score_signals_round


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
    features = 10 if args.rank_by == "fnc" else 0
    inputs = synthetic_inputs(args.submissions, args.ids, features=features)
    config = {"rank_by": args.rank_by}
    close = ""
    if args.rank_by == "mcwnm":
        # As the worker does: the close computes the truth-free metrics and, on a board too large for
        # the exact interval, each row's nearest partners; the resolve's interval reads them. The
        # close's extra cost for the partners counts as the interval's.
        plain = synthetic_inputs(args.submissions, args.ids, features=features)
        matrix = RoundMatrix(plain.take_values()[:, :, 0], pd.Index(plain.universe.ids),
                             pd.Index([str(k) for k in plain.keys]), owned=True)
        t, c = time.perf_counter(), time.process_time()
        score_signals_round(matrix, metrics=kind.truth_free_metrics)
        bare, bare_cpu = time.perf_counter() - t, time.process_time() - c
        del matrix, plain
        closing = synthetic_inputs(args.submissions, args.ids, features=features)
        t, c = time.perf_counter(), time.process_time()
        inputs.truth_free = kind.score_truth_free(closing, config)
        with_partners, with_partners_cpu = time.perf_counter() - t, time.process_time() - c
        del closing
        partners = sum(name.startswith(MCWNM_PARTNER_PREFIX) for name in inputs.truth_free)
        close = (f"close (score_truth_free): {with_partners:.2f} s (CPU {with_partners_cpu:.2f} s) storing "
                 f"{partners} nearest partner(s) a row, against {bare:.2f} s (CPU {bare_cpu:.2f} s) without")
        extra, extra_cpu = max(0.0, with_partners - bare), max(0.0, with_partners_cpu - bare_cpu)
    else:
        extra = extra_cpu = 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    intervals = kind.round_intervals(inputs, config, seed=1)
    t1, c1 = time.perf_counter(), time.process_time()
    assert intervals is not None
    inputs.truth_free = None  # the board's scoring time: every metric, the pairwise ones included
    outcome = kind.score_round_version(inputs, config)
    t2, c2 = time.perf_counter(), time.process_time()
    t1, c1 = t1 + extra, c1 + extra_cpu  # the interval's share of the close, counted as the interval's
    t2, c2 = t2 + extra, c2 + extra_cpu
    corr = np.array([np.nan if m.get(args.rank_by) is None else m[args.rank_by] for m in outcome.metrics],
                    dtype=float)
    inside = np.mean((intervals[0] <= corr + 1e-9) & (corr - 1e-9 <= intervals[1]))
    load = os.getloadavg()
    print(f"signals round {args.submissions:,} submissions x {args.ids:,} ids, rank_by {args.rank_by}")
    if close:
        print(close)
    print(f"scoring (score_round_version, every metric): {t2 - t1:.2f} s (CPU {c2 - c1:.2f} s)")
    print(f"intervals (round_intervals, 1,000 resamples{', + the close' + chr(39) + 's extra' if close else ''}): "
          f"{t1 - t0:.2f} s (CPU {c1 - c0:.2f} s)  "
          f"ratio {(t1 - t0) / (t2 - t1):.2f}, CPU {(c1 - c0) / (c2 - c1):.2f} (goal <= 2)")
    print(f"{args.rank_by} inside its interval: {inside:.1%}; "
          f"median width {np.nanmedian(intervals[1] - intervals[0]):.4f}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    main()
