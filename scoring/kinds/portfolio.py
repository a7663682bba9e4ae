"""Kind ``portfolio``: CapitalBench-style rounds (spec/portfolio-rounds.txt, DESIGN.md).

A round opens with its option universe, ``option,start_price``, one row for the
S&P 500 (named by config ``benchmark_option``, default ``SP500``: an ordinary,
allocatable option, as CapitalBench's SPY is, whose return is also the
``sp500_return`` every portfolio is compared with), and a track (weekly or
monthly). ``CASH`` is always allocatable and returns 0 %: it is added to every
universe (start price 1, end price 1) and may not be listed.

A submission is one portfolio: JSON ``{"allocations": [{"option", "percent"}],
"confidence": 0..1, "rationale": "text", "repeat": false}`` (or CSV
``option,percent``), percents >= 0 summing to 100 within 0.01 over the
allocatable options and cash. ``"repeat": true`` marks a consistency run: it is
kept beside the counted portfolio and never replaces it.

Truth is ``option,end_price`` with the S&P 500 row; interim snapshots have the
same shape. Every truth version scores the whole round in one call of
``scoring.metrics_portfolio.round_results``: interim snapshots give provisional
``return``, ``sp500_return`` and ``minus_sp500``; the final prices add
``oracle_return`` (the best option, the S&P 500 and cash included), ``regret``,
``beats_cash`` and ``score`` (CapitalBench's rule).

Standings per track: comparison sets (a document beside the rows) and the
all-available history (the rows: context, not the ranking).
"""
from __future__ import annotations

import codecs
import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from scoring import csvfile
from scoring.errors import ErrorList, RowError, ValidationFailed, json_object_unique_keys, json_shown
from scoring.kinds import register
from scoring.kinds.base import (
    STANDINGS_MIN_ROUNDS,
    STANDINGS_MIN_ROUNDS_KEY,
    Case,
    CaseSet,
    Column,
    ConfigReader,
    IdColumn,
    MetricSpec,
    RoundInputs,
    RoundKind,
    RoundOutcome,
    RoundResult,
    RoundSubmission,
    RoundTruth,
    Standing,
    Standings,
    Universe,
    WholeNumber,
    finite_or_none,
    standings_min_rounds_note,
)
from scoring.metrics_portfolio import (
    CASH,
    SCORE_TOLERANCE,
    WEIGHT_SUM_TOLERANCE,
    comparison_set_score,
    comparison_sets,
    consistency_summary,
    price_returns,
    round_results,
)
from scoring.metrics_uncertainty import (
    board_seed,
    contribution_intervals,
    rank_intervals,
    rank_ranges,
    ratio_intervals,
)

OPTION, START, END, PERCENT = "option", "start_price", "end_price", "percent"
DEFAULT_BENCHMARK_OPTION = "SP500"
MAX_OPTION_CHARS = 40
MAX_OPTIONS = 2000
DEFAULT_MAX_UPLOAD_BYTES = 256 * 1024
DEFAULT_MAX_RATIONALE_CHARS = 4000
SUMMARY_CHARS = 240
UNIVERSE_BYTES = 1024 * 1024
SUBMISSION_KEYS = ("allocations", "confidence", "rationale", "repeat")

METRICS = (
    MetricSpec("score", "Score", True, "{:.1f}",
               "CapitalBench score: min(100, 100 x return / oracle return) (final prices only; n/a under a zero "
               "oracle with a loss)"),
    MetricSpec("return", "Return", True, "{:+.2%}", "portfolio return: sum of weight x option return"),
    MetricSpec("sp500_return", "S&P 500", True, "{:+.2%}", "the S&P 500 return over the same window"),
    MetricSpec("minus_sp500", "Minus S&P 500", True, "{:+.2%}", "portfolio return minus the S&P 500 return"),
    MetricSpec("oracle_return", "Oracle", True, "{:+.2%}",
               "maximum possible return: the best option of the saved universe, the S&P 500 and cash (0%) "
               "included"),
    MetricSpec("regret", "Regret", False, "{:.2%}", "oracle return minus portfolio return"),
    MetricSpec("beats_cash", "Beats cash", True, "{}", "whether the return beats cash (0%)"),
)
# What an interim snapshot gives; everything else waits for the final prices.
PROVISIONAL = ("return", "sp500_return", "minus_sp500")

