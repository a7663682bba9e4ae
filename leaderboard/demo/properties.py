"""Demo data for the ``properties`` kind: a synthetic antibody developability benchmark.

Pure Python and numpy, no Django: ``write_bundle`` writes a bundle folder that
``load_benchmark`` reads, ``baseline_submissions`` gives three CSV submissions of
increasing quality for it. Both are deterministic for a given seed.

The values are synthetic but shaped like the real assays: four hidden traits
per antibody (hydrophobicity, stability, expression, charge) drive the five
measurements with noise, so the properties correlate the way they do in the lab
(sticky antibodies self-associate, elute late in HIC and bind CHO cells) and a
model that recovers the traits scores better than one that does not. A hidden
CDR-H3 length, loosely tied to hydrophobicity, feeds the heuristic baseline.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from leaderboard.demo import write_bundle_files

SLUG = "antibody-developability"
N_ANTIBODIES = 250
N_FOLDS = 5
PUBLIC_SHARE = 0.7

PROPERTIES = [
    {"name": "AC-SINS_pH7.4", "higher_is_better": False, "recall": False},
    {"name": "Tm2", "higher_is_better": True, "recall": True},
    {"name": "HIC", "higher_is_better": False, "recall": False},
    {"name": "Titer", "higher_is_better": True, "recall": True},
    {"name": "PR_CHO", "higher_is_better": False, "recall": False},
]
NAMES = [p["name"] for p in PROPERTIES]
DECIMALS = {"AC-SINS_pH7.4": 2, "Tm2": 2, "HIC": 3, "Titer": 1, "PR_CHO": 3}

CONFIG = {
    "properties": PROPERTIES,
    "weights": {"spearman": 0.6, "recall": 0.4},
    "recall_fraction": 0.1,
    "max_upload_bytes": 10 * 1024 * 1024,
}

DESCRIPTION = """\
Predict five developability properties of **250 therapeutic antibodies** from
their sequences. Good developability (low self-association, high stability and
expression, low polyreactivity) decides whether a binder can become a drug.

*The data of this demo are synthetic, generated with realistic ranges and
correlations between the assays.*

### Properties

| property | assay | unit | better |
|---|---|---|---|
| `AC-SINS_pH7.4` | affinity-capture self-interaction nanoparticle spectroscopy, pH 7.4 | Δλmax, nm | lower |
| `Tm2` | second melting transition (Fab unfolding), nanoDSF | °C | higher |
| `HIC` | hydrophobic interaction chromatography retention time | min | lower |
| `Titer` | expression titer in HEK293 | mg/L | higher |
| `PR_CHO` | polyreactivity against CHO membrane proteins | score 0-1 | lower |

### Scoring

Per property, the **Spearman** correlation between your predictions and the
measurements; for `Tm2` and `Titer`, the **top-10% recall** (how many of the 10%
best antibodies your top 10% contains).
**Score = 0.6 × mean Spearman + 0.4 × mean top-10% recall.**

### Rules

- Upload a CSV with exactly the columns `sequence_id`, the five properties and
  `fold`, one row per antibody (see the file format below and the example file).
- Every value must be a number (no empty cells, no NaN); the `fold` of each row
  must equal the published fold. Files up to 10 MB.
- Each antibody belongs to one of five cross-validation folds (0-4): when you
  produce predictions for the antibodies of a fold, train only on the other
  four folds. No test-set information may be used for training.
- Up to **5 submissions per day** (UTC) per participant; rejected files do not count.
- The public leaderboard scores 70% of the antibodies. The other 30% form the
  private split, scored from the same files and revealed at the end; the final
  ranking uses the private score of your selected submission (or of your best
  public one if you select none).
