"""Generated Signals rounds for the parity tests (pure: no database, no Django models).

Every expected value in these tests comes from the reference packages
(numerai-tools 0.7.2, crowdcent-challenge 0.2.16) or from a formula written out in
the test, never from our own output.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

SIZES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 25, 120)
TARGET_BINS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


@dataclass
class SignalsCase:
    seed: int
    predictions: pd.DataFrame  # ids in shuffled order, one column per kind of submission
    target: pd.Series  # binned, may carry extra ids and a NaN, shuffled
    meta_model: pd.Series  # tied values, may carry extra ids and a NaN


def ids(n: int, prefix: str = "id") -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(n)]


def signals_case(seed: int) -> SignalsCase:
    rng = np.random.default_rng(seed)
    n = int(SIZES[seed % len(SIZES)])
    names = ids(n)
    with_nan = rng.random(n)
    with_nan[rng.random(n) < 0.15] = np.nan
    columns = {
        "continuous": rng.random(n),
        "binned": rng.integers(0, 3, n) / 2,  # heavy ties
        "two_values": rng.choice([0.1, 0.9], n),
        "constant": np.full(n, 0.5),
        "with_nan": with_nan,
        "negative": rng.standard_normal(n) - 0.5,
    }
    predictions = pd.DataFrame(columns, index=names).iloc[rng.permutation(n)]

    extra = ids(int(rng.integers(0, 3)), prefix="extra")  # target ids nobody predicted
    target = pd.Series(rng.choice(TARGET_BINS, n + len(extra), p=[0.1, 0.2, 0.4, 0.2, 0.1]), index=names + extra, name="target")
    if rng.random() < 0.3:
        target.iloc[int(rng.integers(0, len(target)))] = np.nan
    target = target.iloc[rng.permutation(len(target))]

    meta = pd.Series(rng.integers(0, 4, n).astype(float), index=names, name="meta_model")
    if rng.random() < 0.3:
        meta.iloc[int(rng.integers(0, n))] = np.nan
    return SignalsCase(seed, predictions, target, meta)


def binned_round(seed: int, n: int, m: int, *, tied_share: float = 0.2) -> tuple[pd.DataFrame, pd.Series]:
    """A larger round: m submissions over n ids, a share of them heavily tied."""
    rng = np.random.default_rng(seed)
    values = rng.random((n, m))
    tied = int(m * tied_share)
    values[:, :tied] = np.round(values[:, :tied] * 4) / 4
    frame = pd.DataFrame(values, index=ids(n), columns=[f"sub{j:03d}" for j in range(m)])
    target = pd.Series(rng.choice(TARGET_BINS, n, p=[0.1, 0.2, 0.4, 0.2, 0.1]), index=frame.index, name="target")
    return frame, target
