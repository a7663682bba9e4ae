"""Demo data for the ``signals`` kind: weekly rounds over a generated stock universe.

Pure Python and numpy, no Django, deterministic. Each round has 500 ids with four
features; a hidden signal is mostly feature_0 and feature_1 plus noise, and the
20-day target is that signal plus market noise, binned 0, .25, .5, .75, 1 with
Numerai's uniformity (10% / 40% / 50%). Daily interim snapshots are the target
"so far": noisier early in the window, converging to the final one.

Baselines: ``sig-momentum`` (feature_0), ``sig-blend`` (a weighted mix, the best),
``sig-value`` (feature_2, no signal) and ``sig-random``; ``sig-blend`` is flagged as
a benchmark model.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DEMO = "rounds"  # how demo_setup loads this module (leaderboard/demo/__init__.py)
SLUG = "weekly-signals"
N_IDS = 500
N_FEATURES = 4
ROUNDS = 5  # 1-3 resolved, 4 resolving (daily snapshots), 5 open
INTERIM_DAYS = 6
BASELINES = ("sig-momentum", "sig-blend", "sig-value", "sig-random")
BENCHMARK_MODEL = "sig-blend"
STAKES = {"sig-momentum": 120.0, "sig-blend": 300.0, "sig-value": 40.0, "sig-random": 10.0}

META = {
    "slug": SLUG,
    "title": "Weekly stock signals",
    "kind": "signals",
    "description": (
        "Each week a universe of 500 stocks opens for predictions: rank them by how you expect their "
        "20-day returns to go (a value in [0, 1] per id). Rounds close on their date; the targets then "
        "arrive day by day, and the final 20-day target resolves the round.\n\n"
        "Scores follow numerai-tools: **CORR** with the target, **MMC** (what you add to the "
        "stake-weighted meta model), **BMC**, **FNC** (corr after removing what the four published "
        "features explain) and how close you are to everyone else. The data are generated for the demo."
    ),
    "daily_limit": 10,
    "config": {"rank_by": "corr", "standings_window": 20},
}


def write_bundle(directory: Path) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "benchmark.json").write_text(json.dumps(META, indent=2) + "\n", encoding="utf-8")
    return directory


class DemoRound:
    """Round ``number``'s universe, the baselines' predictions and its truth snapshots."""

    def __init__(self, number: int):
        self.number = number
        self.rng = np.random.default_rng(1000 + number)
        self.ids = [f"STK{(number * 37 + i) % 900:03d}-{i:03d}" for i in range(N_IDS)]
        self.features = self.rng.standard_normal((N_IDS, N_FEATURES))
        self.signal = 0.6 * self.features[:, 0] + 0.4 * self.features[:, 1] + 0.8 * self.rng.standard_normal(N_IDS)
        self.noise = self.rng.standard_normal(N_IDS)

    def universe_csv(self) -> bytes:
        header = ["id", *(f"feature_{j}" for j in range(N_FEATURES))]
        lines = [",".join(header)]
        for cid, row in zip(self.ids, self.features):
            lines.append(",".join([cid, *(f"{v:.4f}" for v in row)]))
        return ("\n".join(lines) + "\n").encode()

    @staticmethod
    def _unit(values: np.ndarray) -> np.ndarray:
        order = values.argsort().argsort()
        return (order + 0.5) / len(values)

    def predictions(self, name: str) -> np.ndarray:
        rng = np.random.default_rng(hash_name(name) + self.number)
        f = self.features
        raw = {
            "sig-momentum": f[:, 0] + 0.8 * rng.standard_normal(N_IDS),
            "sig-blend": 0.6 * f[:, 0] + 0.4 * f[:, 1] + 0.6 * rng.standard_normal(N_IDS),
            "sig-value": f[:, 2] + 0.5 * rng.standard_normal(N_IDS),
            "sig-random": rng.standard_normal(N_IDS),
            "alice": 0.5 * f[:, 1] + rng.standard_normal(N_IDS),
        }[name]
        return self._unit(raw)

    def submission_csv(self, name: str) -> bytes:
        return ("id,prediction\n" + "\n".join(f"{cid},{v:.6f}" for cid, v in zip(self.ids, self.predictions(name)))
                + "\n").encode()

    def target(self, progress: float) -> np.ndarray:
        """The target as known ``progress`` of the way through the 20 days (1.0: final), binned."""
        rng = np.random.default_rng(5000 + self.number + int(progress * 1000))
        late = (1.0 - progress) * 1.5 * rng.standard_normal(N_IDS)
        latent = self.signal + 0.9 * self.noise + late
        edges = np.quantile(latent, [0.05, 0.25, 0.75, 0.95])  # 10% outer, 40% next, 50% middle
        return np.digitize(latent, edges) / 4

    def truth_csv(self, progress: float) -> bytes:
        return ("id,target\n" + "\n".join(f"{cid},{v:g}" for cid, v in zip(self.ids, self.target(progress)))
                + "\n").encode()

    def stakes_csv(self) -> bytes:
        return ("entrant,stake\n" + "\n".join(f"{name},{stake:g}" for name, stake in STAKES.items())
                + "\nalice,25\n").encode()


def hash_name(name: str) -> int:
    return sum((i + 1) * ord(ch) for i, ch in enumerate(name))