"""


def _generate(seed: int) -> dict[str, np.ndarray | list]:
    """Ids, folds, splits, truth per property and the hidden CDR-H3 length, all from ``seed``."""
    rng = np.random.default_rng(seed)
    n = N_ANTIBODIES
    hydro, stab, expr, charge = rng.standard_normal((4, n))
    stab = 0.85 * stab - 0.3 * hydro  # hydrophobic patches tend to destabilise
    expr = 0.8 * expr + 0.35 * stab  # stable antibodies express better

    def noise(scale: float = 1.0) -> np.ndarray:
        return scale * rng.standard_normal(n)

    acsins = 1.0 + 4.0 * np.exp(0.75 * (0.7 * hydro + 0.45 * charge) + noise(0.45))
    hic = 9.2 + 1.1 * (0.8 * hydro + 0.1 * charge) + noise(0.55)
    pr_cho = 1.0 / (1.0 + np.exp(-(-1.5 + 0.85 * (0.55 * hydro + 0.6 * charge) + noise(0.45))))
    tm2 = 74.0 + 3.6 * stab + noise(1.6)
    titer = np.exp(np.log(170.0) + 0.35 * (0.75 * expr - 0.2 * hydro) + noise(0.2))
    truth = {
        "AC-SINS_pH7.4": np.clip(acsins, 0.0, 40.0),
        "Tm2": np.clip(tm2, 60.0, 90.0),
        "HIC": np.clip(hic, 6.0, 15.0),
        "Titer": np.clip(titer, 15.0, 600.0),
        "PR_CHO": pr_cho,
    }
    truth = {k: np.round(v, DECIMALS[k]) for k, v in truth.items()}
    cdrh3_length = np.clip(np.round(13.0 + 2.3 * (0.55 * hydro + 0.85 * rng.standard_normal(n))), 6, 24)

    folds = np.arange(n) % N_FOLDS
    rng.shuffle(folds)
    order = rng.permutation(n)
    public = np.zeros(n, dtype=bool)
    public[order[: round(PUBLIC_SHARE * n)]] = True
    ids = [f"ab_{i + 1:04d}" for i in range(n)]
    return {
        "ids": ids,
        "folds": folds,
        "splits": np.where(public, "public", "private"),
        "truth": truth,
        "cdrh3_length": cdrh3_length,
    }


def write_bundle(directory: Path, seed: int = 7) -> Path:
    """Write ``benchmark.json`` and ``cases.csv`` into ``directory`` (created if needed); return it."""
    data = _generate(seed)
    meta = {"slug": SLUG, "title": "Antibody developability", "kind": "properties", "description": DESCRIPTION,
            "daily_limit": 5, "config": CONFIG}
    rows = ([sid, int(data["folds"][i]), data["splits"][i]]
            + [f"{data['truth'][p][i]:.{DECIMALS[p]}f}" for p in NAMES]
            for i, sid in enumerate(data["ids"]))
    return write_bundle_files(directory, meta, ["sequence_id", "fold", "split", *NAMES], rows)


def _read_cases(directory: Path) -> tuple[list[str], list[int], dict[str, np.ndarray]]:
    with open(Path(directory) / "cases.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    ids = [r["sequence_id"] for r in rows]
    folds = [int(r["fold"]) for r in rows]
    truth = {p: np.array([float(r[p]) for r in rows]) for p in NAMES}
    return ids, folds, truth


def _csv(ids: list[str], folds: list[int], preds: dict[str, np.ndarray]) -> bytes:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["sequence_id", *NAMES, "fold"])
    for i, sid in enumerate(ids):
        w.writerow([sid, *(f"{preds[p][i]:.4f}" for p in NAMES), folds[i]])
    return out.getvalue().encode()


def baseline_submissions(directory: Path, seed: int = 7) -> dict[str, bytes]:
    """Three valid CSV submissions for the bundle in ``directory``, worst first.

    * ``random``: values drawn at random in each assay's range (scores near 0).
    * ``sequence-length heuristic``: every property read off the CDR-H3 length
      (longer loop: stickier, less stable, lower titer); weak but real signal.
    * ``ridge-like noisy oracle``: the measurements shrunk towards their mean
      plus noise, as a fitted linear model would give; clearly the best.
    """
    ids, folds, truth = _read_cases(directory)
    data = _generate(seed)
    length_by_id = dict(zip(data["ids"], data["cdrh3_length"]))
    rng = np.random.default_rng(seed + 1000)
    n = len(ids)

    random_preds = {p: rng.uniform(truth[p].min(), truth[p].max(), n) for p in NAMES}

    length = np.array([length_by_id.get(sid, 13.0) for sid in ids], dtype=float)
    jitter = 0.01 * np.arange(n) / n  # a fixed tie-break so equal lengths do not tie
    sign = {"AC-SINS_pH7.4": 1.0, "HIC": 1.0, "PR_CHO": 1.0, "Tm2": -1.0, "Titer": -1.0}
    heuristic = {p: sign[p] * (length + jitter) for p in NAMES}

    oracle = {}
    for p in NAMES:
        t = truth[p]
        z = (t - t.mean()) / (t.std() or 1.0)
        oracle[p] = t.mean() + t.std() * (0.8 * z + 0.55 * rng.standard_normal(n))

    return {
        "random": _csv(ids, folds, random_preds),
        "sequence-length heuristic": _csv(ids, folds, heuristic),
        "ridge-like noisy oracle": _csv(ids, folds, oracle),
    }