STANDINGS_METRICS = (
    MetricSpec("score", "Score, all rounds", True, "{:.1f}",
               "min(100, 100 x summed returns / summed oracle returns) over every round this entrant completed "
               "(context, not the ranking)"),
    MetricSpec("return_sum", "Summed return", True, "{:+.2%}", "the entrant's returns added up (never compounded)"),
    MetricSpec("oracle_sum", "Summed oracle", True, "{:+.2%}", "the oracle returns of the same rounds added up"),
    MetricSpec("minus_sp500_sum", "Summed minus S&P 500", True, "{:+.2%}", "return minus S&P 500, added up"),
    MetricSpec("beats_cash_rounds", "Rounds beating cash", True, "{:.0f}", "rounds whose return beat cash"),
)


RATIONALE_KEY = WholeNumber("max_rationale_chars", DEFAULT_MAX_RATIONALE_CHARS, 1, 100_000,
                            "must be a whole number from 1 to 100000; got {value}")
MAX_UPLOAD_KEY = WholeNumber("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES, 1024, 10 * 1024 * 1024,
                             "must be an integer from 1024 to 10485760; got {value}")
# The option column of universes, uploads and price files.
OPTION_ID = IdColumn(OPTION, empty="empty option name",
                     invalid="an option is at most {max} printable characters without commas; got {shown}",
                     duplicate="duplicate option {id!r} (first in row {first})", max_chars=MAX_OPTION_CHARS,
                     formula="an option")


def _option_name_problem(name: str) -> str | None:
    problem = OPTION_ID.problem(name)
    if problem is None and name.upper() == CASH:
        return "CASH is always allocatable at 0% and is added by the site; leave it out of the universe"
    return problem


def _plain_text_problem(text: str) -> str | None:
    bad = next((ch for ch in text if not ch.isprintable() and ch not in "\n\t"), None)
    if bad is not None:
        return f"control character U+{ord(bad):04X} is not allowed: the rationale is plain text"
    return None


