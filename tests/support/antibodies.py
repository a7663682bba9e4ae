"""A synthetic antibody developability benchmark for tests (the demo uses Ginkgo's real GDPa1 data:
leaderboard/demo/properties.py). Tests that need a bundle whose sequences carry a strong, known
signal (a composition model that must clearly beat random) use this one.

Pure Python and numpy, no Django: ``write_bundle`` writes a bundle folder that
``load_benchmark`` reads, ``baseline_submissions`` gives three CSV submissions of
increasing quality for it, each made only from what a participant downloads.
Both are deterministic for a given seed.

Each antibody has a heavy and a light chain: human-like frameworks (a few
germlines, a few mutations) around generated CDRs. Two hidden factors bias the
residues drawn for the CDRs (hydrophobic and charged ones), and the traits that
drive the five measurements are then read off the sequences themselves: the
CDRs' hydrophobic and aromatic residues, their net charge, glycines and
prolines (flexibility, against stability) and unpaired cysteines (against
expression), plus noise for what sequences do not tell. So the properties
correlate the way they do in the lab (sticky antibodies self-associate, elute
late in HIC and bind CHO cells), and a model of the amino-acid composition fitted
on the dev split (the training download) beats chance on the hidden cases.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np

from leaderboard.demo import write_bundle_files

SLUG = "antibody-developability"
N_ANTIBODIES = 300
N_FOLDS = 5
# Splits: dev (labels published: the training set), public and private (ranked, hidden).
SPLIT_SHARES = {"dev": 0.4, "public": 0.36, "private": 0.24}
# A fixed date keeps the bundle byte-identical between runs; far enough ahead for a demo.
CLOSES_AT = "2030-12-31T23:59:59Z"
INPUTS = ["heavy_sequence", "light_sequence"]

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
    "inputs": INPUTS,
    "weights": {"spearman": 0.6, "recall": 0.4},
    "recall_fraction": 0.1,
    "max_upload_bytes": 10 * 1024 * 1024,
}

DESCRIPTION = """\
Predict five developability properties of **300 therapeutic antibodies** from
their heavy and light chain sequences. Good developability (low
self-association, high stability and expression, low polyreactivity) decides
whether a binder can become a drug.

*The sequences and measurements of this demo are synthetic, generated with
realistic ranges and correlations between the assays; what the sequences hold
(hydrophobic, charged and aromatic residues in the CDRs, glycines, prolines,
unpaired cysteines) drives the measurements.*

### Properties

| property | assay | unit | better |
|---|---|---|---|
| `AC-SINS_pH7.4` | affinity-capture self-interaction nanoparticle spectroscopy, pH 7.4 | Δλmax, nm | lower |
| `Tm2` | second melting transition (Fab unfolding), nanoDSF | °C | higher |
| `HIC` | hydrophobic interaction chromatography retention time | min | lower |
| `Titer` | expression titer in HEK293 | mg/L | higher |
| `PR_CHO` | polyreactivity against CHO membrane proteins | score 0-1 | lower |

### Data

- **Cases** (*Cases as CSV*, or `GET /api/benchmarks/antibody-developability/cases/?format=csv`):
  every antibody with its `fold`, `heavy_sequence`, `light_sequence` and `split`.
- **Training set** (*Training set (CSV)*, or `.../training/?format=csv`): the 120 `dev`
  antibodies with their measured values. They never rank.
- The other 180 are `test` antibodies: predict them. 60% of them rank the public
  leaderboard, 40% the private one, revealed after the deadline; which is which
  stays hidden until then, and so does their truth.

### Scoring

Per property, the **Spearman** correlation between your predictions and the
measurements; for `Tm2` and `Titer`, the **top-10% recall** (how many of the 10%
best antibodies your top 10% contains).
**Score = 0.6 × mean Spearman + 0.4 × mean top-10% recall.**

### Rules

- Upload a CSV with exactly the columns `sequence_id`, the five properties and
  `fold`: one row per test antibody (rows for dev antibodies are optional and
  scored on the dev split only). See the file format below and the example file.
- Every value must be a number (no empty cells, no NaN); the `fold` of each row
  must equal the published fold. Files up to 10 MB.
