"""The interim chart's geometry: an axis from the data when values sit far from zero, said on the axis; a
line broken where a snapshot has no value; no "-0.0000" anywhere (issue 24)."""
from __future__ import annotations

from scoring.kinds.base import MetricSpec

from leaderboard.core.presentation import ICHART_H, ICHART_TOP, format_cell, interim_chart

NDCG = MetricSpec("score", "Score")
RET = MetricSpec("return", "Return", fmt="{:.2%}")


def _history(values: dict[str, list[float | None]], *, final_last: bool = False) -> list[dict]:
    n = len(next(iter(values.values())))
    return [{"entrant": name, "points": [
        {"version": v + 1, "as_of": f"2026-01-0{v + 1}", "interim": not (final_last and v == n - 1),
         "metrics": {"score": x, "return": x}} for v, x in enumerate(xs)]} for name, xs in values.items()]


def _ys(points: str) -> list[float]:
    return [float(p.split(",")[1]) for p in points.split()]


def test_chart_axis_comes_from_the_data_when_values_sit_far_from_zero():
    chart = interim_chart(_history({"a": [0.61, 0.66, 0.70], "b": [0.62, 0.64, 0.63]}), NDCG, entrants=["a", "b"])
    labels = [t["label"] for t in chart["y_ticks"]]
    assert chart["from_data"] and labels[0] == "0.6000" and labels[-1] == "0.7000"
    assert chart["axis_note"] == "axis from 0.6000, chosen from the data (not from 0)"
    # The plot's full height spans 0.60..0.70: a 0.01 step is a tenth of it, not 1/70 as from zero.
    plot = ICHART_H - ICHART_TOP - 44
    a = _ys(chart["lines"][0]["points"])
    assert abs((a[0] - a[2]) - plot * 0.9) < 0.05


def test_chart_axis_keeps_zero_when_values_reach_near_it():
    chart = interim_chart(_history({"a": [0.01, -0.02, 0.03], "b": [0.2, 0.1, 0.15]}), NDCG, entrants=["a", "b"])
    assert not chart["from_data"] and chart["axis_note"] == "" and chart["zero"] is not None


def test_chart_breaks_the_line_at_a_missing_snapshot():
    chart = interim_chart(_history({"a": [0.01, None, 0.03, 0.02], "b": [0.02, 0.01, 0.0, -0.01]}), RET,
                          entrants=["a", "b"])
    a, b = chart["lines"]
    assert len(a["points"].split()) == 1 and [len(m.split()) for m in a["more"]] == [2] and len(a["dots"]) == 3
    assert len(b["points"].split()) == 4 and b["more"] == [] and chart["has_gaps"]


def test_no_negative_zero_in_cells_or_ticks():
    assert format_cell(-0.00001) == "0.0000" and format_cell(-0.0) == "0.0000"
    assert format_cell(-0.00001, "{:.2%}") == "0.00%" and format_cell(-0.5, "{:.2%}") == "-50.00%"
    chart = interim_chart(_history({"a": [-0.02, 0.01], "b": [0.0, 0.03]}), RET, entrants=["a", "b"])
    assert not any(t["label"].startswith("-0.00") for t in chart["y_ticks"])
