"""The ``impact`` kind: catalyst-impact predictions on press releases.

Bundle (INTERFACE.md): ``cases.csv`` with ``case_id``, ``text``, ``percent_change``
(percent, e.g. 12.5), ``market_cap`` (USD, > 0), optional ``split`` (``dev``,
``public`` or ``private``, default public) and optional identifier columns ``company``,
``ticker``, ``drugs``, ``executives`` (semicolon-separated lists, used only by
de-identification).

What ``parse_bundle`` returns (a plain ``Bundle``):

* ``cases``: ``Case.public == {"text": <the text as loaded>}`` and the staff-only
  ``Case.private == {"original_text": <the same text>, "identifiers": {"company":
  [...], "ticker": [...], "drugs": [...], "executives": [...]}}``. The loaded text
  is the ORIGINAL press release: the Django layer publishes
  ``leaderboard.deid.deidentify(case.private["original_text"],
  case.private["identifiers"], lists, backend).redacted_text`` as
  ``public["text"]`` before participants see the case. Nothing identifying
  other than that text ever sits in ``public``.
* ``truth``: per case ``{"percent_change": float, "market_cap": float}``; the
  adjusted score and category are derived at scoring time from the config, so a
  config change needs no truth reload.

Submission: JSON ``{"predictions": [{"case_id", "predicted_impact",
"confidence"?, "predicted_score"?}]}`` or CSV with those columns; any subset of
the cases. In errors, ``row`` is the spreadsheet row for CSV (header = row 1) and
the 1-based position in ``predictions`` for JSON.

Scores: per split present in the case set (``dev``, ``public``, ``private``), the
metrics below; ``exact_match_accuracy`` ranks the public and private splits, and
an entrant is ranked only with at least ``min_predictions`` evaluated cases
(``leaderboard_eligible``); dev never ranks. Per-case rows carry ``split``: the
caller shows their truth columns only where the case's truth may be seen. Verify
(the dry run) scores dev cases only.
"""
from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from scoring import csvfile
from scoring import metrics_impact as mi
from scoring.errors import ErrorList, RowError, ValidationFailed, json_object_unique_keys, json_shown
from scoring.kinds import register
from scoring.kinds.base import (
    DEV,
    LATE_SUBMISSIONS,
    RANKED_SPLITS,
    Bundle,
    Case,
    CaseSet,
    IdColumn,
    Kind,
    MetricSpec,
    Result,
    Truth,
    late_submissions_config,
)
from scoring.metrics_uncertainty import contribution_intervals

DEFAULT_CONFIG: dict[str, Any] = {
    "multiplier_coefficient": 0.5,
    "multiplier_min": 0.25,
    "multiplier_max": 3.0,
    "score_divisor": 5.0,
    "score_clamp": 10.0,
    "min_predictions": 10,
    "verify_enabled": True,
    "max_upload_bytes": 10 * 1024 * 1024,
    "bootstrap_resamples": 2000,
}

CASE_COLUMNS_REQUIRED = ("case_id", "text", "percent_change", "market_cap")
IDENTIFIER_COLUMNS = ("company", "ticker", "drugs", "executives")
CASE_COLUMNS_OPTIONAL = ("split", *IDENTIFIER_COLUMNS)
SUBMISSION_REQUIRED = ("case_id", "predicted_impact")
SUBMISSION_OPTIONAL = ("confidence", "predicted_score")
SUBMISSION_FIELDS = SUBMISSION_REQUIRED + SUBMISSION_OPTIONAL
SPLITS = (DEV, *RANKED_SPLITS)  # as a bundle names them, and as submissions are scored

CASE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")
MAX_CASE_TEXT = 100_000  # characters of one press release
_CSV_FIELD_LIMIT = csv.field_size_limit()  # the csv module's global limit; never changed here


@dataclass(frozen=True)
class Prediction:
    case_id: str
    predicted_impact: str
    confidence: float | None = None
    predicted_score: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"case_id": self.case_id, "predicted_impact": self.predicted_impact}
        if self.confidence is not None:
            out["confidence"] = self.confidence
        if self.predicted_score is not None:
            out["predicted_score"] = self.predicted_score
        return out


@dataclass(frozen=True)
class ImpactSubmission:
    """A validated submission: predictions sorted by case id, one per case."""

    predictions: tuple[Prediction, ...]


# -- small helpers --------------------------------------------------------------

def _show(value: Any, limit: int = 60) -> str:
    """A value quoted for a message, cut so a hostile cell cannot flood the error list."""
    s = value if isinstance(value, str) else json.dumps(value) if _jsonable(value) else repr(value)
    s = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in s)
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return repr(s) if isinstance(value, str) else s



# The case_id column of a bundle's cases.csv, and of an upload (CSV rows or JSON items).
BUNDLE_ID = IdColumn(
    "case_id", empty="case_id is empty",
    invalid="case_id {shown} must be 1-100 characters of letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit",
    duplicate="case_id {shown} repeats row {first}", pattern=CASE_ID_RE, formula=None, show=_show)
