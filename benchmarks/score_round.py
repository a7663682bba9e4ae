"""Benchmark: score a synthetic Signals round with scoring.rounds and with numerai-tools.

    .venv/bin/python benchmarks/score_round.py [--reference-sample 100] [--repeats 3]

A round of 5,000 ids with binned targets (0, .25, .5, .75, 1) and 1,000 then 10,000
submissions, a fifth of them heavily tied (5 distinct values). Prints, in one run:

* corr + MMC for 1,000 submissions: our time (the whole round in one call,
  meta model built from the stakes included) against numerai-tools scoring each
  submission on its own (``numerai_corr`` + ``correlation_contribution``, one
  call each per submission, with the meta model given). The reference is timed on
  a sample of submissions and extrapolated to 1,000; the output says so.
* the ratio, and the largest difference between our scores and the reference's
  over the sampled submissions;
* corr + MMC + BMC for 10,000 x 5,000: wall time, and peak memory (tracemalloc
  peak of the scoring call, and the process' max RSS).

Targets (2-core machine): >= 50x faster than the reference at 1,000 submissions;
10,000 x 5,000 under 2 s with peak memory under 2 GB. The machine may be shared:
the load average is printed with the figures.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring.rounds import score_signals_round

N_IDS = 5_000
TIED_SHARE = 0.2
BENCHMARK_MODELS = 50


def synthetic_round(n_submissions: int, seed: int = 0) -> tuple[pd.DataFrame, pd.Series, pd.Series, pd.Series]:
    """Predictions (ids x submissions), binned target, stakes, benchmark models' stakes."""
    rng = np.random.default_rng(seed)
    ids = pd.Index([f"id{i:05d}" for i in range(N_IDS)])
    signal = rng.standard_normal(N_IDS)
    target_values = np.digitize(signal + rng.standard_normal(N_IDS), np.quantile(signal, [0.1, 0.3, 0.7, 0.9])) / 4
    values = 0.05 * signal[:, None] + rng.standard_normal((N_IDS, n_submissions))
    values = (values - values.min(axis=0)) / (values.max(axis=0) - values.min(axis=0))  # in [0, 1]
    tied = int(n_submissions * TIED_SHARE)
    values[:, :tied] = np.round(values[:, :tied] * 4) / 4  # heavily tied: 5 distinct values
    predictions = pd.DataFrame(values, index=ids, columns=[f"model{j:05d}" for j in range(n_submissions)])
    del values
    target = pd.Series(target_values, index=ids, name="target")
    stakes = pd.Series(rng.gamma(1.0, 100.0, n_submissions), index=predictions.columns)
    benchmark_stakes = stakes.iloc[rng.choice(n_submissions, BENCHMARK_MODELS, replace=False)]
    return predictions, target, stakes, benchmark_stakes


def timed(fn, repeats: int) -> tuple[float, list[float], object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-sample", type=int, default=100, help="submissions the reference scores")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import numerai_tools.scoring as ref

    print(f"machine: {len(os.sched_getaffinity(0))} cores; load average {os.getloadavg()[0]:.2f} at start")

    # ---- 1,000 submissions: ours against the reference, corr + MMC -------------------
    predictions, target, stakes, _ = synthetic_round(1_000)
    ours_median, ours_times, result = timed(
        lambda: score_signals_round(predictions, target, stakes=stakes, metrics=("corr", "mmc")), args.repeats
    )
    ours = result.scores

    gauss = ref.gaussian(ref.tie_kept_rank(predictions))
    meta_model = ref.stake_weight(gauss, stakes).rename("meta_model")  # built once, not timed
    rng = np.random.default_rng(1)
    sample = predictions.columns[np.sort(rng.choice(predictions.shape[1], args.reference_sample, replace=False))]
    largest = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        start = time.perf_counter()
        reference = {
            col: (
                ref.numerai_corr(predictions[[col]], target).iloc[0],
                ref.correlation_contribution(predictions[[col]], meta_model, target).iloc[0],
            )
            for col in sample
        }
        reference_sample_time = time.perf_counter() - start
    for col, (corr, mmc) in reference.items():
        largest = max(largest, abs(ours.loc[col, "corr"] - corr), abs(ours.loc[col, "mmc"] - mmc))
    reference_time = reference_sample_time * predictions.shape[1] / len(sample)

    print(f"\n1,000 submissions x {N_IDS:,} ids, corr + MMC ({int(TIED_SHARE * 100)}% of submissions heavily tied)")
    print(f"  ours, whole round in one call (meta model from stakes included): {ours_median:.3f} s"
          f" (median of {args.repeats}: {', '.join(f'{t:.3f}' for t in ours_times)})")
    print(f"  numerai-tools, one submission at a time (meta model given): {reference_time:.1f} s"
          f" (timed on a sample of {len(sample)} submissions, {reference_sample_time:.2f} s, extrapolated to 1,000)")
    print(f"  speed-up: {reference_time / ours_median:.0f}x (target >= 50x)")
    print(f"  largest difference from numerai-tools over the sample (corr and MMC): {largest:.2e}")
    del predictions, gauss, ours, result

    # ---- 10,000 submissions: corr + MMC + BMC ----------------------------------------
    predictions, target, stakes, benchmark_stakes = synthetic_round(10_000)

    def score_10k():
        return score_signals_round(
            predictions, target, stakes=stakes, benchmark_stakes=benchmark_stakes, metrics=("corr", "mmc", "bmc")
        )

    big_median, big_times, result = timed(score_10k, args.repeats)
    tracemalloc.start()
    score_10k()
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB

    print(f"\n10,000 submissions x {N_IDS:,} ids, corr + MMC + BMC (meta models from stakes included)")
    print(f"  time: {big_median:.3f} s (median of {args.repeats}: {', '.join(f'{t:.3f}' for t in big_times)};"
          " target < 2 s)")
    print(f"  peak memory allocated while scoring (tracemalloc): {traced_peak / 2**20:,.0f} MiB")
    print(f"  process peak RSS (input matrix of {predictions.values.nbytes / 2**20:,.0f} MiB included):"
          f" {max_rss / 2**20:,.0f} MiB (target < 2 GB)")
    print(f"  scores: {result.scores.notna().all(axis=1).sum():,} of {len(result.scores):,} submissions fully scored")
    print(f"\nload average {os.getloadavg()[0]:.2f} at end (other processes share this machine's cores)")


if __name__ == "__main__":
    main()
