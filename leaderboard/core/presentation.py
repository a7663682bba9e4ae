"""What the pages draw, shaped from what selectors return. Pure: no ORM, no request.

Views fetch with selectors, pass the results through these functions and hand
the templates plain data: metric lines with their intervals, the direction
confusion matrix with totals and shades, the calibration table and the geometry
of its reliability chart, and the per-case debug table with the sort keys and
filter values its script (static/core/case_table.js) reads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Number
from typing import Any, Callable, Mapping, Sequence

from scoring.kinds.base import Kind, MetricSpec

# A column of a per-case table whose values are few strings becomes a filter
# (a select) when it has between 2 and this many distinct values.
MAX_FILTER_OPTIONS = 12
# Columns the debug table filters by range, when numeric.
RANGE_FILTER_COLUMNS = ("confidence",)


# -- metrics ----------------------------------------------------------------------

@dataclass(frozen=True)
class MetricLine:
    spec: MetricSpec
    value: Any
    low: Any = None
    high: Any = None


def interval_bounds(kind: Kind) -> set[str]:
    """Names of the metrics that are another metric's interval bounds (no column of their own)."""
    return {name for pair in kind.metric_intervals.values() for name in pair}


def metric_columns(kind: Kind, config: Mapping[str, Any], limit: int = 8) -> list[MetricSpec]:
    """The metrics shown as leaderboard columns: the ranking one first, then the others.

    Interval bounds are printed beside their metric, not as columns.
    """
    bounds = interval_bounds(kind)
    specs = [m for m in kind.metric_specs(config) if m.name not in bounds]
    specs.sort(key=lambda m: m.name != kind.ranking_metric_for(config))  # stable: the kind's order after the first
    return specs[:limit]


