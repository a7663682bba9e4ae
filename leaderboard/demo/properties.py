"""Demo data for the ``properties`` kind: Ginkgo's GDPa1 antibodies, real sequences and measurements.

Pure Python and numpy, no Django. The data is Ginkgo Bioworks' GDPa1 v1.2
(2025-08-14) and five of the published cross-validation baselines, from the
public repository ginkgobioworks/abdev-benchmark under the MIT licence; the
copy this module reads, its licence and how it was made are in
``published/abdev/`` beside it (README.md there).

``write_bundle`` writes a bundle folder that ``load_benchmark`` reads: the 246
antibodies with their heavy and light variable chains (the public inputs), the
fold Ginkgo's benchmark uses (``hierarchical_cluster_IgG_isotype_stratified_fold``)
and the five measured properties (empty where GDPa1 has no measurement).

The split is ours, by fold, so that no cluster of near-identical sequences is
both trained on and ranked: folds 0 and 1 are ``dev`` (103 antibodies, their
measurements published as the training set), folds 2 and 3 ``public`` (94) and
fold 4 ``private`` (49). Scoring follows Ginkgo's evaluation: Spearman per
property and top-10% recall on all five, the lowest values being the top where
lower is better (HIC, PR_CHO, AC-SINS), with k = int(0.1 x n) (``recall_k:
floor``).

``baseline_submissions`` gives the published baselines as upload files: every
antibody's cross-validation prediction (dev rows are scored on the dev split).
Ginkgo trained those predictions fold by fold on all of GDPa1, our ranked folds
included, so they are a reference point, not entries that kept to this demo's
split.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from leaderboard.demo import write_bundle_files

DEMO = "bundle"  # how demo_setup loads this module (leaderboard/demo/__init__.py)
SLUG = "antibody-developability"
SOURCE = Path(__file__).resolve().parent / "published" / "abdev"
GDPA1 = SOURCE / "GDPa1_v1.2_20250814.csv"
PREDICTIONS = SOURCE / "predictions"
FOLD_COLUMN = "hierarchical_cluster_IgG_isotype_stratified_fold"
# Our split, by Ginkgo's cluster folds (see the module docstring).
SPLIT_OF_FOLD = {0: "dev", 1: "dev", 2: "public", 3: "public", 4: "private"}
# A fixed date keeps the bundle byte-identical between runs; far enough ahead for a demo.
CLOSES_AT = "2030-12-31T23:59:59Z"
INPUTS = ["heavy_sequence", "light_sequence"]
INPUT_SOURCE = {"heavy_sequence": "vh_protein_sequence", "light_sequence": "vl_protein_sequence"}

# Ginkgo's ASSAY_HIGHER_IS_BETTER; their recall is computed on all five properties.
PROPERTIES = [
    {"name": "HIC", "higher_is_better": False, "recall": True},
    {"name": "Tm2", "higher_is_better": True, "recall": True},
    {"name": "Titer", "higher_is_better": True, "recall": True},
    {"name": "PR_CHO", "higher_is_better": False, "recall": True},
    {"name": "AC-SINS_pH7.4", "higher_is_better": False, "recall": True},
]
NAMES: list[str] = [str(p["name"]) for p in PROPERTIES]

CONFIG = {
    "properties": PROPERTIES,
    "inputs": INPUTS,
    "weights": {"spearman": 0.6, "recall": 0.4},
    "recall_fraction": 0.1,
    "recall_k": "floor",
    "max_upload_bytes": 10 * 1024 * 1024,
}

# The published baselines shipped here (file stem -> what it is, from the abdev-benchmark repository).
BASELINES = {
    "moe_baseline": "MOE descriptors, a model per property",
    "esm2_ridge": "ridge regression on ESM-2 protein language model embeddings",
    "onehot_ridge": "ridge regression on one-hot encoded aligned sequences",
    "tap_linear": "linear model on Therapeutic Antibody Profiler (TAP) descriptors",
    "random_predictor": "random values: the floor every model should clear",
}

CREDIT = ("GDPa1 v1.2 and baseline predictions by Ginkgo Bioworks, from "
          "[github.com/ginkgobioworks/abdev-benchmark](https://github.com/ginkgobioworks/abdev-benchmark), MIT licence, "
          "Copyright (c) 2025 Antibody Developability Benchmark Contributors; the split is ours")

DESCRIPTION = """\
Predict five developability properties of **246 therapeutic antibodies** (approved
drugs and clinical candidates) from the sequences of their heavy and light variable
chains. Good developability (low self-association and hydrophobicity, high
stability and expression, low polyreactivity) decides whether a binder can become
a drug.

