"""Benchmark: score a synthetic ranking round with score_ranking_horizons and with crowdcent-challenge.

    .venv/bin/python benchmarks/ranking_round.py [--submissions 1000] [--ids 2000] [--reference-sample 30]

A round of ``--ids`` assets, two horizons (10d, 30d), returns turned into rank targets
with 5% of the 30d returns missing, and ``--submissions`` submissions (a fifth of them
heavily tied). Prints our time for the whole round (every metric, meta model included),
crowdcent-challenge 0.2.16's time for the same metrics one submission at a time
(``evaluate_hyperliquid_submission`` + ``evaluate_hyperliquid_uniqueness``, timed on a
sample and extrapolated; the output says so), the largest difference over the sample,
and the process' peak memory. The machine may be shared: the load average is printed.
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

from scoring.metrics_ranking import score_ranking_horizons

HORIZONS = ("10d", "30d")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--ids", type=int, default=2000)
    parser.add_argument("--reference-sample", type=int, default=30)
    args = parser.parse_args()
    from crowdcent_challenge.scoring import evaluate_hyperliquid_submission, evaluate_hyperliquid_uniqueness

    m, n = args.submissions, args.ids
    rng = np.random.default_rng(0)
    drift = rng.standard_normal((n, 2))
    values = drift[None] * rng.random((m, 1, 1)) + rng.standard_normal((m, n, 2))
    values[: m // 5] = np.round(values[: m // 5])  # heavily tied
    returns = pd.DataFrame(drift + rng.standard_normal((n, 2)), columns=list(HORIZONS))
    returns.iloc[rng.choice(n, n // 20, replace=False), 1] = np.nan
    targets = returns.rank() / returns.count()

    print(f"load average {os.getloadavg()[0]:.1f}")
    start = time.perf_counter()
    got = score_ranking_horizons(values, targets.to_numpy(), horizons=HORIZONS, k=40)
    ours = time.perf_counter() - start
    print(f"ours: {m} submissions x {n} ids x 2 horizons, every metric: {ours:.2f} s")

    meta = got.meta_model
    s = {h: targets[h].notna().to_numpy() for h in HORIZONS}
    y = {h: targets[h].to_numpy()[s[h]] for h in HORIZONS}
    sample = rng.choice(m, min(args.reference_sample, m), replace=False)
    worst = 0.0
    start = time.perf_counter()
    for i in sample:
        ranked = [pd.Series(values[i, :, j]).rank(pct=True).to_numpy() for j in range(2)]
        ref = evaluate_hyperliquid_submission(y["10d"], values[i, s["10d"], 0], y["30d"], values[i, s["30d"], 1])
        ref |= evaluate_hyperliquid_uniqueness(y["10d"], ranked[0][s["10d"]], meta[s["10d"], 0],
                                               y["30d"], ranked[1][s["30d"]], meta[s["30d"], 1])
        for h in HORIZONS:
            pairs = [("ndcg", f"ndcg@40_{h}"), ("spearman", f"spearman_{h}"), ("corr_to_meta", f"corr_to_meta_{h}"),
                     ("unique_ndcg", f"unique_ndcg@40_{h}")]
            for name, key in pairs:
                ours_v = got.metrics[f"{name}_{h}"][i]
                if np.isfinite(ours_v):
                    worst = max(worst, abs(ours_v - ref[key]))
    per = (time.perf_counter() - start) / len(sample)
    print(f"crowdcent-challenge, one submission at a time: {per * 1000:.1f} ms each, "
          f"{per * m:.1f} s for {m} (extrapolated from {len(sample)})")
    print(f"ratio {per * m / ours:.1f}x; largest difference over the sample {worst:.2e}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