def metric_lines(kind: Kind, config: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[MetricLine]:
    """One split's metrics in the kind's display order, each with its interval when it has one."""
    specs = {m.name: m for m in kind.metric_specs(config)}
    bounds = interval_bounds(kind)
    order = {name: i for i, name in enumerate(specs)}
    lines = []
    for name in sorted(metrics, key=lambda n: (order.get(n, len(order)), n)):
        if name in bounds and any(name in pair and metric in metrics
                                  for metric, pair in kind.metric_intervals.items()):
            continue
        low_name, high_name = kind.metric_intervals.get(name, (None, None))
        lines.append(MetricLine(specs.get(name) or MetricSpec(name, name), metrics[name],
                                metrics.get(low_name), metrics.get(high_name)))
    return lines


def leaderboard_notes(kind: Kind, config: Mapping[str, Any]) -> dict[str, Any]:
    """What the note under a leaderboard says: the entry minimum and the interval, when the kind has them."""
    cfg = kind.validate_config(config)
    ranked = next((m for m in kind.metric_specs(config) if m.name == kind.ranking_metric), None)
    return {
        "min_predictions": cfg.get("min_predictions"),
        "interval_metric": ranked.label if ranked is not None and ranked.name in kind.metric_intervals else None,
        "bootstrap_resamples": cfg.get("bootstrap_resamples"),
    }


# -- submission page: one panel per visible split ---------------------------------

def split_panels(kind: Kind, config: Mapping[str, Any], scores: Mapping[str, Mapping[str, Any]],
                 case_rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per split the viewer may see (public first): metric lines and the kind's summary views.

    ``scores`` and ``case_rows`` come from the selectors, which already leave out
    what the viewer may not see; a split without visible case rows gets no summary.
    """
    panels = []
    for split in sorted(scores, key=lambda s: (s != "public", s)):
        rows = [r for r in case_rows if r.get("split") == split]
        summary = kind.submission_summary(rows, split=split) if rows else None
        panel: dict[str, Any] = {"split": split, "metrics": metric_lines(kind, config, scores[split]),
                                 "confusion": None, "calibration": None}
        if summary:
            if summary.get("direction_confusion_matrix") is not None:
                panel["confusion"] = confusion_table(summary["direction_confusion_matrix"],
                                                     order=kind.case_column_orders.get("actual_direction"))
                panel["confusion"]["split"] = split
            if summary.get("calibration") is not None:
                missing = sum(1 for r in rows if r.get("confidence") is None)
                panel["calibration"] = calibration_view(summary["calibration"], without_confidence=missing)
        panels.append(panel)
    return panels


def confusion_table(matrix: Mapping[str, Mapping[str, int]], *, order: Sequence[str] | None = None) -> dict[str, Any]:
    """A confusion matrix {actual: {predicted: n}} as table rows with totals and cell shades.

    A cell's ``shade`` is its count over the largest count (0..1); diagonal cells are ``correct``.
    """
    labels = list(order) if order else list(matrix)
    labels += [k for k in matrix if k not in labels]
    counts = [[int((matrix.get(a) or {}).get(p, 0)) for p in labels] for a in labels]
    total = sum(map(sum, counts))
    peak = max((n for row in counts for n in row), default=0)
    rows = []
    for a, row in zip(labels, counts):
        row_total = sum(row)
        cells = []
        for p, n in zip(labels, row):
            shade = n / peak if peak else 0.0
            cells.append({
                "actual": a, "predicted": p, "count": n, "correct": a == p,
                "row_share": 100.0 * n / row_total if row_total else None,
                "shade": round(shade, 3), "dark": shade > 0.55,
            })
        rows.append({"label": a, "cells": cells, "total": row_total})
    correct = sum(counts[i][i] for i in range(len(labels)))
    return {
        "labels": labels,
        "rows": rows,
        "column_totals": [sum(counts[i][j] for i in range(len(labels))) for j in range(len(labels))],
        "total": total,
        "correct": correct,
        "accuracy": 100.0 * correct / total if total else None,
    }


# The reliability chart's frame, in SVG user units (it scales with the page).
CHART_W, CHART_H = 360, 250
CHART_LEFT, CHART_RIGHT, CHART_TOP, CHART_BOTTOM = 46, 14, 16, 42


def calibration_view(bins: Sequence[Mapping[str, Any]], *, without_confidence: int = 0) -> dict[str, Any]:
    """Calibration bins as a table and as the geometry of an inline SVG reliability chart.

    x: confidence 0..1; y: exact-match accuracy 0..100 %. Each bin with predictions
    is a bar over its confidence range up to its accuracy, with a dot at its mean
    confidence; the dashed diagonal is perfect calibration (accuracy = confidence).
    """
    pw = CHART_W - CHART_LEFT - CHART_RIGHT
    ph = CHART_H - CHART_TOP - CHART_BOTTOM

    def x(c: float) -> float:
        return round(CHART_LEFT + c * pw, 2)

    def y(acc: float) -> float:
        return round(CHART_TOP + (1.0 - acc / 100.0) * ph, 2)

    peak = max((b["count"] for b in bins), default=0)
    table, bars, points = [], [], []
    for b in bins:
        count, acc, conf = b["count"], b.get("accuracy"), b.get("avg_confidence")
        gap = acc - 100.0 * conf if count and acc is not None and conf is not None else None
        label = f"{b['low']:.1f}–{b['high']:.1f}"
        table.append({"label": label, "count": count, "avg_confidence": conf, "accuracy": acc, "gap": gap,
                      "bar": acc})
        if not count or acc is None:
            continue
        x0, x1 = x(b["low"]) + 2, x(b["high"]) - 2
        top = y(acc)
        r = round(3 + 4 * math.sqrt(count / peak), 2)
        height = round(y(0) - top, 2)
        # The count sits inside the bar's foot, or above the bar (clear of its dot) when the bar is short.
        label_y = y(0) - 5 if height >= 20 else max(top - r - 4, CHART_TOP + 9)
        bars.append({"x": x0, "y": top, "width": round(x1 - x0, 2), "height": height,
                     "label_x": round((x0 + x1) / 2, 2), "label_y": round(label_y, 2),
                     "count": count, "title": f"confidence {label}: {count} predictions, "
                                              f"{acc:.1f}% exact, mean confidence {conf:.2f}"})
        points.append({"x": x(conf), "y": top, "r": r})
    return {
        "rows": table,
        "counted": sum(b["count"] for b in bins),
        "without_confidence": without_confidence,
        "chart": {
            "width": CHART_W, "height": CHART_H,
            "left": CHART_LEFT, "right": CHART_W - CHART_RIGHT, "top": CHART_TOP, "bottom": y(0),
            "diagonal": (x(0), y(0), x(1), y(100)),
            "x_ticks": [{"x": x(t / 5), "label": f"{t / 5:.1f}"} for t in range(6)],
            "y_ticks": [{"y": y(v), "label": f"{v}%"} for v in (0, 25, 50, 75, 100)],
            "bars": bars,
            "line": " ".join(f"{p['x']},{p['y']}" for p in sorted(points, key=lambda p: p["x"])),
            "points": points,
            "x_label_y": CHART_H - 6,
            "x_mid": round(CHART_LEFT + pw / 2, 2),
            "y_mid": round(CHART_TOP + ph / 2, 2),
        },
    }


# -- cases ------------------------------------------------------------------------

def case_list_columns(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``public`` attributes of a list of cases, as columns: the redaction mark first, a text last."""
    columns: list[str] = []
    for c in cases:
        columns.extend(k for k in c["public"] if k not in columns)
    return sorted(columns, key=lambda k: {"redaction": 0, "text": 2}.get(k, 1))  # stable otherwise


# -- the per-case debug table -----------------------------------------------------

def _is_number(v: Any) -> bool:
    return isinstance(v, Number) and not isinstance(v, bool)


def _column_type(key: str, values: list[Any], orders: Mapping[str, Sequence[str]]) -> str:
    present = [v for v in values if v is not None]
    if key in orders:
        return "ordinal"
    if present and all(isinstance(v, bool) for v in present):
        return "bool"
    if present and all(_is_number(v) for v in present):
        return "number"
    return "text"


def _sort_key(v: Any, col_type: str, rank: Mapping[str, int]) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if col_type == "bool":
        return "1" if v else "0"
    if col_type == "ordinal":
        return str(rank.get(v, len(rank)))
    if col_type == "number":
        return repr(float(v))
    return str(v)


def _filter_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if _is_number(v):
        return repr(float(v))
    return str(v)


def case_table(kind: Kind, rows: Sequence[Mapping[str, Any]], *,
               case_url: Callable[[str], str | None] | None = None) -> dict[str, Any] | None:
    """The debug table: columns with their sort type, rows of cells with sort keys, and the filters.

    Generic over kinds: any boolean ``exact_match`` column gives "wrong only",
    columns of few strings (or with an order the kind declares) give a select,
    a numeric ``confidence`` gives a range. ``case_url(case_id)`` links each id
    to its case page.
    """
    if not rows:
        return None
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    orders = kind.case_column_orders
    columns = []
    for key in keys:
        values = [row.get(key) for row in rows]
        col_type = _column_type(key, values, orders)
        columns.append({"key": key, "type": col_type,
                        "sort": "text" if col_type == "text" else "number",
                        "numeric": col_type == "number",
                        "rank": {v: i for i, v in enumerate(orders.get(key, ()))}})

    selects, ranges, wrong_only = [], [], None
    for i, col in enumerate(columns):
        key = col["key"]
        if key == "case_id":
            continue
        present = {row.get(key) for row in rows} - {None}
        label = key.replace("_", " ").capitalize()
        if key == "exact_match" and col["type"] == "bool":
            wrong_only = {"key": key, "col": i}
        elif col["type"] == "ordinal":
            known = list(orders[key])
            options = known + sorted(str(v) for v in present if v not in known)
            selects.append((len(known), i, {"key": key, "col": i, "label": label, "options": options}))
        elif col["type"] == "text" and 2 <= len(present) <= MAX_FILTER_OPTIONS:
            selects.append((len(present), i, {"key": key, "col": i, "label": label,
                                              "options": sorted(map(str, present))}))
        elif key in RANGE_FILTER_COLUMNS and col["type"] == "number":
            ranges.append({"key": key, "col": i, "label": label})
    selects.sort(key=lambda t: (t[0], t[1]))  # fewest options first: split, directions, categories
    filtered = {f["col"] for f in [wrong_only, *[s for _, _, s in selects], *ranges] if f}

    out_rows = []
    for row in rows:
        cells = []
        for i, col in enumerate(columns):
            v = row.get(col["key"])
            cells.append({
                "value": v,
                "type": col["type"],
                "sort": _sort_key(v, col["type"], col["rank"]),
                # What a filter compares (absent on columns nobody filters by).
                "filter": _filter_value(v) if i in filtered else None,
                "href": case_url(str(v)) if col["key"] == "case_id" and case_url and v is not None else None,
            })
        out_rows.append(cells)
    return {
        "columns": columns,
        "rows": out_rows,
        "wrong_only": wrong_only,
        "selects": [s for _, _, s in selects],
        "ranges": ranges,
        "has_filters": bool(filtered),
    }