@register
class PortfolioKind(RoundKind):
    name = "portfolio"
    label = "Portfolio rounds (CapitalBench score)"
    metrics = METRICS
    ranking_metric = "score"
    submission_formats = ("json", "csv")
    tracks = ("weekly", "monthly")
    round_template = "core/kinds/portfolio_round.html"
    ranks_provisional = False
    has_comparison_sets = True
    implicit_universe_ids = (CASH,)
    json_submission_keys = SUBMISSION_KEYS
    # Upload limits only: the rationale is shown, never scored.
    free_config_keys = frozenset({"max_upload_bytes", "max_rationale_chars"})

    # -- configuration ------------------------------------------------------
    def validate_config(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        cfg = ConfigReader(dict(config or {}), allowed={"benchmark_option", "max_rationale_chars",
                                                        "max_upload_bytes", STANDINGS_MIN_ROUNDS})
        cap = cfg.take(RATIONALE_KEY)
        size = cfg.take(MAX_UPLOAD_KEY)
        benchmark = cfg.get("benchmark_option", DEFAULT_BENCHMARK_OPTION)
        if not isinstance(benchmark, str) or _option_name_problem(benchmark.strip()) or benchmark != benchmark.strip():
            cfg.error("benchmark_option", "must name the S&P 500's option: at most "
                      f"{MAX_OPTION_CHARS} printable characters without commas, not CASH; got {json_shown(benchmark)}")
        min_rounds = cfg.take(STANDINGS_MIN_ROUNDS_KEY)
        cfg.done()
        return {"benchmark_option": benchmark, "max_rationale_chars": cap, "max_upload_bytes": size,
                STANDINGS_MIN_ROUNDS: min_rounds}

    def max_upload_bytes(self, config: Mapping[str, Any]) -> int:
        return self.validate_config(config)["max_upload_bytes"]

    def chart_metrics(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return ("return",)

    def chart_reference(self, config: Mapping[str, Any]) -> tuple[str, str] | None:
        return ("sp500_return", "S&P 500")

    def withheld_metrics(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(m.name for m in METRICS if m.name not in PROVISIONAL)

    def standings_metrics(self, config: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
        return STANDINGS_METRICS

    def leaderboard_note(self, config: Mapping[str, Any]) -> str:
        return ("All-available history of this track: every round an entrant completed, returns summed "
                "(never compounded) against the summed oracle. Shown as context, not as the ranking: models "
                "are ranked inside comparison sets, over the rounds every member completed."
                + standings_min_rounds_note(self.validate_config(config)[STANDINGS_MIN_ROUNDS]))

    # -- universe -------------------------------------------------------------
    def parse_universe(self, data: bytes, *, filename: str, config: Mapping[str, Any]) -> CaseSet:
        """``option,start_price``: each option once, a positive start price, one row for the S&P 500
        (``benchmark_option``); ``CASH`` is implicit (appended, start price 1)."""
        index = self.validate_config(config)["benchmark_option"]
        errs = ErrorList(file=filename or "universe.csv")
        table = csvfile.read_table(data, errs=errs, max_bytes=UNIVERSE_BYTES, required=(OPTION, START),
                                   what="option", keep_going=True)
        pos = table.position()
        seen = OPTION_ID.first_rows()
        cases: list[Case] = []
        for row, rec in table.rows:
            name = rec[pos[OPTION]].strip()
            ok = True
            if (problem := _option_name_problem(name)) is not None:
                errs.add(problem, row, OPTION)
                ok = False
            else:
                ok = seen.take(name, row, errs)
            if START in table.missing:  # the header's problem is named; the options are still checked
                continue
            price, message = csvfile.number(rec[pos[START]])
            if message:
                errs.add(message, row, START)
                ok = False
            elif price is not None and price <= 0:
                errs.add(f"a start price must be positive; got {csvfile.show(rec[pos[START]].strip())}", row, START)
                ok = False
            if ok:
                cases.append(Case(name, "public", {START: price}))
        if not errs:
            if index not in seen:
                errs.add(f"no {index} row: the universe needs the S&P 500's start price (option {index}, config "
                         "benchmark_option)", None, OPTION)
            elif len(seen) > MAX_OPTIONS:
                errs.add(f"the universe has {len(seen)} options; at most {MAX_OPTIONS}", None, OPTION)
        errs.raise_if_any()
        cases.append(Case(CASH, "public", {START: 1.0}))
        return CaseSet(cases)

    # -- submissions ----------------------------------------------------------
    def parse_round_submission(self, data: bytes, *, filename: str, universe: Universe,
                               config: Mapping[str, Any]) -> RoundSubmission:
        """JSON (``allocations``, ``confidence``, ``rationale``, ``repeat``) or CSV ``option,percent``."""
        cfg = self.validate_config(config)
        csvfile.check_size(data, cfg["max_upload_bytes"])
        # JSON by its name or by its first character past blanks and a byte-order mark (UTF-8 as
        # Notepad and PowerShell save it, or UTF-16), which csvfile.decode then reads as for a CSV.
        start = data.removeprefix(codecs.BOM_UTF8)
        if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            start = start[:4096].decode("utf-16", errors="ignore").encode()
        head = start.lstrip()[:1]
        if (filename or "").lower().endswith(".json") or head in (b"{", b"["):
            errs = ErrorList()
            text = csvfile.decode(data, errs)
            if text is None:
                errs.fail()
            try:
                body = json.loads(text, object_pairs_hook=json_object_unique_keys)
            except (ValueError, RecursionError) as exc:
                raise ValidationFailed([RowError(f"the file is not valid JSON: {exc}", column="file")]) from None
            return self.parse_round_json(body, universe=universe, config=config)
        errs = ErrorList()
        table = csvfile.read_table(data, errs=errs, max_bytes=cfg["max_upload_bytes"], required=(OPTION, PERCENT),
                                   what="allocation")
        pos = table.position()
        rows = [(row, rec[pos[OPTION]], rec[pos[PERCENT]]) for row, rec in table.rows]
        values = self._allocations(rows, universe, errs, csv_rows=True, complete=not errs)  # no row left out
        errs.raise_if_any()
        return RoundSubmission(values, (PERCENT,), {"confidence": None, "rationale": ""})

    def parse_round_json(self, predictions: Any, *, universe: Universe, config: Mapping[str, Any]) -> RoundSubmission:
        """The submission object (or a bare list of allocations); every problem names its field."""
        cfg = self.validate_config(config)
        errs = ErrorList()
        if isinstance(predictions, list):
            predictions = {"allocations": predictions}
        if not isinstance(predictions, dict):
            raise ValidationFailed([RowError('send an object {"allocations": [...], "confidence": 0.7, '
                                             '"rationale": "..."}', column="allocations")])
        for key in predictions:
            if key not in SUBMISSION_KEYS:
                errs.add(f"unknown field {csvfile.show(str(key))}; the fields are {', '.join(SUBMISSION_KEYS)}",
                         None, str(key)[:100])
        allocations = predictions.get("allocations")
        rows: list[tuple[int, Any, Any]] = []
        complete = False  # every allocation well formed: their percents' sum can be checked
        if not isinstance(allocations, list) or not allocations:
            errs.add('allocations must be a non-empty list of {"option": name, "percent": number}', None,
                     "allocations")
        elif len(allocations) > len(universe) + 1:
            errs.add(f"allocations lists {len(allocations)} entries; the universe has {len(universe)} options",
                     None, "allocations")
        else:
            for i, item in enumerate(allocations, start=1):
                if not isinstance(item, dict) or set(item) != {OPTION, PERCENT}:
                    errs.add('each allocation is {"option": name, "percent": number}', i, f"allocations[{i}]")
                    continue
                rows.append((i, item[OPTION], item[PERCENT]))
            complete = len(rows) == len(allocations)
        values = self._allocations(rows, universe, errs, csv_rows=False, complete=complete) if rows else None

        confidence = predictions.get("confidence")
        if confidence is None:
            errs.add("confidence is required: a number from 0 to 1", None, "confidence")
        elif isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
                or not 0 <= confidence <= 1 or not math.isfinite(confidence):  # range first: 10**400 fits no float
            errs.add(f"confidence must be a number from 0 to 1; got {json_shown(confidence, 40)}", None,
                     "confidence")
        rationale = predictions.get("rationale", "")
        if rationale is None:
            rationale = ""
        if not isinstance(rationale, str):
            errs.add("rationale must be text (a JSON string)", None, "rationale")
            rationale = ""
        elif len(rationale) > cfg["max_rationale_chars"]:
            errs.add(f"rationale is {len(rationale):,} characters; at most {cfg['max_rationale_chars']:,}", None,
                     "rationale")
        elif (problem := _plain_text_problem(rationale)) is not None:
            errs.add(problem, None, "rationale")
        repeat = predictions.get("repeat", False)
        if not isinstance(repeat, bool):
            errs.add("repeat must be true or false", None, "repeat")
        errs.raise_if_any()
        assert values is not None and confidence is not None  # else an error was raised above
        return RoundSubmission(values, (PERCENT,), {"confidence": float(confidence), "rationale": rationale.strip()},
                               repeat=bool(repeat))

    def _allocations(self, rows: Iterable[tuple[int, Any, Any]], universe: Universe, errs: ErrorList, *,
                     csv_rows: bool, complete: bool) -> np.ndarray:
        """Percents aligned to the universe (SP500 row 0); errors name the row and the field. ``complete``:
        ``rows`` are every allocation sent (none was unreadable), so their sum can be checked."""
        values = np.zeros((len(universe), 1))
        first: dict[int, int] = {}
        # The sum is checked whenever every percent is a number, whatever the option names' problems:
        # percents listed under an unknown or repeated option count in what the participant sent.
        unplaced, percents_ok = 0.0, complete

        def where(i: int, field: str) -> tuple[int, str]:
            return (i, field) if csv_rows else (i, f"allocations[{i}].{field}")

        for i, option, raw in rows:
            name = option.strip() if isinstance(option, str) else None
            at = universe.index.get(name) if name else None
            if name and at is None and name.upper() == CASH:
                at = universe.index.get(CASH)
            if not name:
                errs.add("empty option name" if isinstance(option, str) else "option must be a name (text)",
                         *where(i, OPTION))
            elif at is None:
                errs.add(f"unknown option {csvfile.show(name)}: not in this round's universe", *where(i, OPTION))
            elif at in first:
                errs.add(f"option {name!r} is listed twice (first at {first[at]})", *where(i, OPTION))
                at = None
            else:
                first[at] = i
            if csv_rows:
                value, message = csvfile.number(raw)
            elif isinstance(raw, bool) or not isinstance(raw, (int, float)):
                value, message = None, f"percent must be a number; got {json_shown(raw, 40)}"
            elif not _finite(raw):
                value, message = None, "percent must be a finite number"
            else:
                value, message = float(raw), None
            if message is None and value is not None and value < 0:
                message = f"percent must be at least 0 (no short positions); got {value:g}"
            if message:
                errs.add(message, *where(i, PERCENT))
                percents_ok = False
            elif at is not None:
                values[at, 0] = value
            elif value is not None:
                unplaced += value
        if percents_ok:
            total = float(values.sum()) + unplaced
            if abs(total - 100.0) > WEIGHT_SUM_TOLERANCE:
                errs.add(f"allocations must sum to 100 (cash included) within {WEIGHT_SUM_TOLERANCE}; they sum to "
                         f"{total:.6g}", None, PERCENT if csv_rows else "allocations")
        return values

    def format_help(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        return "\n".join([
            "### Submission format",
            "",
            "Each round publishes its option universe with start prices (download it from the round's page "
            f"or `GET /api/benchmarks/{{slug}}/rounds/{{n}}/universe/`). The `{cfg['benchmark_option']}` row is the "
            "S&P 500: an option like any other, which you may hold, and the return every portfolio is compared "
            "with. `CASH` is always allocatable and returns 0%.",
            "",
            "Upload one portfolio as JSON:",
            "",
            "```json",
            f'{{"allocations": [{{"option": "{cfg["benchmark_option"]}", "percent": 60}}, '
            '{"option": "CASH", "percent": 40}],',
            ' "confidence": 0.62,',
            ' "rationale": "Plain text: why this allocation."}',
            "```",
            "",
            "or a CSV `option,percent` (then without confidence or rationale).",
            "",
            "- percents are at least 0 and sum to 100 (cash included) within 0.01; options left out hold 0;",
            "- `confidence` is a number from 0 to 1;",
            f"- `rationale` is plain text, at most {cfg['max_rationale_chars']:,} characters (shown escaped);",
            '- `"repeat": true` marks a consistency run: it never replaces your counted portfolio and is '
            "summarised on its own table.",
            "",
            "Your latest upload before the round closes is your one frozen portfolio; earlier ones stay in your "
            "history, marked replaced. A rejected upload names every problem's field and does not count.",
            "",
            "### Scoring",
            "",
            "- option return: end price / start price - 1; portfolio `return`: the allocation-weighted sum;",
            "- `sp500_return` over the same window, `minus_sp500` = return - S&P 500 return;",
            "- `oracle_return`: the best return in the saved universe, the S&P 500 and cash (0%) included;",
            "- `regret` = oracle - return; `beats_cash`: return > 0;",
            "- `score` (CapitalBench's rule) = min(100, 100 x return / oracle); with an oracle within 1e-7 of zero, "
            "a return within 1e-7 of it scores 100 and a loss is n/a.",
            "",
            "Interim price snapshots give a provisional return (and against the S&P 500); score, rank, regret "
            "and the oracle wait for the final prices. Weekly and monthly tracks are ranked apart, inside "
            "comparison sets: `min(100, 100 x sum(returns) / sum(oracle returns))` over the rounds every member "
            "completed.",
        ]) + "\n"

    def example_submission(self, cases: CaseSet, config: Mapping[str, Any]) -> tuple[str, bytes]:
        index = self.validate_config(config)["benchmark_option"]
        options = [c.case_id for c in cases.cases if c.case_id not in (index, CASH)][:3]
        share = round(80.0 / max(len(options), 1), 2)
        allocations = [{"option": o, "percent": share} for o in options]
        allocations.append({"option": CASH, "percent": round(100.0 - share * len(options), 2)})
        body = {"allocations": allocations, "confidence": 0.5,
                "rationale": "Example: an even split over three options, the rest in cash."}
        return "example_portfolio.json", (json.dumps(body, indent=2) + "\n").encode()

    # -- truth ------------------------------------------------------------------
    def truth_columns(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return (END,)

    def parse_truth(self, data: bytes, *, filename: str, universe: Universe, config: Mapping[str, Any],
                    final: bool, as_of: dt.date | None = None) -> RoundTruth:
        """``option,end_price``: options of the universe at most once, the S&P 500 row required;
        an option left out has no price yet (portfolios holding it, and the oracle, wait)."""
        index = self.validate_config(config)["benchmark_option"]
        errs = ErrorList(file=filename or "prices.csv")
        table = csvfile.read_table(data, errs=errs, max_bytes=UNIVERSE_BYTES, required=(OPTION, END), what="option",
                                   keep_going=True)
        pos = table.position()
        values = np.full((len(universe), 1), np.nan)
        first: dict[int, int] = {}
        for row, rec in table.rows:
            name = rec[pos[OPTION]].strip()
            at = universe.index.get(name)
            if name.upper() == CASH:
                errs.add("CASH returns 0% by definition; leave it out of the price file", row, OPTION)
                at = None
            elif at is None:
                errs.add(f"unknown option {csvfile.show(name)}: not in this round's universe" if name
                         else "empty option name", row, OPTION)
            elif at in first:
                errs.add(OPTION_ID.duplicate_message(name, first[at]), row, OPTION)
                at = None
            else:
                first[at] = row
            if END in table.missing:  # the header's problem is named; the options are still checked
                continue
            value, message = csvfile.number(rec[pos[END]])
            if message is None and value is not None and value < 0:
                message = f"a price cannot be negative; got {value:g}"
            if message:
                errs.add(message, row, END)
            elif at is not None:
                values[at, 0] = value
        if not errs and universe.index.get(index) not in first:
            errs.add(f"no {index} row: every price file needs the S&P 500's price", None, OPTION)
        errs.raise_if_any()
        values[universe.index[CASH], 0] = 1.0
        return RoundTruth(values, (END,), final=final, as_of=as_of)

    # -- scoring ------------------------------------------------------------------
    def round_intervals(self, inputs: RoundInputs, config: Mapping[str, Any], *,
                        seed: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Final truth only: each option's share of the score, options x 100 x weight x return /
        oracle (their mean is the score), bootstrapped over the options."""
        truth = inputs.truth
        if truth is None or not truth.final or not len(inputs.keys):
            return None
        start = np.asarray(inputs.universe.columns[START], dtype=np.float64)
        returns = price_returns(start, truth.column(END))
        if not np.isfinite(returns).all():
            return None
        oracle = max(float(returns.max()), 0.0)
        if oracle <= SCORE_TOLERANCE:
            return None
        weights = np.asarray(inputs.values[:, :, 0], dtype=np.float64)
        totals = weights.sum(axis=1, keepdims=True)
        weights = np.where(totals > 0, weights / np.where(totals > 0, totals, 1.0), weights)
        shares = weights.T * returns[:, None] * (100.0 * len(returns) / oracle)  # options x portfolios
        low, high = contribution_intervals(shares, seed=seed)
        return np.minimum(low, 100.0), np.minimum(high, 100.0)

    def score_round_version(self, inputs: RoundInputs, config: Mapping[str, Any]) -> RoundOutcome:
        """Every option is scored, the S&P 500 too (it is allocatable and may be the oracle); its return
        is also ``sp500_return``. Cash is an option priced 1 at start and end."""
        universe, truth = inputs.universe, inputs.truth
        assert truth is not None, "a truth version is scored with its truth"
        start = np.asarray(universe.columns[START], dtype=np.float64)
        end = truth.column(END)
        index = universe.index[self.validate_config(config)["benchmark_option"]]
        notes: list[str] = []
        if not truth.final:
            notes.append(f"Provisional: prices as of {truth.as_of or 'an interim snapshot'}. Returns are interim; "
                         "score, rank, regret, oracle return and beats-cash are withheld until the final prices.")
        missing = [universe.ids[i] for i in np.flatnonzero(np.isnan(end))]
        if missing:
            shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
            notes.append(f"No price yet for {len(missing)} option(s) ({shown}): portfolios holding them show n/a"
                         + (", and the oracle, regret and score wait for the full price list." if truth.final
                            else "."))
        n = len(inputs.keys)
        if n == 0:
            return RoundOutcome([], notes + ["no counted portfolios"])
        weights = np.ascontiguousarray(inputs.values[:, :, 0])
        totals = weights.sum(axis=1, keepdims=True)
        weights = np.where(totals > 0, weights * 100.0 / np.where(totals > 0, totals, 1.0), weights)
        out = round_results(weights, start, end, sp500_start=start[index], sp500_end=end[index], final=truth.final)
        metrics = []
        for i in range(n):
            m = {name: finite_or_none(out[name][i]) for name in ("score", "return", "sp500_return", "minus_sp500",
                                                       "oracle_return", "regret")}
            m["beats_cash"] = None if np.isnan(out["beats_cash"][i]) else bool(out["beats_cash"][i])
            metrics.append(m)
        zero = truth.final and out["oracle_return"].size and abs(out["oracle_return"][0]) <= SCORE_TOLERANCE
        if zero:
            notes.append("No option gained this round (the oracle is cash, 0%): a 0% portfolio scores 100 and a "
                         "loss has no finite score (n/a).")
        return RoundOutcome(metrics, notes)

    # -- the per-option table -------------------------------------------------------
    def case_columns(self, config: Mapping[str, Any]) -> tuple[Column, ...]:
        return (
            Column("option", "option", "{}"),
            Column("percent", "allocation", "{:.2f}%", "your percent"),
            Column("start_price", "start price", "{:,.4g}"),
            Column("end_price", "end price", "{:,.4g}"),
            Column("return", "option return", "{:+.2%}", "end price / start price - 1"),
            Column("contribution", "contribution", "{:+.3%}", "allocation x option return; the column sums to "
                                                              "the portfolio return"),
        )

    def round_case_rows(self, values: np.ndarray, *, universe: Universe, truth: RoundTruth,
                        config: Mapping[str, Any]) -> list[dict[str, Any]]:
        start = np.asarray(universe.columns[START], dtype=np.float64)
        end = truth.column(END)
        returns = price_returns(start, end)
        percent = np.asarray(values, dtype=np.float64).reshape(-1)
        return [{"option": cid, "percent": finite_or_none(percent[i]), "start_price": finite_or_none(start[i]),
                 "end_price": finite_or_none(end[i]), "return": finite_or_none(returns[i]),
                 "contribution": finite_or_none(percent[i] / 100 * returns[i])}
                for i, cid in enumerate(universe.ids)]

    # -- what the round page shows --------------------------------------------------
    def round_public(self, universe: Universe, frozen: Sequence[Mapping[str, Any]],
                     config: Mapping[str, Any]) -> dict[str, Any]:
        """Start prices; after close the frozen portfolios (holdings, confidence, rationale and its
        summary, audit hash) and the consistency runs summarised per entrant.

        ``frozen``: dicts with ``entrant``, ``audit_hash``, ``received_at``, ``repeat``,
        ``values`` (ids x 1) and ``meta``; empty while the round is open.
        """
        start = np.asarray(universe.columns[START], dtype=np.float64)
        index = self.validate_config(config)["benchmark_option"]
        options = [{"option": cid, "start_price": float(start[i]), "index": cid == index,
                    "cash": cid == CASH} for i, cid in enumerate(universe.ids)]
        names = list(universe.ids)
        portfolios: list[dict[str, Any]] = []
        runs: dict[Any, list[np.ndarray]] = {}
        for f in frozen:
            percent = np.asarray(f["values"], dtype=np.float64).reshape(-1)
            if f.get("repeat"):
                runs.setdefault(f["entrant"], []).append(percent)
                continue
            order = sorted(range(len(names)), key=lambda j: (-percent[j], j))
            meta = f.get("meta") or {}
            rationale = str(meta.get("rationale") or "")
            summary = " ".join(rationale.split())
            if len(summary) > SUMMARY_CHARS:
                summary = summary[:SUMMARY_CHARS].rsplit(" ", 1)[0] + " …"
            portfolios.append({
                "entrant": f["entrant"], "audit_hash": f["audit_hash"], "received_at": f["received_at"],
                "confidence": meta.get("confidence"), "rationale": rationale, "rationale_summary": summary,
                "holdings": [{"option": names[j], "percent": float(percent[j])} for j in order if percent[j] > 0],
            })
            runs.setdefault(f["entrant"], []).insert(0, percent)
        consistency = []
        for entrant, entrant_runs in sorted(runs.items()):
            if len(entrant_runs) < 2:
                continue
            agreement = consistency_summary(np.vstack(entrant_runs), names)
            consistency.append({"entrant": entrant, **agreement})
        return {"options": options, "portfolios": portfolios, "consistency": consistency}

    # -- standings ------------------------------------------------------------------
    def standings(self, results: Sequence[RoundResult], config: Mapping[str, Any]) -> Standings:
        """All-available history per entrant (the rows) and the comparison sets (a document), for
        the track of ``results`` (the engine calls this once per track)."""
        if not results:
            return Standings([])
        track = results[0].track
        ordered = sorted(results, key=lambda r: r.number)
        oracle: dict[int, float] = {}
        returns: dict[Any, dict[int, float]] = {}
        extra: dict[Any, dict[int, tuple[float | None, float | None]]] = {}
        first_at: dict[Any, Any] = {}
        for r in ordered:
            for entrant, m in r.metrics.items():
                ret, orc = m.get("return"), m.get("oracle_return")
                if ret is None or orc is None:
                    continue  # not completed: a held option without a price, or no full price list
                oracle[r.number] = float(orc)
                returns.setdefault(entrant, {})[r.number] = float(ret)
                extra.setdefault(entrant, {})[r.number] = (m.get("minus_sp500"), m.get("beats_cash"))
                at = r.received_at.get(entrant)
                if at is not None and (entrant not in first_at or at < first_at[entrant]):
                    first_at[entrant] = at
        rows: list[Standing] = []
        history = []
        for entrant, by_round in returns.items():
            numbers = sorted(by_round)
            p_sum = sum(by_round[n] for n in numbers)
            o_sum = sum(oracle[n] for n in numbers)
            score = comparison_set_score([by_round[n] for n in numbers], [oracle[n] for n in numbers])
            minus = [v for n in numbers if (v := extra[entrant][n][0]) is not None]
            beats = sum(1 for n in numbers if extra[entrant][n][1])
            metrics = {"score": score, "return_sum": p_sum, "oracle_sum": o_sum,
                       "minus_sp500_sum": sum(minus) if minus else None, "beats_cash_rounds": float(beats)}
            rows.append(Standing(entrant, score, metrics, len(numbers), first_at[entrant], track))
            history.append({"entrant": entrant, "rounds": numbers, "score": score, "return_sum": p_sum,
                            "oracle_sum": o_sum})
        sets = []
        for cs in comparison_sets({e: list(r) for e, r in returns.items()}, round_order=sorted(oracle)):
            o_sum = sum(oracle[n] for n in cs.rounds)
            set_rows = []
            for entrant in cs.members:
                p = [returns[entrant][n] for n in cs.rounds]
                score = comparison_set_score(p, [oracle[n] for n in cs.rounds]) if cs.rounds else None
                set_rows.append({"entrant": entrant, "score": score, "return_sum": sum(p), "oracle_sum": o_sum})
            order = {e: i for i, e in enumerate(cs.members)}
            set_rows.sort(key=lambda row: (row["score"] is None, -(row["score"] or 0.0), -row["return_sum"],
                                           order[row["entrant"]]))
            ranked = [row for row in set_rows if row["score"] is not None]
            for rank, row in enumerate(ranked, start=1):
                row["rank"] = rank
            for row in set_rows[len(ranked):]:  # no score (no shared round, or a loss on a zero oracle sum)
                row["rank"] = None  # unranked, after the ranked rows
            _set_intervals(set_rows, [[returns[row["entrant"]][n] for n in cs.rounds] for row in set_rows],
                           [oracle[n] for n in cs.rounds], seed=board_seed("comparison_set", track, *cs.members))
            sets.append({"members": list(cs.members), "joined": list(cs.joined), "rounds": list(cs.rounds),
                         "oracle_sum": o_sum, "rows": set_rows})
        history.sort(key=lambda h: (h["score"] is None, -(h["score"] or 0.0), -h["return_sum"]))
        return Standings(rows, {(track, "comparison_sets"): {"sets": sets, "history": history}})


def _set_intervals(rows: list[dict[str, Any]], returns: list[list[float]], oracle: list[float], *, seed: int) -> None:
    """Each comparison-set row's ``interval`` (95%, resampling the set's rounds: min(100, 100 x summed
    return / summed oracle) per resample) and ``rank_range`` within the set; None without rounds."""
    for row in rows:
        row["interval"], row["rank_range"] = None, None
    if not oracle or not rows:
        return
    low, high = ratio_intervals(np.array(returns, dtype=np.float64).T, oracle, seed=seed)
    low, high = np.minimum(100 * low, 100.0), np.minimum(100 * high, 100.0)
    scores = np.array([np.nan if r["score"] is None else r["score"] for r in rows])
    # The boards' rule (``rank_intervals``): an unscored row is unranked and counts against nobody.
    best, worst = rank_ranges(*rank_intervals(scores, low, high))
    for i, row in enumerate(rows):
        if np.isfinite(scores[i]):
            row["rank_range"] = [int(best[i]), int(worst[i])]
            if np.isfinite(low[i]) and np.isfinite(high[i]):
                row["interval"] = [float(low[i]), float(high[i])]


def _finite(value: int | float) -> bool:
    """Whether a JSON number is a finite float: an integer literal past float's range (10**400) is not."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
