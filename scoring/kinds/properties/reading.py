"""Reading a properties upload: the parsed submission, cell parsing and the row checks shared
by CSV and JSON (bounded work on hostile input; see ``PropertiesKind.parse_submission``)."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from scoring import csvfile
from scoring.errors import ErrorList, RowError, ValidationFailed, json_shown, json_type
from scoring.kinds.base import Case, CaseSet
from scoring.kinds.properties.config import BUNDLE_ID, DEV, FOLD, ID, MAX_CELL_CHARS, MAX_LISTED_MISSING

# ---------------------------------------------------------------------------
# the parsed submission
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PropertiesSubmission:
    """A validated submission: one row per sequence id, ids sorted."""

    properties: tuple[str, ...]
    ids: tuple[str, ...]
    values: np.ndarray  # (len(ids), len(properties)) float64, all finite
    folds: np.ndarray  # (len(ids),) int64

    def aligned(self, ids: list[str], *, optional: frozenset[str] = frozenset()) -> np.ndarray:
        """The values for ``ids`` in that order; NaN rows for the ``optional`` ids it lacks.

        Raises ValidationFailed (a ValueError) naming the other ids it lacks:
        the cases changed after the submission was validated.
        """
        index = {sid: i for i, sid in enumerate(self.ids)}
        missing = [sid for sid in ids if sid not in index and sid not in optional]
        if missing:
            shown = ", ".join(repr(sid) for sid in missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise ValidationFailed(
                [RowError(f"no prediction for {len(missing)} case(s) added after the upload: {shown}", column=ID)]
            )
        out = np.full((len(ids), len(self.properties)), np.nan)
        for k, sid in enumerate(ids):
            i = index.get(sid)
            if i is not None:
                out[k] = self.values[i]
        return out


# ---------------------------------------------------------------------------
# reading text safely
# ---------------------------------------------------------------------------


# Reading uploads is the same for every kind (scoring/csvfile.py): encodings, BOM,
# NUL bytes, Excel and zip detection, overlong lines.
_decode = csvfile.decode
_show = csvfile.show


# csvfile's number parser, in this kind's words for a prediction cell.
_PREDICTION_WORDS = csvfile.NumberWords(
    empty="empty cell; every prediction must be a number",
    nan="NaN is not allowed; every prediction must be a number",
    infinite="{shown} is infinite; every prediction must be a finite number",
)


def _csv_number(raw: str) -> tuple[float | None, str | None]:
    return csvfile.number(raw, words=_PREDICTION_WORDS, max_chars=MAX_CELL_CHARS)


def _csv_fold(raw: str) -> tuple[int | None, str | None]:
    s = raw.strip()
    if not s:
        return None, "empty fold; copy the fold published for this sequence"
    if len(s) > MAX_CELL_CHARS:
        return None, f"cell is {len(s):,} characters long; expected the fold, an integer"
    try:
        return int(s), None
    except ValueError:
        pass
    try:
        v = float(s)
    except ValueError:
        return None, f"fold must be an integer, got {_show(s)}"
    if math.isfinite(v) and v.is_integer():
        return int(v), None  # "3.0", as a float column writes it
    return None, f"fold must be an integer, got {_show(s)}"


def _json_number(raw: Any) -> tuple[float | None, str | None]:
    if raw is None:
        return None, "null is not allowed; every prediction must be a number"
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        shown = json_shown(raw, 40) if isinstance(raw, str) else json_type(raw)
        return None, f"must be a JSON number, got {shown}"
    try:
        v = float(raw)
    except OverflowError:  # an integer literal past float's range (1 followed by 400 zeros)
        return None, "too large; every prediction must be a finite number"
    if math.isnan(v):
        return None, "NaN is not allowed; every prediction must be a number"
    if math.isinf(v):
        return None, "infinite values are not allowed; every prediction must be a finite number"
    return v, None


def _json_fold(raw: Any) -> tuple[int | None, str | None]:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw, None
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        return int(raw), None
    return None, f"fold must be an integer, got {json_shown(raw, 40)}"


# ---------------------------------------------------------------------------
# checking rows (shared by CSV and JSON)
# ---------------------------------------------------------------------------

_ABSENT = object()


class _RowChecker:
    """Checks prediction rows one at a time and fills the arrays of the valid ones."""

    def __init__(self, cases: CaseSet, props: list[str], errs: ErrorList):
        self.props = props
        self.errs = errs
        self.ids = sorted(cases.ids())
        self.index = {sid: i for i, sid in enumerate(self.ids)}
        self.lower: dict[str, str] = {}
        for sid in self.ids:
            self.lower.setdefault(sid.strip().lower(), sid)
        by_id = cases.by_id()
        self.published = [_case_fold(by_id[sid]) for sid in self.ids]
        # Dev sequences (labels published) may be predicted or left out; every other one is required.
        self.required = [by_id[sid].split != DEV for sid in self.ids]
        n = len(self.ids)
        self.values = np.full((n, len(props)), np.nan)
        self.folds = np.zeros(n, dtype=np.int64)
        self.first_row = [0] * n  # row where each id was first seen, 0 = not yet
        self.rows = 0

    def full(self) -> bool:
        return len(self.errs.items) >= self.errs.cap

    def check(
        self,
        row: int,
        sid: Any,
        cells: Mapping[str, Any],
        fold: Any,
        number: Callable[[Any], tuple[float | None, str | None]],
        fold_of: Callable[[Any], tuple[int | None, str | None]],
    ) -> None:
        """One row: ``sid``/``fold``/cell values are raw (``_ABSENT`` when the column is missing)."""
        self.rows += 1
        errs = self.errs
        idx = None
        if sid is not _ABSENT:
            if isinstance(sid, str):
                sid = sid.strip()
            if sid is None or sid == "":
                errs.add("empty sequence_id", row, ID)
            elif not isinstance(sid, str):
                errs.add(f'sequence_id must be a string like "{self.ids[0]}", got {json_type(sid)}', row, ID)
            elif len(sid) > MAX_CELL_CHARS:
                errs.add(f"sequence_id is {len(sid):,} characters long; no sequence has such an id", row, ID)
            else:
                idx = self.index.get(sid)
                if idx is None:
                    hint = self.lower.get(sid.lower())
                    more = f" (did you mean {hint!r}?)" if hint else ""
                    errs.add(f"unknown sequence_id {_show(sid)}{more}", row, ID)
                elif self.first_row[idx]:
                    errs.add(BUNDLE_ID.duplicate_message(sid, int(self.first_row[idx])), row, ID)
                    idx = None
                else:
                    self.first_row[idx] = row
        for j, prop in enumerate(self.props):
            raw = cells.get(prop, _ABSENT)
            if raw is _ABSENT:
                continue
            value, message = number(raw)
            if message:
                errs.add(message, row, prop)
            elif idx is not None:
                self.values[idx, j] = value
        if fold is not _ABSENT:
            f, message = fold_of(fold)
            if message:
                errs.add(message, row, FOLD)
            elif idx is not None and f is not None:
                if f != self.published[idx]:
                    errs.add(
                        f"fold {f} differs from the published fold {self.published[idx]} of {self.ids[idx]!r}",
                        row,
                        FOLD,
                    )
                else:  # a wrong fold is reported above; it may not even fit the array (10**30)
                    self.folds[idx] = f

    def mark_seen(self, row: int, sid: Any) -> None:
        """Note the id of a row too broken to check, so it is not also reported missing."""
        idx = self.index.get(sid.strip()) if isinstance(sid, str) else None
        if idx is not None and not self.first_row[idx]:
            self.first_row[idx] = row

    def expected_rows(self) -> str:
        """'one row per sequence (5 rows)', or with dev sequences, which rows are required."""
        test = sum(self.required)
        dev = len(self.ids) - test
        if not dev:
            return f"one row per sequence ({test} rows)"
        return f"one row per test sequence ({test} rows), plus optional rows for the {dev} dev sequences"

    def check_missing(self) -> None:
        if self.rows == 0:
            self.errs.add(f"no predictions: expected {self.expected_rows()}")
            return
        missing = [sid for sid, r, req in zip(self.ids, self.first_row, self.required) if req and not r]
        for sid in missing[:MAX_LISTED_MISSING]:
            self.errs.add(f"no row for sequence_id {sid!r}", None, ID)
        if len(missing) > MAX_LISTED_MISSING:
            self.errs.add(
                f"... and {len(missing) - MAX_LISTED_MISSING} more sequence_ids have no row "
                f"({len(missing)} of {sum(self.required)} missing)",
                None,
                ID,
            )

    def result(self) -> PropertiesSubmission:
        """The rows sent (every test sequence, the dev sequences predicted), ids sorted."""
        keep = [i for i, r in enumerate(self.first_row) if r]
        return PropertiesSubmission(tuple(self.props), tuple(self.ids[i] for i in keep), self.values[keep],
                                    self.folds[keep])


def _case_fold(case: Case) -> int:
    return int(case.public["fold"])


def _raise(errs: ErrorList, extra: list[RowError] | None = None) -> NoReturn:
    raise ValidationFailed(errs.finish() + (extra or []))