- Each antibody belongs to one of five cross-validation folds (0-4): when you
  produce predictions for the antibodies of a fold, train only on the dev
  antibodies of the other four folds. No test-set information may be used.
- Up to **5 submissions per day** (UTC) per participant; rejected files do not count.
- Submissions close on **31 December 2030, 23:59 UTC**. Until then select the
  submission that should count for the private leaderboard (or your best public
  one counts); the choice closes with the submissions.
"""

# -- sequences ----------------------------------------------------------------------

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
HYDROPHOBIC = set("AILMFVW")
AROMATIC = set("FWY")
POSITIVE, NEGATIVE = set("KR"), set("DE")

# Human-like germline frameworks: (FR1, FR2, FR3, FR4) with fixed CDR1/CDR2 lengths.
_HEAVY = [
    ("EVQLLESGGGLVQPGGSLRLSCAAS", "MSWVRQAPGKGLEWVS", "YYADSVKGRFTISRDNSKNTLYLQMNSLRAEDTAVYYC", "WGQGTLVTVSS", 8, 8),
    ("QVQLVQSGAEVKKPGASVKVSCKAS", "MHWVRQAPGQGLEWMG", "NYAQKFQGRVTMTRDTSTSTVYMELSSLRSEDTAVYYC", "WGQGTTVTVSS", 8, 8),
    ("QVQLQESGPGLVKPSETLSLTCTVS", "WSWIRQPPGKGLEWIG", "NYNPSLKSRVTISVDTSKNQFSLKLSSVTAADTAVYYC", "WGKGTTVTVSS", 8, 7),
]
_LIGHT = [
    ("DIQMTQSPSSLSASVGDRVTITC", "LNWYQQKPGKAPKLLIY", "GVPSRFSGSGSGTDFTLTISSLQPEDFATYYC", "FGQGTKVEIK", 11, 7),
    ("EIVLTQSPGTLSLSPGERATLSC", "LAWYQQKPGQAPRLLIY", "GIPDRFSGSGSGTDFTLTISRLEPEDFAVYYC", "FGGGTKVEIK", 12, 7),
]
# Residues CDRs are drawn from (rich in Ser, Tyr, Gly, Asp, Thr), before an antibody's own bias.
_CDR_BASE = dict(zip(AMINO_ACIDS, [5, 0.6, 7, 3, 4, 9, 2, 3, 5, 4, 1.5, 6, 3, 2, 5, 12, 7, 5, 3, 11]))


def _mutate(rng, seq: str, n: int) -> str:
    """``seq`` with ``n`` random substitutions (somatic mutations of a framework)."""
    chars = list(seq)
    for i in rng.choice(len(chars), size=n, replace=False):
        chars[i] = AMINO_ACIDS[int(rng.integers(len(AMINO_ACIDS)))]
    return "".join(chars)


def _cdr(rng, probs: np.ndarray, length: int) -> str:
    return "".join(AMINO_ACIDS[i] for i in rng.choice(len(AMINO_ACIDS), size=length, p=probs))


def _antibody(rng, bias_h: float, bias_c: float) -> tuple[str, str, list[str]]:
    """A heavy and a light chain, and their CDRs, with CDR residues biased by the two hidden factors."""
    logits = np.log(np.array([_CDR_BASE[a] for a in AMINO_ACIDS]))
    logits += 0.9 * bias_h * np.array([a in HYDROPHOBIC or a in AROMATIC for a in AMINO_ACIDS])
    logits += 0.9 * bias_c * np.array([(a in POSITIVE) - (a in NEGATIVE) for a in AMINO_ACIDS])
    logits += 0.35 * rng.standard_normal(len(AMINO_ACIDS))  # each antibody's own quirks
    probs = np.exp(logits) / np.exp(logits).sum()
    fr1, fr2, fr3, fr4, l1, l2 = _HEAVY[int(rng.integers(len(_HEAVY)))]
    h3_len = int(np.clip(round(12 + 2.5 * (0.5 * bias_h + 0.85 * rng.standard_normal())), 6, 24))
    h1, h2, h3 = _cdr(rng, probs, l1), _cdr(rng, probs, l2), "AR" + _cdr(rng, probs, h3_len)
    heavy = _mutate(rng, fr1, int(rng.integers(0, 3))) + h1 + fr2 + h2 + _mutate(rng, fr3, int(rng.integers(0, 4))) \
        + h3 + fr4
    lfr1, lfr2, lfr3, lfr4, ll1, ll2 = _LIGHT[int(rng.integers(len(_LIGHT)))]
    k1, k2, k3 = _cdr(rng, probs, ll1 - 4), _cdr(rng, probs, ll2), "Q" + _cdr(rng, probs, 8)
    light = _mutate(rng, lfr1, int(rng.integers(0, 3))) + "RASQ" + k1 + lfr2 + k2 + lfr3 + k3 + lfr4
    return heavy, light, [h1, h2, h3, k1, k2, k3]


def _z(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() or 1.0)


def _traits(cdrs: list[list[str]]) -> dict[str, np.ndarray]:
    """Sequence-derived traits (standardised) from each antibody's CDRs."""
    joined = ["".join(c) for c in cdrs]
    count = lambda residues: np.array([sum(ch in residues for ch in s) for s in joined], dtype=float)  # noqa: E731
    return {
        "hydro": _z(count(HYDROPHOBIC) + 0.6 * count(AROMATIC)),
        "charge": _z(count(POSITIVE) - count(NEGATIVE)),
        "flex": _z(count("GP")),
        "cys": count("C"),
    }


