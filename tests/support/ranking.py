"""Generated ranking rounds for tests: a universe of assets, per-horizon predictions and returns."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HORIZONS = ("10d", "30d")


def ranking_benchmark(tmp_path: Path, *, slug: str = "rank", config: dict | None = None, daily_limit: int = 50):
    from leaderboard.core.services.benchmarks import benchmark_load_bundle

    bundle = tmp_path / slug
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "benchmark.json").write_text(json.dumps({
        "slug": slug, "title": "Ranking test", "kind": "ranking", "description": "Generated rounds.",
        "daily_limit": daily_limit, "config": config or {}}))
    return benchmark_load_bundle(bundle).benchmark


class RankingRound:
    """ids and a latent drift per horizon; files for universe, predictions and returns."""

    def __init__(self, n: int = 100, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.ids = [f"A{seed}-{i:03d}" for i in range(n)]
        self.drift = self.rng.standard_normal((n, len(HORIZONS)))

    def universe_csv(self) -> bytes:
        return ("id\n" + "\n".join(self.ids) + "\n").encode()

    def predictions(self, skill: float, seed: int) -> np.ndarray:
        """(ids, horizons): skill x drift plus noise, on a free scale (not ranks)."""
        rng = np.random.default_rng(seed)
        return 3.0 * (skill * self.drift + rng.standard_normal(self.drift.shape)) + 1.0

    def submission_csv(self, values: np.ndarray) -> bytes:
        lines = ["id," + ",".join(f"pred_{h}" for h in HORIZONS)]
        lines += [",".join([cid, *(repr(float(v)) for v in row)]) for cid, row in zip(self.ids, values)]
        return ("\n".join(lines) + "\n").encode()

    def returns(self, noise: float, seed: int, missing: int = 0) -> np.ndarray:
        """(ids, horizons) realised returns; ``missing`` ids have no 30d return (NaN)."""
        rng = np.random.default_rng(seed)
        out = 0.02 * (self.drift + noise * rng.standard_normal(self.drift.shape))
        if missing:
            out[rng.choice(len(self.ids), missing, replace=False), 1] = np.nan
        return out

    def truth_csv(self, returns: np.ndarray) -> bytes:
        lines = ["id," + ",".join(f"return_{h}" for h in HORIZONS)]
        for cid, row in zip(self.ids, returns):
            lines.append(",".join([cid, *("" if np.isnan(v) else repr(float(v)) for v in row)]))
        return ("\n".join(lines) + "\n").encode()
