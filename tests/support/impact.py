"""A small impact benchmark for page and browser tests: three dev cases, seven public, one private, and
predictions for them.

Every market cap is $1B, so the multiplier is 1 and the adjusted score is percent_change / 5.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

TEXT = ("BOSTON, Mass., March 3, 2025 (BUSINESS WIRE) -- Acme Bio (NASDAQ: ACME) today announced that its "
        "drug zorbimab reached an ORR of 45% (p=0.003) in 120 patients. CEO Jane Roe said the data will be "
        "presented at ASCO. Contact: ir@acmebio.com. The trial enrolled patients at many sites across the "
        "country and the company expects to file for approval in the coming year, subject to discussions.")

# case_id, percent_change, split -> adjusted (= pct / 5), category, direction
CASES = [
    ("c1", 20.0, "public"),    # 4.0   very_positive      positive
    ("c2", -10.0, "public"),   # -2.0  negative           negative
    ("c3", 1.0, "public"),     # 0.2   neutral            neutral
    ("c4", 4.0, "public"),     # 0.8   slightly_positive  positive
    ("c5", -30.0, "public"),   # -6.0  very_negative      negative
    ("c6", 7.0, "public"),     # 1.4   positive           positive
    ("c7", -3.0, "public"),    # -0.6  slightly_negative  negative
    ("c8", 10.0, "private"),   # 2.0   positive           positive
    ("d1", 15.0, "dev"),       # 3.0   positive           positive   (truth published: the training set)
    ("d2", -12.5, "dev"),      # -2.5  negative           negative
    ("d3", 1.5, "dev"),        # 0.3   neutral            neutral
]
PREDICTIONS = [
    {"case_id": "c1", "predicted_impact": "positive", "confidence": 0.9},            # dir ok, not exact
    {"case_id": "c2", "predicted_impact": "negative", "confidence": 0.8},            # exact
    {"case_id": "c3", "predicted_impact": "slightly_positive", "confidence": 0.5},   # wrong direction
    {"case_id": "c4", "predicted_impact": "slightly_positive", "confidence": 0.7},   # exact
    {"case_id": "c5", "predicted_impact": "neutral", "confidence": 0.1},             # wrong direction
    {"case_id": "c6", "predicted_impact": "positive", "confidence": 0.95},           # exact
    {"case_id": "c7", "predicted_impact": "very_negative"},                          # dir ok, no confidence
    {"case_id": "c8", "predicted_impact": "positive", "confidence": 1.0},            # private, exact
]
# Dev cases: d1 and d3 exact, d2 in the right direction only -> 2 of 3 exact (66.7%).
DEV_PREDICTIONS = [
    {"case_id": "d1", "predicted_impact": "positive", "confidence": 0.8},
    {"case_id": "d2", "predicted_impact": "very_negative", "confidence": 0.6},
    {"case_id": "d3", "predicted_impact": "neutral", "confidence": 0.7},
]


def write_impact_bundle(directory: Path, cases=CASES, *, slug: str = "catalysts", config=None) -> Path:
    """A bundle folder of ``cases`` ((case_id, percent_change, split) triples) with identifiers to redact."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "benchmark.json").write_text(json.dumps({
        "slug": slug, "title": slug.title(), "kind": "impact", "description": "Test.", "daily_limit": 50,
        "config": {"min_predictions": 3, **(config or {})},
    }))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["case_id", "text", "percent_change", "market_cap", "split", "company", "ticker", "drugs",
                     "executives"])
    for cid, pct, split in cases:
        writer.writerow([cid, TEXT.replace("120", str(100 + int(abs(pct)))), pct, 1e9, split, "Acme Bio", "ACME",
                         "zorbimab", "Jane Roe"])
    (directory / "cases.csv").write_text(out.getvalue())
    return directory
