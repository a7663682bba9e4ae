"""The ``properties`` kind: bundles, submissions (validated with ``reading``), scoring."""
from __future__ import annotations

import csv
import io
import math
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scoring import csvfile
from scoring.errors import ErrorList, RowError, ValidationFailed, json_type
from scoring.kinds import register
from scoring.kinds.base import Bundle, Case, CaseSet, Kind, MetricSpec, Result, Truth, finite_or_none
from scoring.kinds.properties.config import (
    BUNDLE_ID,
    CASES_FILE,
    DEV,
    FOLD,
    ID,
    MAX_CELL_CHARS,
    MAX_INPUT_CHARS,
    MAX_LISTED_EXTRA_COLUMNS,
    RANKED,
    SPLIT,
    SPLITS,
    _validate_config,
)
from scoring.kinds.properties.reading import (
    _ABSENT,
    PropertiesSubmission,
    _case_fold,
    _csv_fold,
    _csv_number,
    _decode,
    _json_fold,
    _json_number,
    _raise,
    _RowChecker,
    _show,
)
from scoring.metrics_properties import (
    recall_contributions,
    spearman,
    spearman_contributions,
    top_fraction_k,
    top_fraction_recall,
)

# cases.csv is read through csvfile (its row loop, header check and number parser) in this
# kind's words: every column is required, no hints, a repeated unexpected column is unexpected.
_BUNDLE_HEADER_WORDS = csvfile.HeaderWords(
    no_name="column {column} of the header has no name", duplicate="column {name!r} appears more than once",
    unexpected="unexpected column {shown}; cases.csv has the columns {want}", did_you_mean=False, separator_hint=False, repeat_unexpected=True,
    column_chars=None)
# An upload's header, checked by csvfile in this kind's words (after the kind's own test that
# the first row is a header at all): every column required, a few unexpected ones listed.
_UPLOAD_HEADER_WORDS = csvfile.HeaderWords(
    no_name="column {column} of the header has no name; the file must have exactly the columns {want}",
    duplicate="column {shown} appears more than once (columns {first} and {column})",
    unexpected="unexpected column {shown}{hint}; the file must have exactly the columns {want}",
    separator_hint=False, want_separator=",", max_unexpected=MAX_LISTED_EXTRA_COLUMNS)
# A truth cell: empty is "not measured"; any other cell that is not a finite number says how to fix it.
_NOT_FINITE = "{shown} is not a finite number; leave the cell empty for a value not measured"
_TRUTH_WORDS = csvfile.NumberWords(empty=None, not_number=_NOT_FINITE, nan=_NOT_FINITE, infinite=_NOT_FINITE)

# ---------------------------------------------------------------------------
# the kind
# ---------------------------------------------------------------------------


