"""Kinds own their presentation: the shared templates, presentation.py and the shared scripts
name no kind's metric, metric label or case column; the kind hands the pages its words
(``Kind.summary_views``, ``metric_specs``, ``case_columns``)."""
from __future__ import annotations

import re
from pathlib import Path

from scoring.kinds import get_kind, kind_names

from leaderboard.core import presentation

ROOT = Path(__file__).resolve().parents[2]
# A kind's own partials live in templates/core/kinds/; everything else is shared by every kind.
SHARED = ([p for p in (ROOT / "templates").rglob("*.html") if "kinds" not in p.relative_to(ROOT / "templates").parts]
          + [ROOT / "leaderboard" / "core" / "presentation.py", *sorted((ROOT / "static").rglob("*.js"))])
# Words any board may use in its own right, whichever kind happens to have a metric so named.
# ("return": a portfolio metric, and a keyword of every script.)
GENERIC = {"score", "Score", "Cases", "cases_evaluated", "coverage", "Coverage %", "return", "Return"}


def kind_words() -> dict[str, str]:
    """Every kind's own words (by default its metric names, metric labels and named case columns;
    ``Kind.own_words`` where the kind says which they are) -> the kind."""
    out = {}
    for name in kind_names():
        for word in get_kind(name).words():
            out[word] = name
    return {w: k for w, k in out.items() if w not in GENERIC}


def test_presentation_shared_files_name_no_kind_word():
    words = kind_words()
    assert {"exact_match_accuracy", "Directional %", "actual_direction", "corr", "spearman"} <= set(words)
    found = []
    for path in SHARED:
        text = path.read_text(encoding="utf-8")
        for word, kind in words.items():
            if re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text, flags=re.IGNORECASE):
                found.append(f"{path.relative_to(ROOT)} names {kind}'s {word!r}")
    assert found == []


def test_presentation_confusion_and_calibration_speak_the_kinds_words():
    impact = get_kind("impact")
    rows = [{"split": "public", "actual_direction": "positive", "predicted_direction": "positive",
             "actual_impact": "positive", "predicted_impact": "positive", "exact_match": True, "confidence": 0.9}]
    views = impact.summary_views(rows, split="public")
    matrix = presentation.confusion_table(views["confusion_matrix"], order=views["confusion_order"],
                                          labels=views["confusion_labels"])
    assert (matrix["title"], matrix["actual_column"], matrix["correct_text"]) == (
        "Direction confusion matrix", "actual_direction", "in the right direction")
    cal = presentation.calibration_view(views["calibration_bins"], labels=views["calibration_labels"])
    assert cal["hit"] == "exact match" and "100.0% exact match" in cal["chart"]["bars"][0]["title"]
    # A kind that names nothing gets neutral words and no case filter.
    plain = presentation.confusion_table({"a": {"a": 1, "b": 1}, "b": {"b": 2}})
    assert (plain["title"], plain["actual_column"], plain["correct"], plain["total"]) == (
        "Confusion matrix", None, 3, 4)