UPLOAD_ID = IdColumn("case_id", duplicate="case id {shown} is repeated (first at row {first})", show=_show)

def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


def _decode(data: bytes, errors: ErrorList) -> str | None:
    """UTF-8 text of an upload, or None with the reason added to ``errors`` (the one reader every kind uses)."""
    return csvfile.decode(data, errors)


def _read_csv(text: str, errors: ErrorList, *,
              max_rows: int | None = None) -> tuple[list[str], list[tuple[int, list[str]]]] | None:
    """Header and (spreadsheet row, record) pairs; None with errors on a malformed file.

    The row loop is csvfile's (``Rows``): numbered by record, as a spreadsheet shows a press
    release with line breaks, with no line limit (a release may be long) and the csv module's
    strict quoting. The whole file is read before the header is checked: an unreadable row is
    the only problem reported. ``max_rows``: stop after that many rows that are not blank under
    the header (an upload: more than it can hold without that many problems; reading 2,500,000
    short rows of a 10 MB file took 20 s)."""
    records: list[tuple[int, list[str]]] = []
    filled = 0
    try:
        for row, record, _ in csvfile.Rows(text, limit=None, strict=True, by_record=True):
            records.append((row, record))
            if max_rows is not None and len(records) > 1 and any(cell.strip() for cell in record):
                filled += 1
                if filled >= max_rows:
                    break
    except csvfile.Unreadable as exc:
        msg = str(exc.error)
        if "field larger than field limit" in msg:
            msg = f"a cell is longer than {_CSV_FIELD_LIMIT} characters"
        errors.add(f"cannot read the CSV: {msg}", row=exc.row)
        return None
    if not records or not any(cell.strip() for cell in records[0][1]):
        errors.add("the file is empty or its first row (the header) is blank", row=1)
        return None
    header = [h.strip() for h in records[0][1]]
    return header, records[1:]


# The header check is csvfile's, in this kind's words: an unnamed column is just unexpected, a
# duplicated unexpected column is reported both ways, no "did you mean" hints.
_HEADER_WORDS = csvfile.HeaderWords(
    no_name=None, duplicate="column {shown} appears twice",
    unexpected="unexpected column {shown}; allowed columns are {want}", missing="missing required column {name!r}",
    did_you_mean=False, separator_hint=False, duplicate_and_unexpected=True, show=lambda value: _show(value), column_chars=None)


def _check_header(
    header: list[str], required: Sequence[str], optional: Sequence[str], errors: ErrorList
) -> bool:
    before = len(errors.items)
    csvfile.check_header(header, errors, required=required, optional=optional, words=_HEADER_WORDS)
    return len(errors.items) == before


# csvfile's number parser in this kind's words: an empty cell is no value (the column is optional
# or reported as empty by the caller), a cell over 64 characters is not read.
_NUMBER_WORDS = csvfile.NumberWords(
    empty=None, too_long="is not a number", not_number="is not a number",
    nan="must be a finite number (not NaN or infinity)", infinite="must be a finite number (not NaN or infinity)")


def _number(raw: Any, *, from_csv: bool) -> float | str | None:
    """Parse a numeric cell: a float, None when absent, or an error message."""
    if raw is None:
        return None
    if from_csv:
        value, message = csvfile.number(raw, words=_NUMBER_WORDS, max_chars=64)
        return message if message is not None else value
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return "must be a JSON number"
    try:
        f = float(raw)
    except OverflowError:
        return "is too large"
    if not math.isfinite(f):
        return "must be a finite number (not NaN or infinity)"
    return f


def _split_list(raw: str) -> list[str]:
    return [p.strip() for p in raw.split(";") if p.strip()]


# -- the kind -------------------------------------------------------------------

