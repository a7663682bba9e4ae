"""Demo data for the ``ranking`` kind: rounds over 100 generated assets, two horizons (10d, 30d).

Pure Python and numpy, no Django, deterministic. Each asset has a hidden drift per
horizon, partly visible in its past return (momentum). Returns over a horizon are
the drift plus market noise, accumulated day by day, so an interim snapshot is the
return so far (10d complete after ten days, 30d after thirty).

Baselines: ``rank-momentum`` (ranks by the past return) and ``rank-random``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DEMO = "rounds"  # how demo_setup loads this module (leaderboard/demo/__init__.py)
SLUG = "crypto-ranking"
N_IDS = 100
HORIZONS = (10, 30)
ROUNDS = 5  # 1-3 resolved, 4 resolving (daily snapshots), 5 open
INTERIM_DAYS = 6
WINDOW_DAYS = max(HORIZONS)  # the final returns come when the longest horizon ends
BASELINES = ("rank-momentum", "rank-random")
BENCHMARK_MODEL = None  # the ranking kind has no benchmark meta model

META = {
    "slug": SLUG,
    "title": "Asset ranking (10 and 30 days)",
    "kind": "ranking",
    "description": (
        "Each round opens with a universe of 100 assets: give every asset a score per horizon, higher meaning "
        "you expect a higher return over the next 10 and 30 days. After the round closes the realised returns "
        "arrive (interim snapshots, then the final ones) and become rank targets.\n\n"
        "Scored as the CrowdCent challenge scores it: **symmetric NDCG@40** per horizon (your top 40 against "
        "the best returns, your bottom 40 against the worst), their mean is the **score**; beside it Spearman, "
        "and what you add to the meta model of the round. The data are generated for the demo."
    ),
    "daily_limit": 10,
    "config": {"horizons": ["10d", "30d"], "k": 40, "standings_window": 20},
}


def write_bundle(directory: Path) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "benchmark.json").write_text(json.dumps(META, indent=2) + "\n", encoding="utf-8")
    return directory


def hash_name(name: str) -> int:
    return sum((i + 1) * ord(ch) for i, ch in enumerate(name))


class DemoRound:
    """Round ``number``'s universe, the baselines' predictions and its return snapshots."""

    def __init__(self, number: int):
        self.number = number
        rng = np.random.default_rng(2000 + number)
        self.ids = [f"ASSET{i:03d}" for i in range(N_IDS)]
        self.past = rng.standard_normal(N_IDS)  # the past 30-day return, standardised
        common = 0.5 * self.past + rng.standard_normal(N_IDS)
        self.drift = np.column_stack([0.004 * common, 0.003 * (common + 0.5 * rng.standard_normal(N_IDS))])
        self.daily = 0.02 * rng.standard_normal((max(HORIZONS), N_IDS))  # day-by-day market noise

    def universe_csv(self) -> bytes:
        return ("id\n" + "\n".join(self.ids) + "\n").encode()

    def predictions(self, name: str) -> np.ndarray:
        rng = np.random.default_rng(hash_name(name) + self.number)
        noise = rng.standard_normal((N_IDS, len(HORIZONS)))
        if name == "rank-momentum":
            return np.column_stack([self.past, self.past]) + 0.8 * noise
        if name == "rank-random":
            return noise
        return np.column_stack([self.past, self.past]) + 1.5 * noise  # alice: a noisier momentum

    def submission_csv(self, name: str) -> bytes:
        values = self.predictions(name)
        lines = ["id,pred_10d,pred_30d"] + [f"{cid},{a:.5f},{b:.5f}" for cid, (a, b) in zip(self.ids, values)]
        return ("\n".join(lines) + "\n").encode()

    def returns(self, progress: float) -> np.ndarray:
        """Returns so far, ``progress`` of the way through the longest horizon (1.0: final)."""
        days = max(1, round(progress * WINDOW_DAYS))
        out = np.empty((N_IDS, len(HORIZONS)))
        for j, h in enumerate(HORIZONS):
            d = min(days, h)
            out[:, j] = self.drift[:, j] * d + self.daily[:d].sum(axis=0)
        return out

    def truth_csv(self, progress: float) -> bytes:
        values = self.returns(progress)
        lines = ["id,return_10d,return_30d"] + [f"{cid},{a:.6f},{b:.6f}" for cid, (a, b) in zip(self.ids, values)]
        return ("\n".join(lines) + "\n").encode()