def _generate(seed: int) -> dict[str, np.ndarray | list]:
    """Ids, folds, splits, sequences and truth per property, all from ``seed``."""
    rng = np.random.default_rng(seed)
    n = N_ANTIBODIES
    bias_h, bias_c = rng.standard_normal((2, n))
    heavy, light, cdrs = [], [], []
    for i in range(n):
        h, lc, c = _antibody(rng, bias_h[i], bias_c[i])
        heavy.append(h)
        light.append(lc)
        cdrs.append(c)
    t = _traits(cdrs)
    hydro, charge = t["hydro"], t["charge"]
    stab = 0.55 * -t["flex"] - 0.3 * hydro + 0.6 * rng.standard_normal(n)  # flexible, sticky loops destabilise
    expr = -0.6 * np.minimum(t["cys"], 2) + 0.5 * stab + 0.55 * rng.standard_normal(n)  # unpaired Cys hurts

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

    folds = np.arange(n) % N_FOLDS
    rng.shuffle(folds)
    splits = np.array([s for s, share in SPLIT_SHARES.items() for _ in range(round(share * n))])
    rng.shuffle(splits)
    return {
        "ids": [f"ab_{i + 1:04d}" for i in range(n)],
        "folds": folds,
        "splits": splits,
        "heavy": heavy,
        "light": light,
        "truth": truth,
    }


def write_bundle(directory: Path, seed: int = 7) -> Path:
    """Write ``benchmark.json`` and ``cases.csv`` into ``directory`` (created if needed); return it."""
    data = _generate(seed)
    meta = {"slug": SLUG, "title": "Antibody developability", "kind": "properties", "description": DESCRIPTION,
            "daily_limit": 5, "closes_at": CLOSES_AT, "config": CONFIG}
    rows = ([sid, int(data["folds"][i]), data["splits"][i], data["heavy"][i], data["light"][i]]
            + [f"{data['truth'][p][i]:.{DECIMALS[p]}f}" for p in NAMES]
            for i, sid in enumerate(data["ids"]))
    return write_bundle_files(directory, meta, ["sequence_id", "fold", "split", *INPUTS, *NAMES], rows)


# -- what a participant can do with the downloads -----------------------------------

def composition(heavy: list[str], light: list[str]) -> np.ndarray:
    """Amino-acid composition of each antibody (both chains): one column per residue, fractions."""
    out = np.zeros((len(heavy), len(AMINO_ACIDS)))
    for i, seq in enumerate(h + lc for h, lc in zip(heavy, light)):
        for j, a in enumerate(AMINO_ACIDS):
            out[i, j] = seq.count(a) / len(seq)
    return out


