"""What the pages draw, shaped from what selectors return. Pure: no ORM, no request.

Views fetch with selectors, pass the results through these functions and hand
the templates plain data: metric lines with their intervals, a kind's
confusion matrix with totals and shades, the calibration table and the geometry
of its reliability chart, and the per-case debug table with the sort keys and
filter values its script (static/core/case_table.js) reads.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from numbers import Number
from typing import Any
from urllib.parse import quote

from django.utils.html import escape
from django.utils.safestring import mark_safe

from scoring.kinds.base import Kind, MetricSpec, format_number, no_negative_zero

# A column of a per-case table whose values are few strings becomes a filter
# (a select) when it has between 2 and this many distinct values.
MAX_FILTER_OPTIONS = 12


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


def metric_columns(kind: Kind, config: Mapping[str, Any], limit: int = 8,
                   hidden: Collection[str] = ()) -> list[MetricSpec]:
    """The metrics shown as leaderboard columns: the ranking one first, then the others.

    Interval bounds are printed beside their metric, not as columns; ``hidden`` ones not at all.
    """
    bounds = interval_bounds(kind)
    specs = [m for m in kind.metric_specs(config) if m.name not in bounds and m.name not in hidden]
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
                                metrics.get(low_name) if low_name else None,
                                metrics.get(high_name) if high_name else None))
    return lines


def leaderboard_notes(kind: Kind, config: Mapping[str, Any]) -> dict[str, Any]:
    """What the note under a leaderboard says: the kind's own sentence (who appears, what intervals mean)."""
    return {"text": kind.leaderboard_note(config)}


# -- submission page: one panel per visible split ---------------------------------

