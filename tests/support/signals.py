"""Generated signals rounds for tests: a universe with features, submissions, binned targets, stakes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from leaderboard.core.services.benchmarks import benchmark_load_bundle


def signals_benchmark(tmp_path: Path, *, slug: str = "sig", config: dict | None = None, daily_limit: int = 50):
    bundle = tmp_path / slug
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "benchmark.json").write_text(json.dumps({
        "slug": slug, "title": "Signals test", "kind": "signals", "description": "Generated rounds.",
        "daily_limit": daily_limit, "config": config or {}}))
    return benchmark_load_bundle(bundle).benchmark


class SignalsRound:
    """ids, features and a latent signal; files for universe, predictions and targets."""

    def __init__(self, n: int = 200, seed: int = 0, features: int = 3):
        self.rng = np.random.default_rng(seed)
        self.ids = [f"T{seed}-{i:04d}" for i in range(n)]
        self.features = self.rng.standard_normal((n, features))
        self.signal = self.features[:, 0] + 0.5 * self.rng.standard_normal(n)

    def universe_csv(self) -> bytes:
        cols = [f"feature_{j}" for j in range(self.features.shape[1])]
        lines = [",".join(["id", *cols])]
        lines += [",".join([cid, *(repr(float(v)) for v in row)]) for cid, row in zip(self.ids, self.features)]
        return ("\n".join(lines) + "\n").encode()

    def predictions(self, skill: float, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        raw = skill * self.signal + rng.standard_normal(len(self.ids))
        return (pd.Series(raw).rank().to_numpy() - 0.5) / len(raw)

    def submission_csv(self, values: np.ndarray, ids=None) -> bytes:
        ids = self.ids if ids is None else ids
        return ("id,prediction\n" + "\n".join(f"{cid},{float(v)!r}" for cid, v in zip(ids, values)) + "\n").encode()

    def target(self, noise: float, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        latent = self.signal + noise * rng.standard_normal(len(self.ids))
        return np.digitize(latent, np.quantile(latent, [0.05, 0.25, 0.75, 0.95])) / 4

    def truth_csv(self, target: np.ndarray, **extra: np.ndarray) -> bytes:
        lines = [",".join(["id", "target", *extra])]
        for i, cid in enumerate(self.ids):
            cells = ["" if np.isnan(target[i]) else repr(float(target[i]))]
            cells += [repr(float(v[i])) for v in extra.values()]
            lines.append(",".join([cid, *cells]))
        return ("\n".join(lines) + "\n").encode()

    def features_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.features, index=self.ids, columns=[f"feature_{j}" for j in range(self.features.shape[1])])