def least_squares_predictions(training: list[dict], cases: list[dict]) -> dict[str, np.ndarray]:
    """Per property, least squares on composition (plus an intercept), fitted fold by fold.

    ``training``: rows of the training download (``case_id``, ``fold``, the
    sequences, one value per property, empty when not measured); ``cases``:
    rows of the cases download. For the cases of fold k the model sees only
    the training rows of the other folds, as the rules ask.
    """
    def design(rows):
        x = composition([r["heavy_sequence"] for r in rows], [r["light_sequence"] for r in rows])
        return np.column_stack([np.ones(len(rows)), x])

    folds = np.array([int(r["fold"]) for r in cases])
    x_cases = design(cases)
    out = {}
    for p in NAMES:
        pred = np.zeros(len(cases))
        for k in np.unique(folds):
            rows = [r for r in training if int(r["fold"]) != k and r.get(p) not in (None, "")]
            coef, *_ = np.linalg.lstsq(design(rows), np.array([float(r[p]) for r in rows]), rcond=None)
            pred[folds == k] = x_cases[folds == k] @ coef
        out[p] = pred
    return out


def _read_bundle(directory: Path) -> list[dict[str, str]]:
    with open(Path(directory) / "cases.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def downloads(directory: Path) -> tuple[list[dict], list[dict]]:
    """What a participant downloads, made from the bundle: the training rows (dev, with labels) and
    the cases (every antibody: id, fold, sequences, split ``dev`` or ``test``; no truth)."""
    rows = _read_bundle(directory)
    training = [{"case_id": r["sequence_id"], "fold": r["fold"], **{c: r[c] for c in INPUTS},
                 **{p: r[p] for p in NAMES}} for r in rows if r["split"] == "dev"]
    cases = [{"case_id": r["sequence_id"], "split": "dev" if r["split"] == "dev" else "test", "fold": r["fold"],
              **{c: r[c] for c in INPUTS}} for r in rows]
    return training, cases


def _csv(ids: list[str], folds: list[int], preds: dict[str, np.ndarray]) -> bytes:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["sequence_id", *NAMES, "fold"])
    for i, sid in enumerate(ids):
        w.writerow([sid, *(f"{preds[p][i]:.4f}" for p in NAMES), folds[i]])
    return out.getvalue().encode()


_H3 = re.compile(r"YYC(A[A-Z]+?)W[GA]")


def cdrh3_length(heavy: str) -> int:
    """The CDR-H3 loop's length as read from a heavy chain (from the framework's 'YYC' to 'WG')."""
    found = _H3.search(heavy[80:])
    return len(found.group(1)) if found else 13


def baseline_submissions(directory: Path, seed: int = 7) -> dict[str, bytes]:
    """Three valid CSV submissions for the bundle in ``directory``, worst first, each made only from
    the downloads (``downloads``), with rows for every antibody (dev rows scored on the dev split).

    * ``random``: values drawn at random in each assay's range in the training set (scores near 0).
    * ``CDR-H3 length heuristic``: every property read off the CDR-H3 loop's length
      (longer loop: stickier, less stable, lower titer); weak but real signal.
    * ``composition least squares``: ``least_squares_predictions``, fold by fold; clearly the best.
    """
    training, cases = downloads(directory)
    ids = [c["case_id"] for c in cases]
    folds = [int(c["fold"]) for c in cases]
    rng = np.random.default_rng(seed + 1000)
    n = len(cases)
    ranges = {p: [float(r[p]) for r in training if r[p] != ""] for p in NAMES}
    random_preds = {p: rng.uniform(min(ranges[p]), max(ranges[p]), n) for p in NAMES}

    length = np.array([cdrh3_length(c["heavy_sequence"]) for c in cases], dtype=float)
    jitter = 0.01 * np.arange(n) / n  # a fixed tie-break so equal lengths do not tie
    sign = {"AC-SINS_pH7.4": 1.0, "HIC": 1.0, "PR_CHO": 1.0, "Tm2": -1.0, "Titer": -1.0}
    heuristic = {p: sign[p] * (length + jitter) for p in NAMES}

    return {
        "random": _csv(ids, folds, random_preds),
        "CDR-H3 length heuristic": _csv(ids, folds, heuristic),
        "composition least squares": _csv(ids, folds, least_squares_predictions(training, cases)),
    }