**Real data.** The sequences and measurements are Ginkgo Bioworks' *GDPa1* data set
(version 1.2, 2025-08-14), and the baseline entrants are the cross-validation
predictions Ginkgo published for five baseline models, all from
[github.com/ginkgobioworks/abdev-benchmark](https://github.com/ginkgobioworks/abdev-benchmark)
under the MIT licence (Copyright (c) 2025 Antibody Developability Benchmark
Contributors). The scoring follows their evaluation code. This demo is not
Ginkgo's competition: the split below and the leaderboard are ours.

### Properties

| property | assay | better |
|---|---|---|
| `HIC` | hydrophobic interaction chromatography retention time (min) | lower |
| `Tm2` | second melting transition, Fab unfolding (°C) | higher |
| `Titer` | expression titer (mg/L) | higher |
| `PR_CHO` | polyreactivity against CHO cell membrane proteins | lower |
| `AC-SINS_pH7.4` | self-association, AC-SINS at pH 7.4 (Δλmax, nm) | lower |

Not every antibody was measured for every property (Tm2 and PR_CHO have the most
gaps): an antibody without a measurement is left out of that property's metrics.

### The split

- **Cases** (*Cases as CSV*, or `GET /api/benchmarks/antibody-developability/cases/?format=csv`):
  every antibody with its `fold`, `heavy_sequence`, `light_sequence` and `split`.
- Each antibody keeps the fold of Ginkgo's benchmark (0-4: clusters of similar
  sequences, stratified by IgG isotype). We split by fold, so near-identical
  sequences never sit on both sides: folds 0 and 1 are the **training set**
  (*Training set (CSV)*: 103 `dev` antibodies with their measurements; they never
  rank), folds 2 and 3 rank the **public** leaderboard (94 antibodies) and fold 4
  the **private** one (49), revealed after the deadline. Which test antibodies are
  public stays hidden until then, and so does their truth.

Metrics follow Ginkgo's evaluation: Spearman per property and top-10% recall on all
five, with k = int(0.1 × n) over the measured antibodies (the exact rule is under
*Rules and file format* below).

### Baselines

The five baseline entrants are Ginkgo's published cross-validation predictions
(each fold predicted by a model trained on the other four folds of all of GDPa1,
so they saw our ranked folds in training: a reference point, not rivals that kept
to this split): MOE descriptors, ESM-2 embeddings with ridge regression, one-hot
sequences with ridge regression, TAP descriptors with a linear model, and random
values.

### Competition rules

- What a file must hold is under *Rules and file format* below (and in the example file).
- Train only on the training set; no other measurement of these antibodies may be used.
- Up to **5 submissions per day** (UTC) per participant; rejected files do not count.
- Submissions close on **31 December 2030, 23:59 UTC**. Until then select the
  submission that should count for the private leaderboard (or your best public
  one counts); the choice closes with the submissions.
"""


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def antibodies() -> list[dict[str, str]]:
    """GDPa1's rows as published (cells as text, unchanged), in its order."""
    return _rows(GDPA1)


def write_bundle(directory: Path) -> Path:
    """Write ``benchmark.json`` and ``cases.csv`` into ``directory`` (created if needed); return it.

    Measurements are copied as GDPa1 writes them (text), empty where not measured.
    """
    meta = {"slug": SLUG, "title": "Antibody developability (GDPa1)", "kind": "properties",
            "description": DESCRIPTION, "credit": CREDIT, "daily_limit": 5, "closes_at": CLOSES_AT, "config": CONFIG}
    rows = ([r["antibody_name"], r[FOLD_COLUMN], SPLIT_OF_FOLD[int(r[FOLD_COLUMN])],
             *(r[INPUT_SOURCE[c]] for c in INPUTS), *(r[p] for p in NAMES)] for r in antibodies())
    return write_bundle_files(directory, meta, ["sequence_id", "fold", "split", *INPUTS, *NAMES], rows)