def split_panels(kind: Kind, config: Mapping[str, Any], scores: Mapping[str, Mapping[str, Any]],
                 case_rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per split the viewer may see (public first): metric lines and the kind's summary views.

    ``scores`` and ``case_rows`` come from the selectors, which already leave out
    what the viewer may not see; a split without visible case rows gets no summary.
    The kind's ``summary_views`` names what to draw (a confusion matrix, calibration bins).
    """
    panels = []
    for split in sorted(scores, key=lambda s: (s != "public", s)):
        rows = [r for r in case_rows if r.get("split") == split]
        views = kind.summary_views(rows, split=split) if rows else None
        panel: dict[str, Any] = {"split": split, "metrics": metric_lines(kind, config, scores[split]),
                                 "confusion": None, "calibration": None}
        if views:
            if views.get("confusion_matrix") is not None:
                panel["confusion"] = confusion_table(views["confusion_matrix"], order=views.get("confusion_order"),
                                                     labels=views.get("confusion_labels"))
                panel["confusion"]["split"] = split
            if views.get("calibration_bins") is not None:
                panel["calibration"] = calibration_view(views["calibration_bins"],
                                                        without_confidence=views.get("calibration_missing", 0),
                                                        labels=views.get("calibration_labels"))
        panels.append(panel)
    return panels


CONFUSION_LABELS = {"title": "Confusion matrix", "of": "class", "correct": "on the diagonal", "columns": None}


def confusion_table(matrix: Mapping[str, Mapping[str, int]], *, order: Sequence[str] | None = None,
                    labels: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A confusion matrix {actual: {predicted: n}} as table rows with totals and cell shades.

    A cell's ``shade`` is its count over the largest count (0..1); diagonal cells are ``correct``.
    ``labels``: the kind's words for it (``Kind.summary_views``), ``CONFUSION_LABELS`` otherwise.
    """
    words = {**CONFUSION_LABELS, **(labels or {})}
    columns = words["columns"] or (None, None)
    names = list(order) if order else list(matrix)
    names += [k for k in matrix if k not in names]
    counts = [[int((matrix.get(a) or {}).get(p, 0)) for p in names] for a in names]
    total = sum(map(sum, counts))
    peak = max((n for row in counts for n in row), default=0)
    rows = []
    for a, row in zip(names, counts):
        row_total = sum(row)
        cells = []
        for p, n in zip(names, row):
            shade = n / peak if peak else 0.0
            cells.append({
                "actual": a, "predicted": p, "count": n, "correct": a == p,
                "row_share": 100.0 * n / row_total if row_total else None,
                "shade": round(shade, 3), "dark": shade > 0.55,
            })
        rows.append({"label": a, "cells": cells, "total": row_total})
    correct = sum(counts[i][i] for i in range(len(names)))
    return {
        "title": words["title"], "of": words["of"], "correct_text": words["correct"],
        "actual_column": columns[0], "predicted_column": columns[1],
        "labels": names,
        "rows": rows,
        "column_totals": [sum(counts[i][j] for i in range(len(names))) for j in range(len(names))],
        "total": total,
        "correct": correct,
        "accuracy": 100.0 * correct / total if total else None,
    }


# The reliability chart's frame, in SVG user units (it scales with the page).
CHART_W, CHART_H = 360, 250
CHART_LEFT, CHART_RIGHT, CHART_TOP, CHART_BOTTOM = 46, 14, 16, 42


CALIBRATION_LABELS = {"hit": "right", "hit_rate": "share right"}


def calibration_view(bins: Sequence[Mapping[str, Any]], *, without_confidence: int = 0,
                     labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Calibration bins as a table and as the geometry of an inline SVG reliability chart.

    x: confidence 0..1; y: the share of the bin's predictions that are right (the bin's
    ``accuracy``, 0..100 %, named by the kind's ``labels``). Each bin with predictions
    is a bar over its confidence range up to that share, with a dot at its mean
    confidence; the dashed diagonal is perfect calibration (share = confidence).
    """
    words = {**CALIBRATION_LABELS, **(labels or {})}
    pw = CHART_W - CHART_LEFT - CHART_RIGHT
    ph = CHART_H - CHART_TOP - CHART_BOTTOM

    def x(c: float) -> float:
        return round(CHART_LEFT + c * pw, 2)

    def y(acc: float) -> float:
        return round(CHART_TOP + (1.0 - acc / 100.0) * ph, 2)

    peak = max((b["count"] for b in bins), default=0)
    table, bars, points = [], [], []
    for b in bins:
        count, acc, conf = b["count"], b.get("accuracy"), b.get("mean_confidence")
        gap = acc - 100.0 * conf if count and acc is not None and conf is not None else None
        label = f"{b['low']:.1f}–{b['high']:.1f}"
        table.append({"label": label, "count": count, "mean_confidence": conf, "accuracy": acc, "gap": gap,
                      "bar": acc})
        if not count or acc is None or conf is None:
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
                                              f"{acc:.1f}% {words['hit']}, mean confidence {conf:.2f}"})
        points.append({"x": x(conf), "y": top, "r": r})
    return {
        "rows": table,
        "counted": sum(b["count"] for b in bins),
        "without_confidence": without_confidence,
        "hit": words["hit"], "hit_rate": words["hit_rate"],
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


def case_table(kind: Kind, rows: Sequence[Mapping[str, Any]], *, config: Mapping[str, Any] | None = None,
               case_url: Callable[[str], str | None] | None = None,
               query: Mapping[str, str] | None = None, page_size: int | None = None) -> dict[str, Any] | None:
    """The debug table: columns with their sort type, rows of cells with sort keys, and the filters.

    Generic over kinds: the boolean column the kind names ``case_correct_column``
    gives "wrong only", columns of few strings (or with an order the kind
    declares) give a select, the numeric ``case_range_columns`` give a range.
    ``case_url(case_id)`` links each id to its case page. A column the kind's
    ``case_columns(config)`` names is headed by its label and description.
    """
    if not rows:
        return None
    declared = {c.key: c for c in kind.case_columns(config)} if config is not None else {}
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    orders = kind.case_column_orders
    columns: list[dict[str, Any]] = []
    for key in keys:
        values = [row.get(key) for row in rows]
        col_type = _column_type(key, values, orders)
        named = declared.get(key)
        columns.append({"key": key, "type": col_type,
                        "label": named.label if named else key, "description": named.description if named else "",
                        "sort": "text" if col_type == "text" else "number",
                        "numeric": col_type == "number",
                        "rank": {v: i for i, v in enumerate(orders.get(key, ()))}})

    selects, ranges, wrong_only = [], [], None
    for i, col in enumerate(columns):
        key = col["key"]
        if key == "case_id":
            continue
        present = {row.get(key) for row in rows} - {None}
        label = col["label"] if key in declared else key.replace("_", " ").capitalize()
        if key == kind.case_correct_column and col["type"] == "bool":
            wrong_only = {"key": key, "col": i}
        elif col["type"] == "ordinal":
            known = list(orders[key])
            options = known + sorted(str(v) for v in present if v not in known)
            selects.append((len(known), i, {"key": key, "col": i, "label": label, "options": options}))
        elif col["type"] == "text" and 2 <= len(present) <= MAX_FILTER_OPTIONS:
            selects.append((len(present), i, {"key": key, "col": i, "label": label,
                                              "options": sorted(map(str, present))}))
        elif key in kind.case_range_columns and col["type"] == "number":
            ranges.append({"key": key, "col": i, "label": label})
    selects.sort(key=lambda t: (t[0], t[1]))  # fewest options first (a split, then a kind's categories)
    filtered = {f["col"] for f in [wrong_only, *[s for _, _, s in selects], *ranges] if f}

    # More rows than a page holds: filtered and paged here, on the server (the page stays small; the CSV
    # download stays whole). Fewer: every row goes out and the page's script filters them.
    total = len(rows)
    paging: dict[str, Any] = {"paged": False}
    if page_size is not None and total > page_size:
        rows, paging = _case_rows_paged(rows, query or {}, page_size, wrong_only, [s for _, _, s in selects],
                                        ranges)

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
        "total": total,
        **paging,
    }


def _case_rows_paged(rows: Sequence[Mapping[str, Any]], query: Mapping[str, str], page_size: int,
                     wrong_only: dict | None, selects: list[dict], ranges: list[dict]) -> tuple[list, dict]:
    """The rows the query's filters keep (the same keys as the page's filter controls), and one page of them."""
    values: dict[str, str] = {}
    equal: list[tuple[str, str]] = []  # (column, filter value)
    bounds: list[tuple[str, str, float]] = []  # (column, "min" or "max", bound)
    for f in ([wrong_only] if wrong_only else []) + selects:
        wanted = str(query.get(f["key"], "")).strip()
        if wanted:
            values[f["key"]] = wanted
            equal.append((f["key"], wanted))
    for r in ranges:
        for end in ("min", "max"):
            name = f"{r['key']}-{end}"
            try:
                bound = float(str(query.get(name, "")).strip())
            except ValueError:
                continue
            if math.isfinite(bound):
                values[name] = str(query.get(name)).strip()
                bounds.append((r["key"], end, bound))

    def keeps(row: Mapping[str, Any]) -> bool:
        if any(_filter_value(row.get(key)) != wanted for key, wanted in equal):
            return False
        for key, end, bound in bounds:
            v = row.get(key)
            number = float(v) if _is_number(v) else math.nan  # type: ignore[arg-type]  # a Number
            if not (math.isfinite(number) and (number >= bound if end == "min" else number <= bound)):
                return False  # a row without a value is outside any range
        return True

    kept = [row for row in rows if keeps(row)]
    pages = max(1, math.ceil(len(kept) / page_size))
    try:
        page = min(max(int(str(query.get("page", "1"))), 1), pages)
    except ValueError:
        page = 1
    start = (page - 1) * page_size

    def link(n: int) -> str:
        return "?" + "&".join(f"{k}={quote(v)}" for k, v in [*values.items(), ("page", str(n))]) + "#cases"

    return kept[start:start + page_size], {
        "paged": True, "matched": len(kept), "page": page, "pages": pages, "first": start + 1 if kept else 0,
        "last": min(start + page_size, len(kept)), "values": values, "page_size": page_size,
        "previous_url": link(page - 1) if page > 1 else None, "next_url": link(page + 1) if page < pages else None,
    }


# -- round pages: the interim chart ------------------------------------------------

# Line colours, told apart without relying on hue alone: each series also has its own dash.
SERIES_COLOURS = ("#2456c7", "#c7472a", "#1d8a4b", "#8a4fc7", "#b8860b", "#0f7f8c", "#c2185b", "#555555")
SERIES_DASHES = ("", "6 3", "2 3", "8 3 2 3", "", "6 3", "2 3", "8 3 2 3")
ICHART_W, ICHART_H = 640, 300
ICHART_LEFT, ICHART_RIGHT, ICHART_TOP, ICHART_BOTTOM = 56, 150, 16, 44
# An end label's width per character (bold 12 px, wide letters included), and the longest label drawn whole.
ICHART_LABEL_CHAR_W, ICHART_LABEL_MAX_CHARS = 8.0, 48


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        high, low = low + 0.01, low - 0.01
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = [round(start, 10)]
    while ticks[-1] < high - 1e-12:  # the last tick is at or above the highest value
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def interim_chart(history: Sequence[Mapping[str, Any]], metric: MetricSpec, *,
                  entrants: Sequence[str], reference: tuple[str, str] | None = None) -> dict[str, Any] | None:
    """One metric over a round's truth versions, one line per entrant, as inline-SVG geometry.

    ``history``: ``selectors.round_history`` (entrant -> points per version);
    ``entrants``: which ones to draw, in legend order. Each line ends in its
    entrant's name (no hover needed); the same numbers come as ``table``.
    Versions sit evenly along x, labelled with their date (or "final").
    ``reference``: (metric name, label) of a round-wide series (the kind's
    ``chart_reference``), read from any entrant's point of each version and
    drawn as one more line, dark and dotted.
    """
    series = {e["entrant"]: e["points"] for e in history if e["entrant"] in set(entrants)}
    versions: dict[int, Mapping[str, Any]] = {}
    for points in series.values():
        for p in points:
            versions.setdefault(p["version"], p)
    if not versions:
        return None
    order = sorted(versions)
    ref_values: dict[int, float] = {}
    if reference is not None:
        for e in history:
            for p in e["points"]:
                v = p["metrics"].get(reference[0])
                if p["version"] in versions and isinstance(v, (int, float)) and math.isfinite(v):
                    ref_values.setdefault(p["version"], v)
    values = [p["metrics"].get(metric.name) for pts in series.values() for p in pts] + list(ref_values.values())
    values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not values:
        return None
    low_value, high_value = min(values), max(values)
    span = high_value - low_value
    # Zero on the axis while the values reach near it; values far from zero on one side (a ranking round's
    # NDCG between 0.60 and 0.70) get an axis from the data, or their lines would overlap, and it says so.
    from_data = (low_value > 0 and low_value > span) or (high_value < 0 and -high_value > span)
    ticks = _nice_ticks(low_value, high_value) if from_data else _nice_ticks(min(low_value, 0.0), max(high_value, 0.0))
    low, high = ticks[0], ticks[-1]
    pw = ICHART_W - ICHART_LEFT - ICHART_RIGHT
    ph = ICHART_H - ICHART_TOP - ICHART_BOTTOM

    def x(i: int) -> float:
        return round(ICHART_LEFT + (pw * i / (len(order) - 1) if len(order) > 1 else pw / 2), 2)

    def y(v: float) -> float:
        return round(ICHART_TOP + (1 - (v - low) / (high - low)) * ph, 2)

    lines: list[dict[str, Any]] = []
    labels: list[dict[str, Any]] = []
    for n, name in enumerate(e for e in entrants if e in series):
        by_version = {p["version"]: p["metrics"].get(metric.name) for p in series[name]}
        # A version without a value (n/a, or not scored for this entrant) breaks the line: segments.
        segments: list[list[tuple[float, float]]] = [[]]
        for i, v in enumerate(order):
            value = by_version.get(v)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                segments[-1].append((x(i), y(value)))
            elif segments[-1]:
                segments.append([])
        segments = [seg for seg in segments if seg]
        pts = [pt for seg in segments for pt in seg]
        if not pts:
            continue
        colour, dash = SERIES_COLOURS[n % len(SERIES_COLOURS)], SERIES_DASHES[n % len(SERIES_DASHES)]
        lines.append({"name": name, "points": " ".join(f"{px},{py}" for px, py in segments[0]), "colour": colour,
                      "more": [" ".join(f"{px},{py}" for px, py in seg) for seg in segments[1:]],
                      "dash": dash, "dots": [{"x": px, "y": py} for px, py in pts]})
        labels.append({"name": name, "y": pts[-1][1], "x": pts[-1][0] + 8, "colour": colour})
    if ref_values:
        assert reference is not None  # reference values come from the reference metric
        pts = [(x(i), y(ref_values[v])) for i, v in enumerate(order) if v in ref_values]
        lines.append({"name": reference[1], "points": " ".join(f"{px},{py}" for px, py in pts), "colour": "#1a202c",
                      "dash": "1 4", "dots": [{"x": px, "y": py} for px, py in pts], "reference": True})
        labels.append({"name": reference[1], "y": pts[-1][1], "x": pts[-1][0] + 8, "colour": "#1a202c"})
    # Keep end labels apart (at least 15 units: a label is 12 high), in the order of their lines' ends.
    labels.sort(key=lambda lab: lab["y"])
    for i in range(1, len(labels)):
        labels[i]["y"] = max(labels[i]["y"], labels[i - 1]["y"] + 15)
    for lab in labels:
        lab["y"] = round(lab["y"] + 4, 2)
        name = lab["name"]
        lab["text"] = name if len(name) <= ICHART_LABEL_MAX_CHARS else name[:ICHART_LABEL_MAX_CHARS - 1] + "…"
    # The chart widens to the right until every end label fits whole (the plot keeps its size).
    width = max([ICHART_W] + [math.ceil(lab["x"] + len(lab["text"]) * ICHART_LABEL_CHAR_W + 4) for lab in labels])
    x_ticks = [{"x": x(i), "label": str(versions[v]["as_of"] or ("final" if not versions[v]["interim"] else f"v{v}")),
                "final": not versions[v]["interim"]} for i, v in enumerate(order)]
    table: list[dict[str, Any]] = []
    for name in entrants:
        if name not in series:
            continue
        by_version = {p["version"]: p["metrics"].get(metric.name) for p in series[name]}
        table.append({"entrant": name, "values": [by_version.get(v) for v in order]})
    if ref_values and reference is not None:
        table.append({"entrant": reference[1], "values": [ref_values.get(v) for v in order], "reference": True})
    return {
        "metric": metric,
        "width": width, "height": ICHART_H, "left": ICHART_LEFT, "right": ICHART_W - ICHART_RIGHT,
        "top": ICHART_TOP, "bottom": ICHART_H - ICHART_BOTTOM,
        "y_ticks": [{"y": y(t), "label": no_negative_zero(metric.fmt.format(t) if metric.fmt else f"{t:g}")}
                    for t in ticks],
        "zero": y(0.0) if low < 0 < high else None,
        "from_data": from_data,
        "axis_note": (f"axis from {no_negative_zero(metric.fmt.format(low) if metric.fmt else f'{low:g}')}, "
                      "chosen from the data (not from 0)") if from_data else "",
        "x_ticks": x_ticks, "lines": lines, "labels": labels, "has_final": any(t["final"] for t in x_ticks),
        "has_gaps": any(line.get("more") for line in lines),
        "columns": x_ticks, "table": table, "reference": reference[1] if ref_values and reference else None,
        "x_label_y": ICHART_H - 6, "x_mid": round(ICHART_LEFT + pw / 2, 2), "y_mid": round(ICHART_TOP + ph / 2, 2),
    }


def board_cells(rows: Sequence[Any], columns: Sequence[MetricSpec],
                intervals: Mapping[str, tuple[str, str]] | None = None,
                withheld: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Board rows with their metric cells formatted once, in Python (a template tag per cell
    costs more than the whole query at 100 rows). A cell whose metric has an interval (the
    kind's ``metric_intervals``) carries its bounds' text as ``low`` and ``high``. A provisional
    row's missing value of a ``withheld`` metric (the kind's ``withheld_metrics``) reads "withheld"."""
    intervals = intervals or {}
    out = []
    for row in rows:
        metrics = row.metrics or {}
        cells = []
        for spec in columns:
            text = format_cell(metrics.get(spec.name), spec.fmt)
            if metrics.get(spec.name) is None and spec.name in withheld and getattr(row, "provisional", False):
                text = "withheld"  # an interim version does not give it: waiting, not unavailable
            cell = {"name": spec.name, "text": text, "low": None, "high": None}
            bounds = intervals.get(spec.name)
            if bounds and all(isinstance(metrics.get(b), (int, float)) for b in bounds) and metrics.get(spec.name) is not None:
                cell["low"], cell["high"] = (format_cell(metrics[b], spec.fmt) for b in bounds)
            cells.append(cell)
        at = row.updated_at
        # Cells and dates rendered here: at 100 rows the template engine's per-cell lookups
        # and date filters cost more than the queries.
        html = "".join(
            f'<td class="num{" score" if i == 0 else ""}" data-metric="{escape(c["name"])}">{escape(c["text"])}'
            + (f' <span class="ci" title="95% interval">[{escape(c["low"])}–{escape(c["high"])}]</span>'
               if c["low"] is not None else "") + "</td>"
            for i, c in enumerate(cells))
        out.append({"row": row, "cells": cells, "cells_html": mark_safe(html), "updated_iso": at.isoformat(), "updated_full": f"{at:%Y-%m-%d %H:%M:%S}",
                    "updated_short": f"{at:%b} {at.day}, {at:%H:%M}",
                    "as_of": f"{row.as_of:%Y-%m-%d}" if getattr(row, "as_of", None) else ""})
    return out


def format_cell(value: Any, fmt: str = "{:.4f}") -> str:
    """A value formatted for a table cell: "n/a" when missing, else ``fmt`` (or str)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    try:
        return format_number(value, fmt)
    except (ValueError, TypeError):
        return str(value)