@register
class PropertiesKind(Kind):
    name = "properties"
    minimal_config = {"properties": [{"name": "P", "higher_is_better": True}]}
    label = "Property prediction (Spearman + top-fraction recall)"
    metrics = (
        MetricSpec("score", "Score", description="w_spearman x mean Spearman + w_recall x mean top-fraction recall"),
        MetricSpec("spearman", "Mean Spearman", description="mean over the properties of the Spearman correlation"),
        MetricSpec("recall", "Mean recall", description="mean over the recall properties of the top-fraction recall"),
    )
    ranking_metric = "score"
    scores_whole_round = False
    splits = RANKED
    prediction_columns = ("case_id", "split", FOLD)
    prediction_column_prefixes = ("predicted:",)
    bundle_files = (CASES_FILE,)
    submission_formats = ("csv",)

    # -- configuration ------------------------------------------------------
    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Normalised config with defaults filled in; ValidationFailed naming each bad key (``column``)."""
        return _validate_config(config)

    def metric(self, name: str) -> MetricSpec:
        """Also answers for the per-property names (``spearman:<p>``, ``recall:<p>``) without a config."""
        try:
            return super().metric(name)
        except KeyError:
            prefix, _, prop = name.partition(":")
            if prefix in ("spearman", "recall") and prop:
                return MetricSpec(name, f"{prefix.capitalize()} {prop}")
            raise

    def metric_specs(self, config: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
        """score, spearman, recall, then ``spearman:<name>`` per property and ``recall:<name>`` per recall property."""
        cfg = self.validate_config(config)
        w = cfg["weights"]
        pct = f"{cfg['recall_fraction'] * 100:g}%"
        specs = [
            MetricSpec(
                "score",
                "Score",
                description=f"{w['spearman']:g} x mean Spearman + {w['recall']:g} x mean top-{pct} recall",
            ),
            MetricSpec("spearman", "Spearman", description="mean Spearman correlation over all properties"),
            MetricSpec(
                "recall", f"Top-{pct} recall", description="mean top-fraction recall over the recall properties"
            ),
        ]
        for p in cfg["properties"]:
            name = p["name"]
            specs.append(MetricSpec(f"spearman:{name}", f"Spearman {name}", description=f"Spearman correlation, {name}"))
        for p in cfg["properties"]:
            if p["recall"]:
                best = "highest" if p["higher_is_better"] else "lowest"
                specs.append(
                    MetricSpec(
                        f"recall:{p['name']}",
                        f"Recall {p['name']}",
                        description=(
                            f"share of the true top {pct} ({best} {p['name']}) found in the predicted top {pct}"
                        ),
                    )
                )
        return tuple(specs)

    # -- bundles ------------------------------------------------------------
    def parse_bundle(self, files: Mapping[str, bytes], config: Mapping[str, Any]) -> Bundle:
        """cases.csv: sequence_id, fold, split, the configured input columns and one truth column per property.

        ``split`` is ``dev`` (labels published for training), ``public`` or
        ``private``. Input cells (text, e.g. a chain sequence) are published
        with the case. An empty truth cell means "not measured": that case is
        left out of that property's metrics. Errors name the file, the row
        (header = 1) and the column.
        """
        cfg = self.validate_config(config)
        props = [p["name"] for p in cfg["properties"]]
        inputs = cfg["inputs"]
        errs = ErrorList(file=CASES_FILE)
        if CASES_FILE not in files:
            raise ValidationFailed([RowError("the bundle has no cases.csv", file=CASES_FILE)])
        text = _decode(files[CASES_FILE], errs)
        if text is None:
            _raise(errs)
        rows = csvfile.Rows(text, limit=None)  # no line limit: input cells may be long sequences
        try:
            header = [h.strip() for h in next(rows, (1, [], None))[1]]
        except csvfile.Unreadable as exc:
            raise ValidationFailed([RowError(f"cannot read the CSV header: {exc}", 1, file=CASES_FILE)]) from None
        if not any(header):
            raise ValidationFailed([RowError("the file is empty; expected a header row", file=CASES_FILE)])
        expected = [ID, FOLD, SPLIT, *inputs, *props]
        csvfile.check_header(header, errs, required=expected, words=_BUNDLE_HEADER_WORDS)
        if errs:
            _raise(errs)
        pos = {name: i for i, name in reversed(list(enumerate(header)))}

        cases: list[Case] = []
        truth: dict[str, dict[str, float | None]] = {}
        first_row = BUNDLE_ID.first_rows()
        while True:
            try:
                row, rec, _ = next(rows)
            except StopIteration:
                break
            except csvfile.Unreadable as exc:
                errs.add(f"cannot read the CSV: {exc}", exc.row)
                break
            if not any(c.strip() for c in rec):
                continue  # blank lines are harmless in an organiser's file
            if len(rec) != len(header):
                errs.add(f"row has {_count(len(rec), 'field')} but the header has {len(header)}", row)
                continue
            sid = rec[pos[ID]].strip()
            ok = first_row.check(sid, row, errs)
            fold, message = _csv_fold(rec[pos[FOLD]])
            if message is None and fold is not None and fold < 0:
                message = f"fold must be an integer >= 0, got {fold}"
            if message:
                errs.add(message, row, FOLD)
                ok = False
            split = rec[pos[SPLIT]].strip()
            if split not in SPLITS:
                errs.add(f"split must be 'dev', 'public' or 'private', got {_show(split)}", row, SPLIT)
                ok = False
            public: dict[str, Any] = {"fold": fold}
            for name in inputs:
                raw = rec[pos[name]].strip()
                if len(raw) > MAX_INPUT_CHARS or not raw.isprintable():
                    errs.add(f"must be at most {MAX_INPUT_CHARS:,} printable characters on one line", row, name)
                    ok = False
                public[name] = raw
            values: dict[str, float | None] = {}
            for prop in props:
                v, message = csvfile.number(rec[pos[prop]], words=_TRUTH_WORDS, max_chars=None)
                if message:
                    errs.add(message, row, prop)
                    ok = False
                else:
                    values[prop] = v  # None: not measured
            if ok:
                cases.append(Case(sid, split, public))
                truth[sid] = values
        if not errs and not cases:
            errs.add("the file has a header but no cases")
        if errs:
            _raise(errs)
        _check_recall_k(cases, truth, cfg, errs)
        return Bundle(config=cfg, cases=CaseSet(cases), truth=Truth(values=truth))

    def check_config_for_cases(self, config: Mapping[str, Any], *, cases: CaseSet, truth: Truth) -> None:
        cfg = self.validate_config(config)
        _check_recall_k(list(cases.cases), {c.case_id: truth.values.get(c.case_id) or {} for c in cases.cases},
                        cfg, ErrorList())

    # -- submissions --------------------------------------------------------
    def parse_submission(
        self, data: bytes, *, filename: str, cases: CaseSet, config: Mapping[str, Any]
    ) -> PropertiesSubmission:
        """Validate a CSV upload and return it parsed, or raise ValidationFailed listing every problem.

        Rows are numbered as a spreadsheet shows them: the header is row 1 (for
        a file with no quoted line breaks, row = line number). The order of the
        checks keeps hostile files cheap: size, then encoding and binary
        content on the whole file, then the header, then each row (a row over
        the longest length a valid row could have is reported without being
        split into fields), stopping at the error cap.
        """
        cfg = self.validate_config(config)
        props = [p["name"] for p in cfg["properties"]]
        expected = [ID, *props, FOLD]
        csvfile.check_size(data, cfg["max_upload_bytes"])
        errs = ErrorList()
        if not data or data.isspace():  # isspace() copies nothing, strip() would
            errs.add("the file is empty; expected a header row and one row per sequence")
            _raise(errs)
        text = _decode(data, errs)
        if text is None:
            _raise(errs)
        text = text.lstrip("\ufeff").rstrip()  # BOM left by UTF-16 decoding; trailing blank lines
        if not text:
            errs.add("the file is empty; expected a header row and one row per sequence")
            _raise(errs)
        if text.lstrip().startswith(("{", "[")):  # a valid file starts with its header, sequence_id
            errs.add(f"the file is JSON, not CSV: upload a CSV with the header {','.join(expected)}, or send the "
                     'JSON as the request body {"predictions": [...]} (Content-Type: application/json)')
            _raise(errs)

        # A valid row has len(expected) cells of at most MAX_CELL_CHARS each.
        line_limit = (MAX_CELL_CHARS + 3) * len(expected) + 64
        rows = csvfile.Rows(text, limit=line_limit)
        checker = _RowChecker(cases, props, errs)

        # -- header ----------------------------------------------------------
        try:
            _, header_rec, overlong = next(rows)
        except csvfile.Unreadable as exc:
            errs.add(f"cannot read the header as CSV: {exc}", 1)
            _raise(errs)
        want = ",".join(expected)
        if overlong:
            chars, fields = overlong
            errs.add(
                f"the header is {chars:,} characters long with about {fields:,} columns; "
                f"expected {len(expected)} columns: {want}",
                1,
            )
            _raise(errs)
        header = [h.strip() for h in header_rec]
        if not self._check_header(header, expected, checker, errs):
            _raise(errs)
        pos = {}
        for i, name in enumerate(header):
            if name in expected and name not in pos:
                pos[name] = i

        # -- rows ------------------------------------------------------------
        stopped_at = None
        ncols = len(header)
        while True:
            try:
                start, rec, overlong = next(rows)
            except StopIteration:
                break
            except csvfile.Unreadable as exc:
                errs.add(f"cannot read this row as CSV ({exc}); is a quote left open?", exc.row)
                _raise(errs, [RowError(f"checking stopped at row {exc.row:,}: the rows after it were not read")])
            if checker.full():
                stopped_at = start
                break
            if overlong:
                chars, fields = overlong
                errs.add(
                    f"row is {chars:,} characters long with about {fields:,} fields; "
                    f"a row holds {len(expected)} short cells ({want})",
                    start,
                )
                checker.rows += 1
                continue
            if not any(c.strip() for c in rec):
                errs.add("empty row; remove blank lines", start)
                continue
            if len(rec) != ncols:
                if any("\n" in c or "\r" in c or "," in c for c in rec):  # only quoting does that
                    hint = " (a quote left open?)"
                elif len(rec) == ncols + 1 and not rec[-1].strip():
                    hint = " (a trailing comma?)"
                else:
                    hint = ""
                errs.add(f"row has {_count(len(rec), 'field')} but the header has {ncols}{hint}", start)
                if ID in pos and pos[ID] < len(rec):
                    checker.mark_seen(start, rec[pos[ID]])  # the row exists: do not call its id missing
                checker.rows += 1
                continue
            checker.check(
                start,
                rec[pos[ID]] if ID in pos else _ABSENT,
                {p: rec[pos[p]] for p in props if p in pos},
                rec[pos[FOLD]] if FOLD in pos else _ABSENT,
                _csv_number,
                _csv_fold,
            )
        if stopped_at is not None:
            total = text.count("\n") + 1 if "\n" in text else text.count("\r") + 1
            _raise(
                errs,
                [
                    RowError(
                        f"checking stopped at row {stopped_at:,} after too many problems; the file has about "
                        f"{total:,} rows, a valid one has {len(checker.ids) + 1:,} (the header and one per sequence)"
                    )
                ],
            )
        if ID in pos:
            checker.check_missing()
        elif checker.rows == 0:
            errs.add(f"no predictions: expected {checker.expected_rows()}")
        if errs:
            _raise(errs)
        return checker.result()

    @staticmethod
    def _check_header(header: list[str], expected: list[str], checker: _RowChecker, errs: ErrorList) -> bool:
        """Add the header's problems; False when the header is hopeless and rows cannot be read."""
        want = ",".join(expected)
        found = [h for h in header if h in expected]
        if not found:
            first = header[0] if header else ""
            raw = ",".join(header)
            if len(header) == 1 and (";" in first or "\t" in first):
                sep = "semicolons" if ";" in first else "tabs"
                errs.add(f"columns must be separated by commas, not {sep}; expected the header {want}", 1)
            elif first in checker.index or _csv_number(first)[1] is None:
                errs.add(f"row 1 must be the header {want}; the file seems to have no header row", 1)
            else:
                errs.add(f"row 1 is not the expected header; expected {want}, got {_show(raw, 80)}", 1)
            return False
        csvfile.check_header(header, errs, required=expected, words=_UPLOAD_HEADER_WORDS)
        return True

    def parse_json_predictions(
        self, predictions: Any, *, cases: CaseSet, config: Mapping[str, Any]
    ) -> PropertiesSubmission:
        """``{"predictions": [{"sequence_id", <each property>, "fold"}, ...]}``'s list; row = index + 1.

        Same rules as a file: every id exactly once, finite JSON numbers (not
        strings, not null), an integer fold equal to the published one, no
        other keys.
        """
        cfg = self.validate_config(config)
        props = [p["name"] for p in cfg["properties"]]
        expected = [ID, *props, FOLD]
        errs = ErrorList()
        if not isinstance(predictions, list):
            errs.add(
                f"predictions must be a list of objects with the keys {', '.join(expected)}, "
                f"got {json_type(predictions)}"
            )
            _raise(errs)
        checker = _RowChecker(cases, props, errs)
        stopped_at = None
        for i, item in enumerate(predictions):
            row = i + 1
            if checker.full():
                stopped_at = row
                break
            if not isinstance(item, dict):
                errs.add(f"each prediction must be an object, got {json_type(item)}", row)
                checker.rows += 1
                continue
            extra = [k for k in item if k not in expected]
            for key in extra[:MAX_LISTED_EXTRA_COLUMNS]:
                shown = _show(key) if isinstance(key, str) else repr(key)[:40]
                errs.add(f"unexpected key {shown}; allowed keys: {', '.join(expected)}", row, str(key)[:100])
            if len(extra) > MAX_LISTED_EXTRA_COLUMNS:
                errs.add(f"... and {len(extra) - MAX_LISTED_EXTRA_COLUMNS} more unexpected keys", row)
            for key in expected:
                if key not in item:
                    errs.add(f"missing key {key!r}", row, key)
            checker.check(
                row,
                item.get(ID, _ABSENT),
                {p: item[p] for p in props if p in item},
                item.get(FOLD, _ABSENT),
                _json_number,
                _json_fold,
            )
        if stopped_at is not None:
            _raise(
                errs,
                [
                    RowError(
                        f"checking stopped at prediction {stopped_at:,} after too many problems; the list has "
                        f"{len(predictions):,} predictions, a valid one has {len(checker.ids):,}"
                    )
                ],
            )
        checker.check_missing()
        if errs:
            _raise(errs)
        return checker.result()

    def prediction_values(self, parsed: PropertiesSubmission, case_ids: Sequence[str]) -> np.ndarray:
        """One column per property, rows in ``case_ids`` order (NaN for an id the file does not predict)."""
        at = {sid: i for i, sid in enumerate(parsed.ids)}
        rows = np.array([at.get(cid, -1) for cid in case_ids], dtype=np.int64)
        out = np.full((len(case_ids), len(parsed.properties)), np.nan)
        found = rows >= 0
        out[found] = parsed.values[rows[found]]
        return out

    def dump_submission(self, parsed: PropertiesSubmission) -> dict[str, Any]:
        """``{"columns": [<properties>..., "fold"], "rows": {id: [values..., fold]}}``, ids sorted."""
        rows = {
            sid: [float(v) for v in parsed.values[i]] + [int(parsed.folds[i])]
            for i, sid in enumerate(parsed.ids)
        }
        return {"columns": [*parsed.properties, FOLD], "rows": rows}

    def load_submission(self, data: Mapping[str, Any]) -> PropertiesSubmission:
        columns = list(data["columns"])
        if not columns or columns[-1] != FOLD:
            raise ValueError(f"stored submission has columns {columns!r}; the last must be 'fold'")
        ids = sorted(data["rows"])
        props = tuple(columns[:-1])
        values = np.array([data["rows"][sid][:-1] for sid in ids], dtype=float).reshape(len(ids), len(props))
        folds = np.array([data["rows"][sid][-1] for sid in ids], dtype=np.int64)
        return PropertiesSubmission(props, tuple(ids), values, folds)

    def example_submission(self, cases: CaseSet, config: Mapping[str, Any]) -> tuple[str, bytes]:
        """A valid file for these cases: a deterministic pseudo-random value per cell (scores near chance)."""
        cfg = self.validate_config(config)
        props = [p["name"] for p in cfg["properties"]]
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow([ID, *props, FOLD])
        for case in cases.cases:
            cells = [f"{zlib.crc32(f'{case.case_id}|{p}'.encode()) / 2**32:.4f}" for p in props]
            w.writerow([case.case_id, *cells, _case_fold(case)])
        return "example_submission.csv", out.getvalue().encode()

    def format_help(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        props = cfg["properties"]
        w = cfg["weights"]
        pct = f"{cfg['recall_fraction'] * 100:g}%"
        mb = cfg["max_upload_bytes"] / 1048576
        header = ",".join([ID, *(p["name"] for p in props), FOLD])
        inputs = cfg["inputs"]
        lines = [
            "### Data",
            "",
            "The cases download lists every sequence with its `fold`"
            + (" and its " + ", ".join(f"`{c}`" for c in inputs) if inputs else "")
            + ", and its `split`: `dev` sequences come with their measured values in the training download "
            "(train on them; they never rank), `test` sequences are the ones ranked (public or private: which "
            "is which stays hidden until the organiser reveals the private split).",
            "",
            "### Submission format",
            "",
            "A CSV file (comma-separated, UTF-8) with exactly these columns, in any order, and nothing else:",
            "",
            "```",
            header,
            "```",
            "",
            "| column | content |",
            "|---|---|",
            f"| `{ID}` | the id of a sequence, exactly as published; every test sequence exactly once |",
        ]
        for p in props:
            direction = "higher is better" if p["higher_is_better"] else "lower is better"
            recall = f"; top-{pct} recall counts" if p["recall"] else ""
            lines.append(f"| `{p['name']}` | your predicted value ({direction}{recall}) |")
        lines += [
            f"| `{FOLD}` | the cross-validation fold published for the sequence (an integer) |",
            "",
            "### Rules",
            "",
            "- One row per test sequence: none missing, none twice, no unknown ids. Rows for dev sequences "
            "are optional: they are scored on the dev split (shown to you case by case) and never ranked.",
            "- Every prediction is a finite number: no empty cells, NaN or infinity.",
            "- The fold of each row must equal the published fold.",
            f"- At most {mb:g} MB. UTF-8, with or without a byte-order mark; UTF-16 with a byte-order mark "
            "is accepted too. Excel workbooks are not: save as CSV (comma-separated).",
            "- A rejected file lists every problem with its row (the header is row 1) and column, "
            "and does not count against the daily limit.",
            "- JSON clients may post `{\"predictions\": [{\"sequence_id\": ..., "
            + ", ".join(f'"{p["name"]}": ...' for p in props)
            + ', "fold": ...}]}` with the same rules (values as JSON numbers).',
            "",
            "### Scoring",
            "",
            "Per split (dev, public and private, scored from the same file; only public and private rank):",
            "",
            "- **Spearman** rank correlation between your values and the measured ones, per property "
            "(the direction does not matter here: order your values the way the measurements go). "
            "A property whose predictions are all equal scores 0.",
            f"- **Top-{pct} recall** for "
            + (", ".join(f"`{p['name']}`" for p in props if p["recall"]) or "no property")
            + f": the share of the true top {pct} (best by the property's direction: the lowest values where "
            f"lower is better; {_k_text(cfg)} sequences, n the measured ones) that your top {pct} contains. "
            "Sequences tied at the cut share the places left equally, so row order never matters.",
            f"- **Score** = {w['spearman']:g} × mean Spearman + {w['recall']:g} × mean recall.",
            "- A sequence whose property was not measured is left out of that property's metrics.",
        ]
        return "\n".join(lines) + "\n"

    # -- scoring ------------------------------------------------------------
    def score_round(
        self,
        submissions: Mapping[Any, Any],
        *,
        cases: CaseSet,
        truth: Truth,
        config: Mapping[str, Any],
        extra: Mapping[Any, Mapping[str, Any]] | None = None,
    ) -> dict[Any, Result]:
        """Score many submissions at once: per split and property, one vectorised call over all of them.

        Splits scored: ``dev`` (over the dev sequences a submission predicts;
        absent when it predicts none), ``public`` and ``private`` (every
        sequence, required). Metric values per split (None when undefined):

        * ``spearman:<p>``: Spearman of the measured cases of the split; None
          when the truth or the prediction is constant there (or < 2 cases).
        * ``recall:<p>``: top-fraction recall (``top_fraction_recall``); None
          with no measured case.
        * ``spearman``: mean over properties. A property whose *prediction* is
          constant counts 0 (it carries no ranking information); one whose
          *truth* is constant or has < 2 measured cases cannot rank anybody
          and is left out. ``recall``: mean over the recall properties with a
          value. ``score``: the weighted sum; None if a weighted part is None.

        Per-case rows, one per sequence predicted: ``case_id``, ``split``,
        ``fold``, then per property ``predicted:<p>`` and ``actual:<p>`` (None
        when not measured). The ``actual:`` values are truth: the caller shows
        them only where the case's truth may be seen.
        """
        cfg = self.validate_config(config)
        props = cfg["properties"]
        names = [p["name"] for p in props]
        keys = list(submissions)
        ids = cases.ids()
        n, m = len(ids), len(keys)
        splits = np.array([c.split for c in cases.cases])
        optional = frozenset(c.case_id for c in cases.cases if c.split == DEV)
        T = np.array(
            [[_truth_value(truth.values.get(sid, {}).get(p)) for p in names] for sid in ids], dtype=float
        ).reshape(n, len(names))
        P = np.empty((n, len(names), m))
        for s, key in enumerate(keys):
            sub = submissions[key]
            if list(sub.properties) != names:
                raise ValidationFailed(
                    [RowError(f"the submission has the columns {list(sub.properties)}; the benchmark now has {names}")]
                )
            P[:, :, s] = sub.aligned(ids, optional=optional)
        # Which sequences each submission predicts (validated values are finite; dev rows may be absent).
        sent = np.asarray(np.isfinite(P).all(axis=1))

        metrics: list[dict[str, dict[str, float | None]]] = [{} for _ in keys]
        for split in (DEV, *self.splits):
            in_split = splits == split
            if not in_split.any():
                continue
            # Submissions predicting the same cases of the split are scored together (ranked splits: all).
            groups: dict[bytes, list[int]] = {}
            for s in range(m):
                groups.setdefault(sent[in_split, s].tobytes(), []).append(s)
            for members in groups.values():
                rows = in_split & sent[:, members[0]]
                if not rows.any():
                    continue  # no dev sequence predicted: no dev metrics
                block = _split_metrics(T[rows], P[rows][:, :, members], props, cfg)
                for k, s in enumerate(members):
                    metrics[s][split] = block[k]

        folds = [_case_fold(c) for c in cases.cases]
        out: dict[Any, Result] = {}
        for s, key in enumerate(keys):
            case_rows = []
            for i, case in enumerate(cases.cases):
                if not sent[i, s]:
                    continue
                row: dict[str, Any] = {"case_id": case.case_id, "split": case.split, "fold": folds[i]}
                for j, name in enumerate(names):
                    row[f"predicted:{name}"] = float(P[i, j, s])
                    row[f"actual:{name}"] = finite_or_none(T[i, j])
                case_rows.append(row)
            out[key] = Result(metrics=metrics[s], cases=case_rows, provisional=not truth.final)
        return out

    def case_contributions(self, rows: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> np.ndarray | None:
        cfg = self.validate_config(config)
        props = cfg["properties"]
        if not rows:
            return None
        T = np.array([[_num_or_nan(r.get(f"actual:{p['name']}")) for p in props] for r in rows], dtype=float)
        P = np.array([[_num_or_nan(r.get(f"predicted:{p['name']}")) for p in props] for r in rows], dtype=float)
        return _split_contributions(T, P, props, cfg)

    def training_rows(self, cases: CaseSet, truth: Truth, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``case_id``, ``fold``, the input columns and the measured value of each property (empty: not measured)."""
        names = [p["name"] for p in self.validate_config(config)["properties"]]
        return [{"case_id": c.case_id, **c.public, **{p: truth.values.get(c.case_id, {}).get(p) for p in names}}
                for c in cases.cases]


def _split_contributions(T: np.ndarray, pred: np.ndarray, props: list[dict[str, Any]],
                         cfg: Mapping[str, Any]) -> np.ndarray | None:
    """One submission's per-case shares of ``score`` in one split (T, pred: cases x properties),
    following ``_split_metrics``: a property's share over its measured cases, scaled by
    cases / measured so that the mean over every case of the split is the metric."""
    n = T.shape[0]
    w = cfg["weights"]
    spear, rec = [], []
    for j, p in enumerate(props):
        mask = np.isfinite(T[:, j])
        t = T[mask, j]
        if not np.isfinite(pred[mask, j]).all():
            return None
        if t.size >= 2 and np.ptp(t) > 0:
            part = np.zeros(n)
            part[mask] = spearman_contributions(t, pred[mask, j]) * n / t.size
            spear.append(part)
        if p["recall"] and t.size >= 1 and _recall_defined(t.size, cfg):
            part = np.zeros(n)
            part[mask] = recall_contributions(t, pred[mask, j], cfg["recall_fraction"], p["higher_is_better"],
                                              cfg["recall_k"]) * n / t.size
            rec.append(part)
    total = np.zeros(n)
    for weight, parts in ((w["spearman"], spear), (w["recall"], rec)):
        if weight > 0:
            if not parts:
                return None
            total += weight * np.mean(parts, axis=0)
    return total


def _split_metrics(T: np.ndarray, P: np.ndarray, props: list[dict[str, Any]],
                   cfg: Mapping[str, Any]) -> list[dict[str, float | None]]:
    """One split's metrics for each submission: T is (cases, properties), P (cases, properties, submissions)."""
    m = P.shape[2]
    w = cfg["weights"]
    spear: list[dict[str, float | None]] = [{} for _ in range(m)]
    recs: list[dict[str, float | None]] = [{} for _ in range(m)]
    spear_sum = np.zeros(m)
    spear_count = 0
    rec_sum = np.zeros(m)
    rec_count = 0
    for j, p in enumerate(props):
        mask = np.isfinite(T[:, j])
        t, pred = T[mask, j], P[mask, j, :]
        if t.size >= 2 and np.ptp(t) > 0:
            rho = np.asarray(spearman(t, pred))
            spear_sum += np.nan_to_num(rho, nan=0.0)
            spear_count += 1
        else:
            rho = np.full(m, np.nan)
        for s in range(m):
            spear[s][f"spearman:{p['name']}"] = finite_or_none(rho[s])
        if p["recall"]:
            if t.size >= 1 and _recall_defined(t.size, cfg):
                rec = np.asarray(top_fraction_recall(t, pred, cfg["recall_fraction"], p["higher_is_better"], cfg["recall_k"]))
                rec_sum += rec
                rec_count += 1
            else:  # nothing measured, or (recall_k floor) fewer than 1 / fraction cases: no top to find
                rec = np.full(m, np.nan)
            for s in range(m):
                recs[s][f"recall:{p['name']}"] = finite_or_none(rec[s])
    mean_s = spear_sum / spear_count if spear_count else np.full(m, np.nan)
    mean_r = rec_sum / rec_count if rec_count else np.full(m, np.nan)
    out = []
    for s in range(m):
        sp, rc = finite_or_none(mean_s[s]), finite_or_none(mean_r[s])
        parts = [(w["spearman"], sp), (w["recall"], rc)]
        score = None if any(wt > 0 and v is None for wt, v in parts) else sum(wt * v for wt, v in parts if wt > 0)
        out.append({"score": score, "spearman": sp, "recall": rc, **spear[s], **recs[s]})
    return out


def _k_text(cfg: Mapping[str, Any]) -> str:
    if cfg["recall_k"] == "floor":
        return f"int({cfg['recall_fraction']:g} × n)"
    return f"ceil({cfg['recall_fraction']:g} × n), at least 1"


def _recall_defined(n: int, cfg: Mapping[str, Any]) -> bool:
    """Whether n measured cases have a top: always under ``ceil``; under ``floor`` when int(fraction x n) >= 1."""
    try:
        top_fraction_k(n, cfg["recall_fraction"], cfg["recall_k"])
    except ValueError:
        return False
    return True


def _check_recall_k(cases: list[Case], truth: Mapping[str, Mapping[str, float | None]], cfg: Mapping[str, Any],
                    errs: ErrorList) -> None:
    """Each ranked split must give each recall property a top of at least one case: with ``recall_k: floor``
    a split with fewer than 1 / fraction measured values would have k = 0. Refused, naming split and property."""
    for split in RANKED:
        ids = [c.case_id for c in cases if c.split == split]
        if not ids:
            continue
        for p in cfg["properties"]:
            if not p["recall"]:
                continue
            n = sum(truth[i].get(p["name"]) is not None for i in ids)
            if n and not _recall_defined(n, cfg):
                errs.add(f"the {split} split has {n} measured value{'s' if n != 1 else ''} of {p['name']}: with "
                         f"recall_k 'floor' its top {cfg['recall_fraction']:g} is int({cfg['recall_fraction']:g} x "
                         f"{n}) = 0 cases, so recall cannot be computed; give the split more cases, or use "
                         "recall_k 'ceil'", None, p["name"])
    if errs:
        _raise(errs)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _truth_value(v: Any) -> float:
    if v is None or v == "":
        return math.nan
    return float(v)



def _num_or_nan(v: Any) -> float:
    return float("nan") if v is None else float(v)