# The same benchmark as a competition that has ended but still scores uploads (late_submissions):
# three baselines were in on time; an upload after the deadline is scored, marked late, never ranked.
LATE_SLUG = "antibody-developability-late"
LATE_CLOSED_AT = "2025-06-30T23:59:59Z"  # fixed and past, so the bundle is byte-identical between runs
LATE_ON_TIME = ("moe_baseline", "onehot_ridge", "random_predictor")
LATE_UPLOAD = "esm2_ridge"  # bob's upload after the deadline
LATE_DESCRIPTION = (
    "The antibody developability benchmark as a competition that has **ended**: its deadline "
    f"({LATE_CLOSED_AT[:10]}) has passed, and it still takes **late submissions**. A late upload is "
    "scored like any other, so you see how it would have done, but it is marked *late* and never "
    "ranked: the board holds the entries that were in on time.\n\n" + DESCRIPTION)


def write_late_bundle(directory: Path, *, closed: bool = True) -> Path:
    """The closed copy (``LATE_SLUG``) with ``"late_submissions": true``. ``closed=False`` leaves the
    deadline out (the round keeps the one it has), so the on-time uploads can go in first."""
    write_bundle(directory)
    meta_file = Path(directory) / "benchmark.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    meta.update({"slug": LATE_SLUG, "title": "Antibody developability (GDPa1), ended: late submissions",
                 "description": LATE_DESCRIPTION, "config": {**CONFIG, "late_submissions": True}})
    if closed:
        meta["closes_at"] = LATE_CLOSED_AT
    else:
        del meta["closes_at"]
    meta_file.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return Path(directory)


def _csv(ids: list[str], folds: list[str], columns: dict[str, list[str]]) -> bytes:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["sequence_id", *NAMES, "fold"])
    for i, sid in enumerate(ids):
        w.writerow([sid, *(columns[p][i] for p in NAMES), folds[i]])
    return out.getvalue().encode()


def baseline_submissions(directory: Path | None = None) -> dict[str, bytes]:
    """The published baselines as upload files (``BASELINES`` order), one row per antibody in
    GDPa1's order, values exactly as Ginkgo published them. ``directory`` (the bundle) is unused:
    the files come from the published predictions."""
    order = [r["antibody_name"] for r in antibodies()]
    out = {}
    for stem in BASELINES:
        rows = {r["antibody_name"]: r for r in _rows(PREDICTIONS / f"{stem}.csv")}
        out[stem] = _csv(order, [rows[a][FOLD_COLUMN] for a in order],
                         {p: [rows[a][p] for a in order] for p in NAMES})
    return out


# -- what a participant can do with the downloads -----------------------------------

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"


def composition(heavy: list[str], light: list[str]) -> np.ndarray:
    """Amino-acid composition of each antibody (both chains): one column per residue, fractions."""
    out = np.zeros((len(heavy), len(AMINO_ACIDS)))
    for i, seq in enumerate(h + lc for h, lc in zip(heavy, light)):
        for j, a in enumerate(AMINO_ACIDS):
            out[i, j] = seq.count(a) / len(seq)
    return out


def composition_submission(directory: Path) -> bytes:
    """A participant's upload made from the downloads alone (the bundle's dev rows and the cases):
    per property, least squares on amino-acid composition plus an intercept, fitted on the
    training antibodies of the other folds, for every test antibody (the model of docs/api.md)."""
    rows = _rows(Path(directory) / "cases.csv")
    train = [r for r in rows if r["split"] == "dev"]
    test = [r for r in rows if r["split"] != "dev"]

    def design(subset):
        x = composition([r["heavy_sequence"] for r in subset], [r["light_sequence"] for r in subset])
        return np.column_stack([np.ones(len(subset)), x])

    folds = np.array([int(r["fold"]) for r in test])
    x_test = design(test)
    columns: dict[str, list[str]] = {}
    for p in NAMES:
        pred = np.zeros(len(test))
        for k in np.unique(folds):
            fit = [r for r in train if int(r["fold"]) != k and r[p] != ""]
            coef, *_ = np.linalg.lstsq(design(fit), np.array([float(r[p]) for r in fit]), rcond=None)
            pred[folds == k] = x_test[folds == k] @ coef
        columns[p] = [f"{v:.6g}" for v in pred]
    return _csv([r["sequence_id"] for r in test], [r["fold"] for r in test], columns)