@register
class ImpactKind(Kind):
    name: ClassVar[str] = "impact"
    # Verify reads dev truth and saves nothing: turning it on or off changes no stored score.
    free_config_keys: ClassVar[frozenset[str]] = Kind.free_config_keys | {"verify_enabled"}
    label: ClassVar[str] = "Catalyst impact (press releases)"
    metrics: ClassVar[tuple[MetricSpec, ...]] = (
        MetricSpec("exact_match_accuracy", "Exact match %", True, "{:.1f}",
                   "Share of predictions in exactly the actual category (percent)."),
        MetricSpec("exact_match_ci_low", "Exact 95% CI low", True, "{:.1f}",
                   "Lower end of a 95% percentile bootstrap interval on exact-match accuracy."),
        MetricSpec("exact_match_ci_high", "Exact 95% CI high", True, "{:.1f}",
                   "Upper end of a 95% percentile bootstrap interval on exact-match accuracy."),
        MetricSpec("directional_accuracy", "Directional %", True, "{:.1f}",
                   "Share of predictions in the actual direction group (positive, neutral, negative)."),
        MetricSpec("close_accuracy", "Close %", True, "{:.1f}",
                   "Share of predictions within one category of the actual one."),
        MetricSpec("mae", "MAE", False, "{:.3f}",
                   "Mean absolute error of predicted_score against the adjusted score, over predictions giving one."),
        MetricSpec("avg_confidence", "Avg confidence", True, "{:.2f}",
                   "Mean of the confidences given."),
        MetricSpec("coverage", "Coverage %", True, "{:.1f}",
                   "Cases predicted out of all cases of the split (percent)."),
        MetricSpec("cases_evaluated", "Cases", True, "{:.0f}",
                   "Predictions scored against resolved truth."),
    )
    ranking_metric: ClassVar[str] = "exact_match_accuracy"
    split_count_metrics: ClassVar[tuple[str, ...]] = ("cases_evaluated", "coverage")
    metric_intervals: ClassVar[Mapping[str, tuple[str, str]]] = {
        "exact_match_accuracy": ("exact_match_ci_low", "exact_match_ci_high"),
    }
    case_column_orders: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "predicted_impact": mi.CATEGORIES,
        "actual_impact": mi.CATEGORIES,
        "predicted_direction": ("negative", "neutral", "positive"),
        "actual_direction": ("negative", "neutral", "positive"),
    }
    splits: ClassVar[tuple[str, ...]] = RANKED_SPLITS
    prediction_columns: ClassVar[tuple[str, ...]] = ("case_id", "split", "confidence")
    prediction_column_prefixes: ClassVar[tuple[str, ...]] = ("predicted_",)
    bundle_files: ClassVar[tuple[str, ...]] = ("cases.csv",)
    submission_formats: ClassVar[tuple[str, ...]] = ("json", "csv")
    deidentify_text: ClassVar[bool] = True

    # -- configuration ------------------------------------------------------
    def validate_config(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        errors = ErrorList(file="benchmark.json")
        if config is None:
            config = {}
        if not isinstance(config, Mapping):
            raise ValidationFailed([RowError("config must be a JSON object", column="config", file="benchmark.json")])
        out = dict(DEFAULT_CONFIG)
        late, problem = late_submissions_config(config)
        out.update(late)
        if problem:
            errors.add(problem, column=LATE_SUBMISSIONS)
        for key in config:
            if key not in DEFAULT_CONFIG and key != LATE_SUBMISSIONS:
                errors.add(f"unknown config key {json_shown(key)}; known keys: {', '.join(DEFAULT_CONFIG)}", column=str(key)[:100])
        floats = ("multiplier_coefficient", "multiplier_min", "multiplier_max", "score_divisor", "score_clamp")
        ints = ("min_predictions", "max_upload_bytes", "bootstrap_resamples")
        mistyped: set[str] = set()  # keys already reported: their range is not checked
        for key in floats:
            if key in config:
                v = config[key]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    errors.add(f"{key} must be a finite number; got {json_shown(v)}", column=key)
                    mistyped.add(key)
                else:
                    out[key] = float(v)
        for key in ints:
            if key in config:
                v = config[key]
                if isinstance(v, bool) or not isinstance(v, int):
                    errors.add(f"{key} must be a whole number; got {json_shown(v)}", column=key)
                    mistyped.add(key)
                else:
                    out[key] = v
        if "verify_enabled" in config:
            if not isinstance(config["verify_enabled"], bool):
                errors.add(f"verify_enabled must be true or false; got {json_shown(config['verify_enabled'])}", column="verify_enabled")
            else:
                out["verify_enabled"] = config["verify_enabled"]
        # Every range problem is reported with the type problems and unknown keys above, in one answer.
        def wrong(key: str, bad: bool, message: str) -> None:
            if bad and key not in mistyped:
                errors.add(message, column=key)

        wrong("multiplier_min", out["multiplier_min"] <= 0, "multiplier_min must be positive")
        if "multiplier_min" not in mistyped:
            wrong("multiplier_max", out["multiplier_max"] < out["multiplier_min"],
                  "multiplier_max must be at least multiplier_min")
        wrong("score_divisor", out["score_divisor"] <= 0, "score_divisor must be positive")
        wrong("score_clamp", out["score_clamp"] <= 0, "score_clamp must be positive")
        wrong("min_predictions", out["min_predictions"] < 0, "min_predictions must be 0 or more")
        wrong("max_upload_bytes", out["max_upload_bytes"] < 1024, "max_upload_bytes must be at least 1024")
        wrong("bootstrap_resamples", not 1 <= out["bootstrap_resamples"] <= 100_000,
              "bootstrap_resamples must lie in 1..100000")
        errors.raise_if_any()
        return out

    def score_params(self, config: Mapping[str, Any]) -> dict[str, float]:
        """Keyword arguments of ``metrics_impact.adjusted_score`` from a config."""
        cfg = self.validate_config(config)
        return {k: cfg[k] for k in ("multiplier_coefficient", "multiplier_min", "multiplier_max", "score_divisor", "score_clamp")}

    def verify(self, parsed: ImpactSubmission, *, cases: CaseSet, truth: Truth,
               config: Mapping[str, Any]) -> dict[str, Any]:
        return verify(parsed, cases, truth, config)

    def verify_available(self, config: Mapping[str, Any]) -> bool:
        return bool(self.validate_config(config)["verify_enabled"])

    def submission_summary(self, case_rows: list[dict[str, Any]], *, split: str) -> dict[str, Any] | None:
        return submission_summary(case_rows, split=split)

    case_correct_column: ClassVar[str | None] = "exact_match"
    case_range_columns: ClassVar[tuple[str, ...]] = ("confidence",)

    def summary_views(self, case_rows: Sequence[Mapping[str, Any]], *, split: str) -> dict[str, Any] | None:
        summary = submission_summary(case_rows, split=split)
        rows = [r for r in case_rows if r.get("split") == split]
        return {"confusion_matrix": summary["direction_confusion_matrix"],
                "confusion_order": self.case_column_orders["actual_direction"],
                "confusion_labels": {"title": "Direction confusion matrix", "of": "direction",
                                     "correct": "in the right direction",
                                     "columns": ("actual_direction", "predicted_direction")},
                "calibration_bins": [{"low": b["low"], "high": b["high"], "count": b["count"],
                                      "accuracy": b["accuracy"], "mean_confidence": b["avg_confidence"]}
                                     for b in summary["calibration"]],
                "calibration_missing": sum(1 for r in rows if r.get("confidence") is None),
                "calibration_labels": {"hit": "exact match", "hit_rate": "exact-match accuracy"}}

    def leaderboard_note(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        n = cfg["min_predictions"]
        resamples = cfg.get("bootstrap_resamples")
        first = (f"An entrant appears once its submission has at least {n} scored prediction{'s' if n != 1 else ''} "
                 "in this split. " if n else "")
        return (first + f"The bracket beside {self.metric(self.ranking_metric).label} is its 95% bootstrap interval"
                + (f" ({resamples:,} resamples of the cases)" if resamples else "")
                + ": the range the accuracy would plausibly take on another draw of cases of this size. Where two "
                "entrants' intervals overlap widely, the gap between them may be noise.")

    def leaderboard_eligible(self, split_metrics: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
        """Whether a split's metrics qualify for the leaderboard (enough scored predictions)."""
        cfg = self.validate_config(config)
        return (split_metrics.get("cases_evaluated") or 0) >= cfg["min_predictions"]

    def leaderboard_ineligible_reason(self, split_metrics: Mapping[str, Any], config: Mapping[str, Any], *,
                                      detail: bool = True) -> str | None:
        if self.leaderboard_eligible(split_metrics, config):
            return None
        need = self.validate_config(config)["min_predictions"]
        n = int(split_metrics.get("cases_evaluated") or 0)
        have = f"; it has {n}" if detail else ""
        return f"an entrant needs at least {need} scored prediction{'s' if need != 1 else ''} in the split{have}"

    def training_rows(self, cases: CaseSet, truth: Truth, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``case_id``, ``text``, the price move and market cap, and what they make: the adjusted score and category."""
        params = self.score_params(config)
        out = []
        for c in cases.cases:
            t = truth.values.get(c.case_id) or {}
            row: dict[str, Any] = {"case_id": c.case_id, "text": c.public.get("text", "")}
            if t.get("percent_change") is not None and t.get("market_cap") is not None:
                adj = mi.adjusted_score(float(t["percent_change"]), float(t["market_cap"]), **params)
                row.update({"percent_change": float(t["percent_change"]), "market_cap": float(t["market_cap"]),
                            "adjusted_score": adj, "actual_impact": mi.impact_category(adj)})
            out.append(row)
        return out

    # -- bundles ------------------------------------------------------------
    def parse_bundle(self, files: Mapping[str, bytes], config: Mapping[str, Any]) -> Bundle:
        cfg = self.validate_config(config)
        errors = ErrorList(file="cases.csv")
        if "cases.csv" not in files:
            raise ValidationFailed([RowError("the bundle has no cases.csv", file="cases.csv")])
        text = _decode(files["cases.csv"], errors)
        parsed = _read_csv(text, errors) if text is not None else None
        if parsed is None:
            errors.raise_if_any()
            raise AssertionError("unreachable")
        header, records = parsed
        if not _check_header(header, CASE_COLUMNS_REQUIRED, CASE_COLUMNS_OPTIONAL, errors):
            errors.raise_if_any()
        col = {name: i for i, name in enumerate(header)}
        cases: list[Case] = []
        truth: dict[str, dict[str, Any]] = {}
        first_row = BUNDLE_ID.first_rows()
        for row, rec in records:
            if not any(c.strip() for c in rec):
                continue
            if len(rec) != len(header):
                errors.add(f"this row has {len(rec)} cells but the header has {len(header)}", row=row)
                continue
            cell = {name: rec[i] for name, i in col.items()}
            case_id = cell["case_id"].strip()
            row_ok = True
            row_ok = first_row.check(case_id, row, errors)
            body = cell["text"].strip()
            if not body:
                errors.add("text is empty", row=row, column="text")
                row_ok = False
            elif len(body) > MAX_CASE_TEXT:
                errors.add(f"text is longer than {MAX_CASE_TEXT} characters", row=row, column="text")
                row_ok = False
            pc = _number(cell["percent_change"], from_csv=True)
            if pc is None or isinstance(pc, str):
                errors.add(f"percent_change {_show(cell['percent_change'])} {pc or 'is empty'}; give the price move in percent, e.g. 12.5", row=row, column="percent_change")
                row_ok = False
            elif pc < -100:
                errors.add(f"percent_change {pc} is below -100: a price cannot fall more than 100%", row=row, column="percent_change")
                row_ok = False
            cap = _number(cell["market_cap"], from_csv=True)
            if cap is None or isinstance(cap, str):
                errors.add(f"market_cap {_show(cell['market_cap'])} {cap or 'is empty'}; give it in US dollars, e.g. 2500000000", row=row, column="market_cap")
                row_ok = False
            elif cap <= 0:
                errors.add(f"market_cap must be positive (US dollars); got {cap}", row=row, column="market_cap")
                row_ok = False
            split = cell.get("split", "").strip().lower() or "public"
            if split not in SPLITS:
                errors.add(f"split {_show(cell.get('split'))} must be 'dev', 'public' or 'private'", row=row, column="split")
                row_ok = False
            if not row_ok:
                continue
            identifiers = {name: _split_list(cell.get(name, "")) for name in IDENTIFIER_COLUMNS}
            cases.append(
                Case(
                    case_id=case_id,
                    split=split,
                    public={"text": body},
                    private={"original_text": body, "identifiers": identifiers},
                )
            )
            truth[case_id] = {"percent_change": pc, "market_cap": cap}
        if not cases and not errors:
            errors.add("cases.csv has a header but no cases")
        errors.raise_if_any()
        return Bundle(config=cfg, cases=CaseSet(cases), truth=Truth(truth))

    # -- submissions --------------------------------------------------------
    def parse_submission(
        self, data: bytes, *, filename: str, cases: CaseSet, config: Mapping[str, Any]
    ) -> ImpactSubmission:
        cfg = self.validate_config(config)
        csvfile.check_size(data, cfg["max_upload_bytes"])
        errors = ErrorList()
        text = _decode(data, errors)
        if text is None:
            errors.fail()
        name = (filename or "").lower()
        stripped = text.lstrip()
        if name.endswith(".json") or (not name.endswith(".csv") and stripped[:1] in ("{", "[")):
            return self._parse_json_text(text, cases=cases, errors=errors)
        return self._parse_csv_text(text, cases=cases, errors=errors)

    def parse_json_predictions(
        self, predictions: Any, *, cases: CaseSet, config: Mapping[str, Any]
    ) -> ImpactSubmission:
        """Validate the ``predictions`` list of a JSON body (API clients and verify)."""
        self.validate_config(config)
        errors = ErrorList()
        if not isinstance(predictions, list):
            errors.add('"predictions" must be a list of objects', column="predictions")
            errors.raise_if_any()
        return self._check_predictions(
            [(i + 1, item) for i, item in enumerate(predictions)], from_csv=False, cases=cases, errors=errors
        )

    def _parse_json_text(self, text: str, *, cases: CaseSet, errors: ErrorList) -> ImpactSubmission:
        def constant(name: str) -> float:
            return float(name.replace("Infinity", "inf"))  # reported later as non-finite

        try:
            doc = json.loads(text, parse_constant=constant, object_pairs_hook=json_object_unique_keys)
        except json.JSONDecodeError as exc:
            errors.add(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", row=exc.lineno)
            errors.raise_if_any()
        except (ValueError, RecursionError) as exc:
            errors.add(f"not valid JSON: {str(exc)[:120] or type(exc).__name__}")
            errors.raise_if_any()
        if not isinstance(doc, dict) or "predictions" not in doc:
            errors.add('the JSON must be an object {"predictions": [...]}')
            errors.raise_if_any()
        for key in doc:
            if key != "predictions":
                errors.add(f'unexpected top-level key {json_shown(key)}; the file holds only "predictions"', column=str(key)[:100])
        preds = doc["predictions"]
        if not isinstance(preds, list):
            errors.add('"predictions" must be a list of objects', column="predictions")
            errors.raise_if_any()
        return self._check_predictions(
            [(i + 1, item) for i, item in enumerate(preds)], from_csv=False, cases=cases, errors=errors
        )

    def _parse_csv_text(self, text: str, *, cases: CaseSet, errors: ErrorList) -> ImpactSubmission:
        # Past one row per case, every row is a problem: one row more than the cases and the error cap
        # together is enough to find the cap, and the rows after it are never read.
        max_rows = len(cases.cases) + errors.cap + 1
        parsed = _read_csv(text, errors, max_rows=max_rows)
        if parsed is None:
            errors.fail()
        header, records = parsed
        if not _check_header(header, SUBMISSION_REQUIRED, SUBMISSION_OPTIONAL, errors):
            errors.raise_if_any()
        items: list[tuple[int, Any]] = []
        filled = 0
        for row, rec in records:
            if not any(c.strip() for c in rec):
                continue
            filled += 1
            if len(rec) != len(header):
                errors.add(f"this row has {len(rec)} cells but the header has {len(header)}", row=row)
                continue
            items.append((row, dict(zip(header, rec))))
        unread = filled >= max_rows  # the file may go on past the last row read
        if unread and len(errors.items) >= errors.cap:
            raise ValidationFailed(errors.finish() + [RowError(
                f"checking stopped at row {records[-1][0]:,} after too many problems; the rows after it were not read")])
        return self._check_predictions(items, from_csv=True, cases=cases, errors=errors, unread=unread)

    def _check_predictions(
        self, items: list[tuple[int, Any]], *, from_csv: bool, cases: CaseSet, errors: ErrorList,
        unread: bool = False,
    ) -> ImpactSubmission:
        """``unread``: the file goes on past the last of ``items`` (its rows were not read)."""
        known = {c.case_id for c in cases.cases}
        first_row = UPLOAD_ID.first_rows()
        show = _show if from_csv else json_shown  # a CSV cell is text; a JSON value is shown as JSON
        out: list[Prediction] = []
        for row, item in items:
            if len(errors.items) >= errors.cap:
                # Bounded work on hostile input: 2,000,000 bad predictions took 25 s to list past the cap.
                where, whole = ("row", "file") if from_csv else ("prediction", "list")
                count = f"more than {len(items):,}" if unread else f"{len(items):,}"
                raise ValidationFailed(errors.finish() + [RowError(
                    f"checking stopped at {where} {row:,} after too many problems; the {whole} has {count} "
                    f"predictions, a valid one at most {len(known):,}")])
            if not isinstance(item, dict):
                errors.add(f"each prediction must be an object; got {json_shown(item)}", row=row)
                continue
            ok = True
            if not from_csv:
                for key in item:
                    if key not in SUBMISSION_FIELDS:
                        errors.add(
                            f"unexpected field {json_shown(key)}; allowed fields are {', '.join(SUBMISSION_FIELDS)}",
                            row=row, column=str(key)[:100])
                        ok = False
            # case_id
            raw_id = item.get("case_id")
            case_id: str | None = None
            if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
                errors.add("case_id is missing", row=row, column="case_id")
                ok = False
            elif isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
                errors.add(f"case_id must be a string; got {json_shown(raw_id)}", row=row, column="case_id")
                ok = False
            else:
                case_id = str(raw_id).strip()
                if case_id not in known:
                    errors.add(f"unknown case id {show(case_id)}", row=row, column="case_id")
                    ok = False
                elif not first_row.take(case_id, row, errors):
                    ok = False
            # predicted_impact
            raw_cat = item.get("predicted_impact")
            category: str | None = None
            if raw_cat is None or (isinstance(raw_cat, str) and not raw_cat.strip()):
                errors.add("predicted_impact is missing", row=row, column="predicted_impact")
                ok = False
            elif not isinstance(raw_cat, str) or raw_cat.strip().lower() not in mi.CATEGORY_ORDER:
                errors.add(
                    f"predicted_impact {show(raw_cat)} is not one of the seven categories: {', '.join(mi.CATEGORIES)}",
                    row=row, column="predicted_impact")
                ok = False
            else:
                category = raw_cat.strip().lower()
            # optional numbers
            conf = _number(item.get("confidence"), from_csv=from_csv)
            if isinstance(conf, str):
                errors.add(f"confidence {show(item.get('confidence'))} {conf}", row=row, column="confidence")
                ok = False
            elif conf is not None and not 0.0 <= conf <= 1.0:
                errors.add(f"confidence {conf} is outside [0, 1]", row=row, column="confidence")
                ok = False
            score = _number(item.get("predicted_score"), from_csv=from_csv)
            if isinstance(score, str):
                errors.add(f"predicted_score {show(item.get('predicted_score'))} {score}", row=row, column="predicted_score")
                ok = False
            if ok:
                out.append(Prediction(case_id, category, conf, score))  # type: ignore[arg-type]
        if not items and not errors:
            errors.add("the submission has no predictions")
        errors.raise_if_any()
        out.sort(key=lambda p: p.case_id)
        return ImpactSubmission(tuple(out))

    def prediction_values(self, parsed: ImpactSubmission, case_ids: Sequence[str]) -> np.ndarray:
        """Columns: the category's ordinal (0 very_negative .. 6 very_positive), confidence and
        predicted_score; rows in ``case_ids`` order, NaN where not predicted."""
        ordinal = {name: i for i, name in enumerate(mi.CATEGORIES)}
        by_id = {p.case_id: p for p in parsed.predictions}
        out = np.full((len(case_ids), 3), np.nan)
        for row, cid in enumerate(case_ids):
            p = by_id.get(cid)
            if p is not None:
                out[row] = (ordinal[p.predicted_impact], np.nan if p.confidence is None else p.confidence,
                            np.nan if p.predicted_score is None else p.predicted_score)
        return out

    def dump_submission(self, parsed: ImpactSubmission) -> dict[str, Any]:
        return {"predictions": [p.as_dict() for p in parsed.predictions]}

    def load_submission(self, data: Mapping[str, Any]) -> ImpactSubmission:
        preds = [
            Prediction(
                str(d["case_id"]),
                str(d["predicted_impact"]),
                None if d.get("confidence") is None else float(d["confidence"]),
                None if d.get("predicted_score") is None else float(d["predicted_score"]),
            )
            for d in data["predictions"]
        ]
        return ImpactSubmission(tuple(sorted(preds, key=lambda p: p.case_id)))

    def example_submission(self, cases: CaseSet, config: Mapping[str, Any]) -> tuple[str, bytes]:
        """A valid file predicting every case (so it meets ``min_predictions`` wherever the cases allow):
        dev cases are scored on the dev split (and by verify), the others rank."""
        cats = ("positive", "neutral", "slightly_negative", "negative", "slightly_positive")
        scores = (1.5, 0.0, -0.7, -1.8, 0.7)
        preds = [
            {"case_id": cid, "predicted_impact": cats[i % 5], "confidence": 0.6, "predicted_score": scores[i % 5]}
            for i, cid in enumerate(cases.ids())
        ]
        return "predictions.json", (json.dumps({"predictions": preds}, indent=2) + "\n").encode()

    def format_help(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        return (
            "Upload JSON `{\"predictions\": [{\"case_id\": ..., \"predicted_impact\": ..., "
            "\"confidence\": 0.7, \"predicted_score\": 1.2}]}` or a CSV with the columns "
            "`case_id,predicted_impact,confidence,predicted_score` (the last two optional).\n\n"
            f"- `predicted_impact`: one of {', '.join(f'`{c}`' for c in mi.CATEGORIES)}.\n"
            "- `confidence`: a number in [0, 1] (optional).\n"
            "- `predicted_score`: your estimate of the adjusted score (optional; used for MAE).\n"
            "- Any subset of the cases; each case at most once.\n\n"
            f"Adjusted score = clamp(percent_change x multiplier / {cfg['score_divisor']:g}, "
            f"-{cfg['score_clamp']:g}, {cfg['score_clamp']:g}); multiplier = clamp(1 + "
            f"{cfg['multiplier_coefficient']:g} x log10(market_cap / $1B), {cfg['multiplier_min']:g}, "
            f"{cfg['multiplier_max']:g}). Ranked by exact-match accuracy; at least "
            f"{cfg['min_predictions']} scored predictions to appear. Files up to "
            f"{cfg['max_upload_bytes'] / 1048576:g} MB."
            + "\n\nCases of the `dev` split come with their truth (the training download) and never rank; "
            "the other cases (`test` in the cases download) rank, and their truth stays hidden while "
            "submissions are open."
            + ("\n\n**Dry run:** *Check without submitting* on the submit page, or "
               "`POST /api/benchmarks/<slug>/verify/` with the same JSON, scores your predictions of the "
               "dev cases and shows their per-case results, without saving anything or counting against "
               "your daily limit. Predictions of other cases are ignored." if cfg["verify_enabled"] else "")
        )

    # -- scoring ------------------------------------------------------------
    def case_rows(
        self, parsed: ImpactSubmission, *, cases: CaseSet, truth: Truth, config: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """Per-case rows for every prediction whose case exists and has truth (all splits)."""
        params = self.score_params(config)
        by_id = cases.by_id()
        kept: list[tuple[Prediction, Case, dict[str, Any]]] = []
        for p in parsed.predictions:
            case = by_id.get(p.case_id)
            t = truth.values.get(p.case_id)
            if case is None or not t or t.get("percent_change") is None or t.get("market_cap") is None:
                continue  # case removed since upload, or truth not released yet
            kept.append((p, case, t))
        if not kept:
            return []
        pc = np.array([float(t["percent_change"]) for _, _, t in kept])
        cap = np.array([float(t["market_cap"]) for _, _, t in kept])
        adj = np.atleast_1d(mi.adjusted_score(pc, cap, **params))
        actual = mi.impact_category(adj)
        rows = []
        for (p, case, _), pct, a, act in zip(kept, pc, adj, actual):
            po, ao = mi.CATEGORY_ORDER[p.predicted_impact], mi.CATEGORY_ORDER[act]
            pdir, adir = mi.direction(p.predicted_impact), mi.direction(act)
            rows.append(
                {
                    "case_id": p.case_id,
                    "split": case.split,
                    "predicted_impact": p.predicted_impact,
                    "actual_impact": str(act),
                    "percent_change": float(pct),
                    "adjusted_score": float(a),
                    "confidence": p.confidence,
                    "predicted_score": p.predicted_score,
                    "exact_match": po == ao,
                    "close_match": abs(po - ao) <= 1,
                    "direction_correct": pdir == adir,
                    "actual_direction": adir,
                    "predicted_direction": pdir,
                }
            )
        return rows

    def score(
        self, parsed: ImpactSubmission, *, cases: CaseSet, truth: Truth, config: Mapping[str, Any]
    ) -> Result:
        cfg = self.validate_config(config)
        rows = self.case_rows(parsed, cases=cases, truth=truth, config=cfg)
        predicted_ids = {p.case_id for p in parsed.predictions}
        metrics: dict[str, dict[str, float | None]] = {}
        for split in SPLITS:
            split_ids = [c.case_id for c in cases.cases if c.split == split]
            if not split_ids or (split == DEV and not predicted_ids.intersection(split_ids)):
                continue  # dev metrics only for submissions that predict dev cases
            split_rows = [r for r in rows if r["split"] == split]
            m = split_metrics(split_rows, resamples=cfg["bootstrap_resamples"])
            m["coverage"] = 100.0 * sum(1 for cid in split_ids if cid in predicted_ids) / len(split_ids)
            metrics[split] = m
        return Result(metrics=metrics, cases=rows, provisional=not truth.final)


def split_metrics(rows: Sequence[Mapping[str, Any]], *, resamples: int = 2000) -> dict[str, float | None]:
    """Headline metrics (no confusion matrix) of per-case rows of one split, with the bootstrap interval."""
    m = mi.impact_metrics(
        [r["predicted_impact"] for r in rows],
        [r["adjusted_score"] for r in rows],
        [r["confidence"] for r in rows],
        [r["predicted_score"] for r in rows],
    )
    m.pop("direction_confusion_matrix")
    low, high = exact_match_ci([r["exact_match"] for r in rows], resamples=resamples)
    m["exact_match_ci_low"], m["exact_match_ci_high"] = low, high
    return m


def exact_match_ci(matches: Sequence[bool], *, resamples: int = 2000, level: float = 0.95) -> tuple[float | None, float | None]:
    """95% interval on exact-match accuracy (percent) from per-case hits.

    A percentile bootstrap with a fixed seed, so rescoring gives the same interval: the
    one every board uses (``contribution_intervals``), each case contributing its hit.
    """
    values = np.asarray([100.0 if m else 0.0 for m in matches])
    if values.size == 0:
        return None, None
    low, high = contribution_intervals(values, n=resamples, seed=0, confidence=level)
    return float(low[0]), float(high[0])


def submission_summary(rows: Sequence[Mapping[str, Any]], *, split: str = "public", bins: int = 5) -> dict[str, Any]:
    """What the submission page draws for one split: the 3x3 direction confusion
    matrix (rows = actual) and calibration bins (confidence against exact-match accuracy)."""
    rows = [r for r in rows if r["split"] == split]
    return {
        "direction_confusion_matrix": mi.direction_confusion_matrix(
            [r["predicted_impact"] for r in rows], [r["actual_impact"] for r in rows]
        ),
        "calibration": mi.calibration_bins(
            [r["confidence"] for r in rows], [r["exact_match"] for r in rows], bins=bins
        ),
    }


_VERIFY_RESULT_KEYS = (
    "case_id", "predicted_impact", "actual_impact", "percent_change", "adjusted_score",
    "confidence", "predicted_score", "exact_match", "close_match", "direction_correct",
    "actual_direction", "predicted_direction",
)


def verify(
    parsed: ImpactSubmission, cases: CaseSet, truth: Truth, config: Mapping[str, Any]
) -> dict[str, Any]:
    """The dry run of the spec: ``{"metrics", "results", "direction_confusion_matrix"}``.

    Computed over DEV cases only: the cases whose truth participants may see
    and which never rank. Predictions of other cases are ignored (counted in
    ``metrics["cases_ignored_test"]``) and never produce a result row, and only
    dev truth is read, so nothing about a ranked case leaks; dev cases without
    truth are counted in ``metrics["cases_ignored_unresolved"]``. ``mae`` is
    present only when some prediction gave a predicted_score. Raises
    ValidationFailed (403) when the config turns verify off.
    """
    kind = ImpactKind()
    cfg = kind.validate_config(config)
    if not cfg["verify_enabled"]:
        raise ValidationFailed([RowError("verify is turned off for this benchmark")], status=403)
    splits = {c.case_id: c.split for c in cases.cases}
    dev_preds = tuple(p for p in parsed.predictions if splits.get(p.case_id) == DEV)
    ignored = len(parsed.predictions) - len(dev_preds)
    dev_cases = cases.in_splits((DEV,))
    dev_truth = Truth({cid: v for cid, v in truth.values.items() if splits.get(cid) == DEV}, final=truth.final)
    rows = kind.case_rows(ImpactSubmission(dev_preds), cases=dev_cases, truth=dev_truth, config=cfg)
    m = mi.impact_metrics(
        [r["predicted_impact"] for r in rows],
        [r["adjusted_score"] for r in rows],
        [r["confidence"] for r in rows],
        [r["predicted_score"] for r in rows],
    )
    matrix = m.pop("direction_confusion_matrix")
    if m["mae"] is None:
        m.pop("mae")
    m["coverage"] = 100.0 * len(dev_preds) / len(dev_cases.cases) if dev_cases.cases else None
    m["cases_ignored_test"] = ignored
    m["cases_ignored_unresolved"] = len(dev_preds) - len(rows)
    return {
        "metrics": m,
        "results": [{k: r[k] for k in _VERIFY_RESULT_KEYS} for r in rows],
        "direction_confusion_matrix": matrix,
    }
