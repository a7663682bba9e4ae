"""The interface every benchmark kind implements.

A kind is pure: bytes in, typed tables out; tables in, metrics and per-case rows
out. The Django layer stores what a kind returns and never computes a metric.

Data exchanged with the Django layer:

* ``CaseSet``: the cases of a round as the organiser loaded them: external id,
  split and the participant-visible attributes (``public`` dict, e.g. the fold
  and chain sequences of an antibody or the text of a press release). Splits:
  ``dev`` (truth shown to participants, never ranked), ``public`` (ranks the
  public leaderboard) and ``private`` (ranks after the reveal).
* ``Truth``: per case id, a dict of truth values (as loaded from the bundle or a
  truth snapshot), plus round-level extras (``extra``: stakes, benchmark S&P
  returns...). ``final`` is False for interim snapshots: scores computed from it
  are provisional.
* A parsed submission: whatever ``parse_submission`` returns; it must be
  JSON-serialisable through ``dump_submission`` so a worker can re-load it from
  the stored canonical payload, and ``canonical_bytes`` is what the audit hash
  covers.
* ``Result``: metrics per split (``{"public": {"score": 0.4, ...}, "private": {...}}``)
  and per-case rows (dicts with at least ``case_id`` and ``split``).
"""
from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from scoring import csvfile
from scoring.errors import ErrorList, RowError, ValidationFailed, json_shown
from scoring.metrics_uncertainty import board_seed, ragged_mean_intervals


@dataclass(frozen=True)
class MetricSpec:
    name: str
    label: str
    higher_is_better: bool = True
    fmt: str = "{:.4f}"  # how pages format the value
    description: str = ""


def no_negative_zero(text: str) -> str:
    """A formatted value without the sign of one that rounds to zero ("-0.0000" reads "0.0000",
    "-0.00%" "0.00%"): every page's number formatting ends here."""
    if text.startswith("-") and not any(ch in "123456789" for ch in text):
        return text[1:]
    return text


# From this magnitude a value is shown in 4 significant digits (1e+300): "{:.3f}" of 1e300 is 305
# characters, and one such value (a participant's predicted_score) widened a whole table past the screen.
HUGE_MAGNITUDE = 1e15


def format_number(value: float, fmt: str) -> str:
    """``fmt.format(value)`` as pages show it: without a negative zero, and a magnitude of
    ``HUGE_MAGNITUDE`` or more in 4 significant digits. Raises what ``fmt.format`` raises."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= HUGE_MAGNITUDE:
        return f"{value:.4g}"
    return no_negative_zero(fmt.format(value))


DEV = "dev"
RANKED_SPLITS = ("public", "private")
SPLITS = (DEV, *RANKED_SPLITS)


@dataclass
class Case:
    case_id: str
    split: str = "public"  # "dev", "public" or "private"
    public: dict[str, Any] = field(default_factory=dict)
    # Staff-only attributes kept with the case (original text, identifiers).
    private: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaseSet:
    cases: list[Case]

    def ids(self) -> list[str]:
        return [c.case_id for c in self.cases]

    def by_id(self) -> dict[str, Case]:
        return {c.case_id: c for c in self.cases}

    def in_splits(self, splits: Collection[str]) -> CaseSet:
        """The cases of the given splits, in order."""
        return CaseSet([c for c in self.cases if c.split in splits])


@dataclass
class Truth:
    values: dict[str, dict[str, Any]]  # case_id -> {column: value}
    final: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


LATE_SUBMISSIONS = "late_submissions"


def late_submissions_config(config: Mapping[str, Any]) -> tuple[dict[str, bool], str | None]:
    """The ``late_submissions`` key of a static kind's config, when given: (``{}`` or ``{key: bool}``,
    the problem with its value or None)."""
    if LATE_SUBMISSIONS not in config:
        return {}, None
    value = config[LATE_SUBMISSIONS]
    if not isinstance(value, bool):
        return {}, f"{LATE_SUBMISSIONS} must be true or false; got {json_shown(value)}"
    return {LATE_SUBMISSIONS: value}, None


@dataclass
class Result:
    metrics: dict[str, dict[str, float | None]]  # split -> metric -> value
    cases: list[dict[str, Any]] = field(default_factory=list)
    provisional: bool = False


@dataclass
class Bundle:
    """What a kind makes of a bundle folder: cases, truth and the normalised config."""

    config: dict[str, Any]
    cases: CaseSet
    truth: Truth



# ---------------------------------------------------------------------------
# The input toolkit every kind shares: metric values, config keys, id columns
# ---------------------------------------------------------------------------

def finite_or_none(v: Any) -> float | None:
    """A metric or per-case value as stored and shown: a float, or None for missing, NaN or infinite."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def config_error(key: str, message: str, *, file: str | None = "benchmark.json") -> RowError:
    """A problem with one key of a benchmark's config: ``config key 'k': <message>``."""
    return RowError(f"config key {key!r}: {message}", column=key, file=file)


@dataclass(frozen=True)
class WholeNumber:
    """A config key holding a whole number in ``low..high`` (never a bool); ``message`` says what
    it must be, with ``{value}`` where the offending value goes (spelled as JSON)."""

    key: str
    default: int
    low: int
    high: int
    message: str


@dataclass(frozen=True)
class Choice:
    """A config key holding one of ``choices``; ``message`` as for ``WholeNumber``."""

    key: str
    default: str
    choices: tuple[str, ...]
    message: str


class ConfigReader:
    """A benchmark's config read key by key, every problem collected (``done`` raises them all).

    Unknown keys are refused up front, naming the ``allowed`` ones (sorted unless
    ``keep_order``; ``listed`` is the word before the list). Each ``take`` returns a
    usable value even when the key is wrong (its default), so later checks can go on.
    """

    def __init__(self, config: Mapping[str, Any], *, allowed: Collection[str], listed: str = "allowed",
                 keep_order: bool = False, file: str | None = "benchmark.json"):
        self.config = config
        self.file = file
        self.errors: list[RowError] = []
        names = ", ".join(allowed if keep_order else sorted(allowed))
        for key in config:
            if key not in allowed:
                self.error(str(key), f"unknown key; {listed}: {names}")

    def error(self, key: str, message: str) -> None:
        self.errors.append(config_error(key, message, file=self.file))

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    def take(self, spec: WholeNumber | Choice) -> Any:
        """The value of a declared key, or its default after recording what is wrong."""
        value = self.config.get(spec.key, spec.default)
        if isinstance(spec, WholeNumber):
            ok = isinstance(value, int) and not isinstance(value, bool) and spec.low <= value <= spec.high
        else:
            ok = isinstance(value, str) and value in spec.choices
        if ok:
            return value
        self.error(spec.key, spec.message.format(value=json_shown(value)))
        return spec.default

    def done(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)


@dataclass(frozen=True)
class IdColumn:
    """An id column of a kind's files and the words its messages use, checked in one place.

    ``problem`` refuses an empty id, one too long or unprintable (or not matching
    ``pattern`` when set), one with a comma (unless ``commas``), one a spreadsheet
    would run as a formula (``formula`` names what it is; None: not checked);
    ``first_rows`` tracks duplicates, "first in row N". Templates take ``{max}``,
    ``{shown}`` (the id as ``show`` quotes it), ``{id}`` and ``{first}``.
    """

    column: str = "id"
    empty: str = "empty id"
    invalid: str = "an id is at most {max} printable characters without commas; got {shown}"
    duplicate: str = "duplicate id {id!r} (first in row {first})"
    max_chars: int = 100
    commas: bool = False
    formula: str | None = "an id"
    pattern: re.Pattern[str] | None = None
    show: Callable[[str], str] = csvfile.show

    def problem(self, cid: str) -> str | None:
        """Why ``cid`` (stripped) cannot be an id, or None."""
        if not cid:
            return self.empty
        bad = (not self.pattern.fullmatch(cid) if self.pattern is not None
               else len(cid) > self.max_chars or not cid.isprintable() or (not self.commas and "," in cid))
        if bad:
            return self.invalid.format(max=self.max_chars, shown=self.show(cid))
        if self.formula is not None and csvfile.looks_like_formula(cid):
            return csvfile.formula_id_message(self.formula, cid)
        return None

    def duplicate_message(self, cid: str, first: int) -> str:
        return self.duplicate.format(id=cid, shown=self.show(cid), first=first)

    def first_rows(self) -> FirstRows:
        return FirstRows(self)


class FirstRows:
    """The ids of one file seen so far and the row each first appeared on."""

    def __init__(self, column: IdColumn):
        self.column = column
        self.rows: dict[str, int] = {}

    def __contains__(self, cid: object) -> bool:
        return cid in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, cid: str, row: int, errs: ErrorList) -> bool:
        """Record ``cid`` at ``row``; a second sighting adds the duplicate error and answers False."""
        first = self.rows.get(cid)
        if first is not None:
            errs.add(self.column.duplicate_message(cid, first), row, self.column.column)
            return False
        self.rows[cid] = row
        return True

    def check(self, cid: str, row: int, errs: ErrorList) -> bool:
        """``IdColumn.problem`` then ``take``: whether ``cid`` is a new, valid id (errors added if not)."""
        message = self.column.problem(cid)
        if message is not None:
            errs.add(message, row, self.column.column)
            return False
        return self.take(cid, row, errs)


class Kind:
    """Base class. Subclasses set the class attributes and implement the methods."""

    # Round kinds (``RoundKind``) open rounds with a universe and score each truth version whole.
    is_round_kind: ClassVar[bool] = False
    # Config keys that decide no score, rank or standing (upload limits, what the site accepts): a change
    # to them alone rescores nothing. Round kinds: the keys an organiser may still change once a round
    # has truth (every other is fixed then).
    free_config_keys: ClassVar[frozenset[str]] = frozenset({"max_upload_bytes", "late_submissions"})
    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    metrics: ClassVar[tuple[MetricSpec, ...]] = ()
    ranking_metric: ClassVar[str] = "score"
    # Does scoring need the whole round at once (meta model, pairwise stats)?
    scores_whole_round: ClassVar[bool] = False
    # Splits that rank entrants on a leaderboard; the first is the public one.
    # A kind scores the ``dev`` split too when the cases have one, but dev
    # metrics never reach a leaderboard.
    splits: ClassVar[tuple[str, ...]] = RANKED_SPLITS
    # File names a bundle folder may hold (besides benchmark.json).
    bundle_files: ClassVar[tuple[str, ...]] = ("cases.csv",)
    submission_formats: ClassVar[tuple[str, ...]] = ("csv",)
    # Top-level keys of a JSON body that is itself a submission (without a "predictions" wrapper).
    json_submission_keys: ClassVar[tuple[str, ...]] = ()
    # The columns of a per-case row that carry only what the participant sent
    # (never truth, never correctness): what a row shows while its case's truth
    # is hidden. Exact names, and name prefixes.
    prediction_columns: ClassVar[tuple[str, ...]] = ("case_id", "split")
    prediction_column_prefixes: ClassVar[tuple[str, ...]] = ("predicted",)
    # Are the cases texts that pass the de-identification pipeline before
    # participants see them (public["text"], original in private)?
    deidentify_text: ClassVar[bool] = False
    # Metrics that count a split's cases (how many were scored, what share of the split was
    # predicted). While a ranked split's truth is hidden they are not shown: uploading a few
    # ranked cases and reading the counts would tell which cases are public and which private.
    split_count_metrics: ClassVar[tuple[str, ...]] = ()
    # Metrics shown with an interval: metric name -> (low bound metric, high bound
    # metric). Pages print "value [low–high]" and drop the bounds' own columns.
    metric_intervals: ClassVar[Mapping[str, tuple[str, str]]] = {}
    # Per-case columns whose values have a natural order (categories): column ->
    # values in that order. Pages sort those columns and list their filter options by it.
    case_column_orders: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    # The per-case boolean column that says a prediction was right ("wrong only" filter), if any.
    case_correct_column: ClassVar[str | None] = None
    # Numeric per-case columns the debug table filters by range.
    case_range_columns: ClassVar[tuple[str, ...]] = ()
    # The words that are this kind's own, which the shared templates, presentation.py and the
    # shared scripts must never name (tests/core/test_presentation.py). None: every metric name and
    # label and every named case column. A kind whose metrics have plain English names
    # ("accuracy", "correct") lists here only the words that really are its own.
    own_words: ClassVar[tuple[str, ...] | None] = None
    # The smallest valid config of this kind (``validate_config`` fills in the rest): where docs
    # and the tests that run every kind of the registry start from.
    minimal_config: ClassVar[Mapping[str, Any]] = {}

    def words(self) -> frozenset[str]:
        """This kind's own words (``own_words``, or by default its metric names and labels and its
        named case columns), which pages shared by every kind must not name."""
        if self.own_words is not None:
            return frozenset(self.own_words)
        named = [*self.case_column_orders, self.case_correct_column]
        return frozenset([*(m.name for m in self.metrics), *(m.label for m in self.metrics), *filter(None, named)])

    def leaderboard_note(self, config: Mapping[str, Any]) -> str:
        """A sentence under the board about who appears and what its numbers mean ("" for none)."""
        return ""

    def case_columns(self, config: Mapping[str, Any]) -> tuple[Column, ...]:
        """The debug table's columns, in order, with their labels and descriptions.

        A round kind's table shows exactly these. A static kind's shows every key of its
        per-case rows; a key named here is headed by its ``label`` (``description`` as its
        tooltip), any other by the key itself.
        """
        return ()

    # -- configuration ------------------------------------------------------
    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Return the config with defaults filled in, or raise ValidationFailed."""
        raise NotImplementedError

    def check_config_for_cases(self, config: Mapping[str, Any], *, cases: CaseSet, truth: Truth) -> None:
        """Raise ValidationFailed when ``config`` cannot score these cases and truth, as ``parse_bundle``
        refuses a bundle that pairs them (a config edited alone is checked against the stored cases)."""

    def public_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The part of the config participants may see (default: all of it)."""
        return dict(config)

    def leaderboard_eligible(self, metrics: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
        """Whether a submission's metrics in one split may appear on the leaderboard."""
        return True

    def leaderboard_ineligible_reason(self, metrics: Mapping[str, Any], config: Mapping[str, Any], *,
                                      detail: bool = True) -> str | None:
        """Why a split's metrics keep a submission off the leaderboard (None when they do not).

        ``detail`` False: a reason that says nothing the split's hidden truth
        decides (no counts of scored cases).
        """
        return None if self.leaderboard_eligible(metrics, config) else "its scores do not qualify for the leaderboard"

    def metric_specs(self, config: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
        """The metrics of a benchmark with this config (some kinds add per-property metrics)."""
        return self.metrics

    def ranking_metric_for(self, config: Mapping[str, Any]) -> str:
        """The metric that ranks this benchmark's boards (some kinds take it from config)."""
        return self.ranking_metric

    def metric(self, name: str) -> MetricSpec:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    def late_submissions(self, config: Mapping[str, Any]) -> bool:
        """Static kinds: whether uploads after ``closes_at`` are still scored (marked late, never ranked)."""
        return not self.is_round_kind and self.validate_config(config).get(LATE_SUBMISSIONS) is True

    # -- uncertainty ----------------------------------------------------------
    def case_contributions(self, rows: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> np.ndarray | None:
        """Each case's share of the ranking metric, from one split's per-case rows (truth
        included): values whose mean over the cases is the metric, which the board's
        bootstrap (``scoring.metrics_uncertainty.contribution_intervals``) resamples.
        None: this kind's metric cannot be split by case (the board shows no interval)."""
        return None

    # -- bundles ------------------------------------------------------------
    def parse_bundle(self, files: Mapping[str, bytes], config: Mapping[str, Any]) -> Bundle:
        """Parse a bundle's data files (name -> bytes). Errors name file, row, column."""
        raise NotImplementedError

    # -- submissions --------------------------------------------------------
    def max_upload_bytes(self, config: Mapping[str, Any]) -> int:
        return int(config.get("max_upload_bytes", 10 * 1024 * 1024))

    def parse_submission(
        self, data: bytes, *, filename: str, cases: CaseSet, config: Mapping[str, Any]
    ) -> Any:
        """Validate an upload; return the parsed submission or raise ValidationFailed."""
        raise NotImplementedError

    def parse_json_predictions(
        self, predictions: Any, *, cases: CaseSet, config: Mapping[str, Any]
    ) -> Any:
        """Validate a JSON body's ``predictions`` list (API clients); same rules as files."""
        raise ValidationFailed([RowError(f"kind {self.name!r} takes file uploads only")])

    def dump_submission(self, parsed: Any) -> dict[str, Any]:
        """A JSON-serialisable form of a parsed submission (stored canonically)."""
        raise NotImplementedError

    def load_submission(self, data: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def canonical_bytes(self, parsed: Any) -> bytes:
        """The canonical payload whose SHA-256 is the audit hash."""
        return json.dumps(self.dump_submission(parsed), sort_keys=True, separators=(",", ":")).encode()

    def example_submission(self, cases: CaseSet, config: Mapping[str, Any]) -> tuple[str, bytes]:
        """A valid example file (filename, bytes) for the benchmark page."""
        raise NotImplementedError

    def format_help(self, config: Mapping[str, Any]) -> str:
        """Markdown describing the submission format for this benchmark."""
        raise NotImplementedError

    # -- what participants may download --------------------------------------
    def prediction_only(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A per-case row cut to the participant's own prediction (see ``prediction_columns``)."""
        return {k: v for k, v in row.items()
                if k in self.prediction_columns or k.startswith(self.prediction_column_prefixes)}

    def training_rows(self, cases: CaseSet, truth: Truth, config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The labelled rows participants may train on: ``cases`` (the caller passes only
        cases whose truth participants may see) with their public attributes and truth."""
        return [{"case_id": c.case_id, **c.public, **truth.values.get(c.case_id, {})} for c in cases.cases]

    # -- dry runs and page summaries -----------------------------------------
    def verify(self, parsed: Any, *, cases: CaseSet, truth: Truth, config: Mapping[str, Any]) -> dict[str, Any]:
        """Score without saving (a participant's dry run); never reveals hidden truth.

        Raises ValidationFailed (403) when the kind or the benchmark's config has no dry run.
        """
        raise ValidationFailed([RowError(f"kind {self.name!r} has no verify endpoint")], status=403)

    def prediction_values(self, parsed: Any, case_ids: Sequence[str]) -> np.ndarray:
        """A static kind's submission as numbers: one row per id of ``case_ids``, one column per
        predicted quantity, NaN where nothing is predicted. The fair-play report correlates these."""
        raise NotImplementedError(f"kind {self.name!r} does not give its predictions as numbers")

    def verify_available(self, config: Mapping[str, Any]) -> bool:
        """Whether this benchmark offers the dry run (``verify``)."""
        return False

    def submission_summary(self, case_rows: list[dict[str, Any]], *, split: str) -> dict[str, Any] | None:
        """Extra views of a submission's per-case rows for its page (e.g. a confusion matrix)."""
        return None

    def summary_views(self, case_rows: Sequence[Mapping[str, Any]], *, split: str) -> dict[str, Any] | None:
        """What the submission page draws beside the metrics, in the pages' terms: any of
        ``confusion_matrix`` ({actual: {predicted: n}}) with ``confusion_order`` and
        ``confusion_labels`` (``title``, ``of``: what the rows and columns are, ``correct``:
        how the diagonal reads, ``columns``: the (actual, predicted) case columns the cells
        filter the debug table by), and ``calibration_bins`` (``low``, ``high``, ``count``,
        ``accuracy``: percent right, ``mean_confidence``) with ``calibration_missing``
        (rows without a confidence) and ``calibration_labels`` (``hit``: what a bin counts
        as right, ``hit_rate``: its share). The shared templates print only these words."""
        return None

    # -- scoring ------------------------------------------------------------
    def score(self, parsed: Any, *, cases: CaseSet, truth: Truth, config: Mapping[str, Any]) -> Result:
        """Score one submission."""
        return self.score_round({"_": parsed}, cases=cases, truth=truth, config=config)["_"]

    def score_round(
        self,
        submissions: Mapping[Any, Any],
        *,
        cases: CaseSet,
        truth: Truth,
        config: Mapping[str, Any],
        extra: Mapping[Any, Mapping[str, Any]] | None = None,
    ) -> dict[Any, Result]:
        """Score all submissions of a round together (key -> parsed).

        ``extra`` carries per-submission facts a round kind needs (stake,
        benchmark-model flag). Kinds that score each file alone loop over
        ``score``; round kinds (meta model, pairwise statistics) override this.
        """
        if type(self).score is Kind.score:
            raise NotImplementedError
        return {k: self.score(p, cases=cases, truth=truth, config=config) for k, p in submissions.items()}


# ---------------------------------------------------------------------------
# Round kinds: rounds with a universe, truth in versions, whole-round scoring
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Universe:
    """A round's ids in their stored order, and numeric columns aligned to them (features, prices)."""

    ids: tuple[str, ...]
    columns: Mapping[str, np.ndarray] = field(default_factory=dict)

    @cached_property
    def index(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class RoundSubmission:
    """A validated round upload: ``values`` (ids x columns, float64) aligned to the universe.

    ``meta`` is small JSON the kind keeps beside the array (confidence, rationale);
    ``repeat`` marks a consistency run that never replaces the counted submission.
    """

    values: np.ndarray
    columns: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    repeat: bool = False


@dataclass
class RoundTruth:
    """One truth version of a round: ``values`` (ids x columns, NaN = no truth for that id)."""

    values: np.ndarray
    columns: tuple[str, ...]
    final: bool = True
    as_of: dt.date | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def column(self, name: str) -> np.ndarray:
        return self.values[:, self.columns.index(name)]


@dataclass
class RoundInputs:
    """Everything whole-round scoring of one truth version needs, as arrays.

    ``values``: (submissions, ids, columns) of the counted submissions, in the
    order of ``keys``; ``stakes``: per submission, None when the organiser loaded
    none; ``benchmark_models``: per submission, whether its entrant is flagged.
    """

    universe: Universe
    keys: list[Any]
    values: np.ndarray
    meta: list[dict[str, Any]]
    stakes: np.ndarray | None
    benchmark_models: np.ndarray
    truth: RoundTruth | None  # None for ``score_truth_free`` (computed when the round closes, before any truth)
    # The kind's ``truth_free_metrics`` per submission (in the order of ``keys``) when known
    # already: the scorer uses them instead of computing them again.
    truth_free: dict[str, np.ndarray] | None = None

    def take_values(self) -> np.ndarray:
        """The values, no longer held here: a scorer that takes them can free them when done
        (the engine keeps no other reference)."""
        values = self.values
        self.values = None  # type: ignore[assignment]  # taken: nothing reads it after the scorer has it
        return values


@dataclass
class RoundOutcome:
    """Per submission (in the order of ``RoundInputs.keys``), its metrics; notes for the round page."""

    metrics: list[dict[str, float | None]]
    notes: list[str] = field(default_factory=list)


@dataclass
class RoundResult:
    """A resolved round's final metrics per entrant, for standings."""

    number: int
    track: str
    metrics: Mapping[Any, Mapping[str, float | None]]  # entrant key -> metrics
    received_at: Mapping[Any, dt.datetime]  # entrant key -> when its counted submission arrived


@dataclass
class Standing:
    entrant: Any
    score: float | None
    metrics: dict[str, float | None]
    rounds: int
    order_at: dt.datetime
    track: str = ""
    interval: tuple[float | None, float | None] = (None, None)  # 95% bootstrap of score over its rounds


@dataclass
class Standings:
    """How rounds add up: rows per (track, entrant), and documents a kind shows beside them."""

    rows: list[Standing]
    documents: dict[tuple[str, str], Any] = field(default_factory=dict)  # (track, name) -> JSON


@dataclass(frozen=True)
class Column:
    """A column of a kind's table (board, debug table): the key, its label and how to format it."""

    key: str
    label: str
    fmt: str = "{:.4f}"
    description: str = ""


class RoundKind(Kind):
    """A kind whose benchmark runs rounds: a universe per round, truth in dated versions,
    every counted submission of a round scored at once per version, standings across rounds.

    The engine (``leaderboard.core.services.round_engine``) knows no kind: it calls these.
    """

    is_round_kind: ClassVar[bool] = True
    scores_whole_round: ClassVar[bool] = True
    splits: ClassVar[tuple[str, ...]] = ("public",)
    bundle_files: ClassVar[tuple[str, ...]] = ()
    case_rows_public: ClassVar[bool] = False
    # Tracks rounds may name (portfolio: weekly, monthly); empty: no tracks.
    tracks: ClassVar[tuple[str, ...]] = ()
    # The round page's kind partial (a template name), if the kind has one.
    round_template: ClassVar[str | None] = None
    # Do provisional (interim) boards rank? False: rank stays withheld (None) until final truth.
    ranks_provisional: ClassVar[bool] = True
    # Does the kind publish comparison sets per track (a standings document "comparison_sets")?
    has_comparison_sets: ClassVar[bool] = False
    # Do the organiser's stakes play a part in scoring (signals: they weigh the meta model)? False:
    # the engine refuses stakes for the kind's rounds rather than store numbers nothing reads.
    uses_stakes: ClassVar[bool] = False
    # Metrics that depend on the round's counted submissions alone, never on its truth (signals:
    # the pairwise MCWNM, APCWNM). The engine computes them once when the round closes
    # (``score_truth_free``) and hands them to every truth version's scorer (``RoundInputs.truth_free``).
    truth_free_metrics: ClassVar[tuple[str, ...]] = ()
    # Ids every round's universe holds beside the rows of its file (portfolio: CASH): the universe
    # download has ``universe_size`` less these rows, and its link says so.
    implicit_universe_ids: ClassVar[tuple[str, ...]] = ()
    # Upload limits: an organiser may change them at any time. Every other key is fixed once any round
    # has truth (the service refuses a change: past boards, standings and records were computed with
    # the old value).
    free_config_keys: ClassVar[frozenset[str]] = frozenset({"max_upload_bytes"})

    # -- bundles: a round benchmark's bundle is benchmark.json alone --------
    def parse_bundle(self, files: Mapping[str, bytes], config: Mapping[str, Any]) -> Bundle:
        extra = sorted(files)
        if extra:
            raise ValidationFailed([RowError(
                f"a {self.name} bundle is benchmark.json alone (rounds open later with round_open); "
                f"remove {', '.join(extra)}", file=extra[0])])
        return Bundle(config=self.validate_config(config), cases=CaseSet([]), truth=Truth({}))

    def parse_submission(self, data: bytes, *, filename: str, cases: CaseSet, config: Mapping[str, Any]) -> Any:
        raise ValidationFailed([RowError("this benchmark runs rounds: upload to its open round; there is no dry run")],
                               status=403)

    def parse_json_predictions(self, predictions: Any, *, cases: CaseSet, config: Mapping[str, Any]) -> Any:
        return self.parse_submission(b"", filename="", cases=cases, config=config)

    # -- rounds -------------------------------------------------------------
    def parse_universe(self, data: bytes, *, filename: str, config: Mapping[str, Any]) -> CaseSet:
        """A round's universe file as cases (split public; ``public`` = the other columns).

        Errors name the file, row and column; raise ValidationFailed.
        """
        raise NotImplementedError

    def universe(self, cases: CaseSet, config: Mapping[str, Any]) -> Universe:
        """The universe from stored cases: ids in order and every numeric public column."""
        ids = tuple(c.case_id for c in cases.cases)
        names: list[str] = []
        for c in cases.cases[:1]:
            names = [k for k, v in c.public.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        columns = {n: np.array([float(c.public.get(n, np.nan)) for c in cases.cases]) for n in names}
        return Universe(ids, columns)

    def parse_round_submission(self, data: bytes, *, filename: str, universe: Universe,
                               config: Mapping[str, Any]) -> RoundSubmission:
        """Validate an upload against the round's universe; raise ValidationFailed naming row and column."""
        raise NotImplementedError

    def parse_round_json(self, predictions: Any, *, universe: Universe, config: Mapping[str, Any]) -> RoundSubmission:
        raise ValidationFailed([RowError(f"kind {self.name!r} takes file uploads only (multipart field 'file')",
                                         column="file")])

    def round_canonical_bytes(self, parsed: RoundSubmission, universe: Universe) -> bytes:
        """What the audit hash covers: a canonical CSV of the values in universe order."""
        # Each value as repr(float): the shortest text that reads back to the same float.
        cells = [map(repr, column) for column in np.asarray(parsed.values, dtype=np.float64).T.tolist()]
        lines = [",".join(["id", *parsed.columns]), *map(",".join, zip(universe.ids, *cells))]
        if parsed.meta:
            lines.append("#" + json.dumps(parsed.meta, sort_keys=True, separators=(",", ":")))
        return ("\n".join(lines) + "\n").encode()

    def truth_columns(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The value columns of a truth file (stored per id in each truth version)."""
        raise NotImplementedError

    def parse_truth(self, data: bytes, *, filename: str, universe: Universe, config: Mapping[str, Any],
                    final: bool, as_of: dt.date | None) -> RoundTruth:
        """A truth file for one round (final or an interim snapshot); errors name file, row, column."""
        raise NotImplementedError

    def score_round_version(self, inputs: RoundInputs, config: Mapping[str, Any]) -> RoundOutcome:
        """Score every counted submission of a round against one truth version, vectorised."""
        raise NotImplementedError

    def round_intervals(self, inputs: RoundInputs, config: Mapping[str, Any], *,
                        seed: int) -> tuple[np.ndarray, np.ndarray] | None:
        """95% bootstrap intervals of the ranking metric of every counted submission (in the order
        of ``keys``), resampling the round's ids with ``seed``: ``(low, high)``. Called before
        ``score_round_version`` (which may take the values). None: no interval for this kind."""
        return None

    def score_truth_free(self, inputs: RoundInputs, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """``truth_free_metrics`` of every counted submission (``inputs.truth`` is None); it may add
        other per-submission columns (names that are not metrics) which every truth version then
        finds in ``inputs.truth_free`` too (signals: MCWNM's nearest partners for its interval)."""
        return {}

    def round_case_rows(self, values: np.ndarray, *, universe: Universe, truth: RoundTruth,
                        config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The per-id debug table of one submission (computed on demand, never stored)."""
        raise NotImplementedError

    def standings(self, results: Sequence[RoundResult], config: Mapping[str, Any]) -> Standings:
        """How resolved rounds add up; ``results`` newest round first."""
        raise NotImplementedError

    # -- presentation ---------------------------------------------------------
    def board_metrics(self, config: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
        """The metrics a round's board and the standings show, the ranking one first."""
        ranking = self.ranking_metric_for(config)
        specs = list(self.metric_specs(config))
        specs.sort(key=lambda m: m.name != ranking)
        return tuple(specs)

    def chart_metrics(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """Metrics the round page charts over the truth versions (provisional series)."""
        return (self.ranking_metric_for(config),)

    def chart_reference(self, config: Mapping[str, Any]) -> tuple[str, str] | None:
        """A round-wide series drawn beside the entrants' lines: (metric name, label), or None."""
        return None

    def withheld_metrics(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        """Metrics an interim truth version does not give (pages say "withheld", not "n/a")."""
        return ()

    def standings_metrics(self, config: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
        """The columns of the standings (default: the round board's)."""
        return self.board_metrics(config)

    def round_public(self, universe: Universe, frozen: Sequence[Mapping[str, Any]],
                     config: Mapping[str, Any]) -> dict[str, Any] | None:
        """What the round page and the round's API answer show beyond the board (JSON-serialisable),
        for the kind's partial. ``frozen``: after close, the counted submissions and consistency runs
        (``entrant``, ``audit_hash``, ``received_at``, ``repeat``, ``values``, ``meta``); empty while open."""
        return None

    def case_table_promise(self, config: Mapping[str, Any]) -> str:
        """What the per-id table will show, said on a counted submission's page before resolution."""
        return "The per-id table is shown once the round is resolved."

    def metric(self, name: str) -> MetricSpec:
        try:
            return super().metric(name)
        except KeyError:
            return MetricSpec(name, name)


# ---------------------------------------------------------------------------
# Helpers the round kinds share: universes of ids, per-id value files, windowed standings
# ---------------------------------------------------------------------------

MAX_ID_CHARS = 100
MAX_LISTED_MISSING = 20
UNIVERSE_ID = IdColumn(max_chars=MAX_ID_CHARS)  # the ``id`` column of round kinds' files
UNIVERSE_MAX_BYTES = 50 * 1024 * 1024


def read_id_universe(data: bytes, *, filename: str, prefixes: Sequence[str] = ()) -> CaseSet:
    """A universe file: ``id`` (each once, printable, no commas) plus optional numeric columns
    starting with one of ``prefixes``; errors name the file, row and column."""
    errs = ErrorList(file=filename or "universe.csv")
    table = csvfile.read_table(data, errs=errs, max_bytes=UNIVERSE_MAX_BYTES, required=("id",),
                               prefixes=tuple(prefixes), what="id", keep_going=True)
    pos = table.position()
    extra = [h for h in table.header if prefixes and h.startswith(tuple(prefixes))]
    seen = UNIVERSE_ID.first_rows()
    cases: list[Case] = []
    for row, rec in table.rows:
        cid = rec[pos["id"]].strip()
        ok = seen.check(cid, row, errs)
        public: dict[str, float] = {}
        for f in extra:
            value, message = csvfile.number(rec[pos[f]])
            if message:
                errs.add(message, row, f)
                ok = False
            elif value is not None:
                public[f] = value
        if ok:
            cases.append(Case(cid, "public", public))
    errs.raise_if_any()
    return CaseSet(cases)


def read_id_values(data: bytes, *, universe: Universe, columns: Sequence[str], max_bytes: int,
                   check: Callable[[float, str], str | None] | None = None,
                   accept: Callable[[np.ndarray], np.ndarray] | None = None, filename: str | None = None,
                   every_id: bool = True,
                   empty_ok: bool = False, what: str = "prediction") -> np.ndarray:
    """A CSV ``id,<columns>`` aligned to the universe: (ids, columns) float64, NaN where empty.

    Every id of the universe at most once (exactly once with ``every_id``); each cell a
    finite number (an empty one allowed with ``empty_ok``), then ``check(value, raw)``
    may return a message refusing it (``accept(values)``, when given, says the same of a
    whole column at once: True where ``check`` would find nothing). Raises ValidationFailed
    naming every problem by row and column (``filename`` names the file too).

    A plain file is read at C speed (``_id_values_fast``); anything it does not vouch for
    goes through the row-by-row reader below, which words every problem.
    """
    if len(data) <= max_bytes:
        fast = _id_values_fast(data, universe=universe, columns=columns, check=check, accept=accept,
                               every_id=every_id, empty_ok=empty_ok)
        if fast is not None:
            return fast
    errs = ErrorList(file=filename)
    table = csvfile.read_table(data, errs=errs, max_bytes=max_bytes, required=("id", *columns), what=what,
                               keep_going=True)
    pos = table.position()
    index = universe.index
    values = np.full((len(universe), len(columns)), np.nan)
    first = np.zeros(len(universe), dtype=np.int64)
    i_id = pos["id"]
    cols = [(j, c, pos[c]) for j, c in enumerate(columns) if c not in table.missing]
    for row, rec in table.rows:
        if len(errs.items) >= errs.cap:
            break
        cid = rec[i_id].strip()
        at = index.get(cid)
        if at is None:
            errs.add(f"unknown id {csvfile.show(cid)}: not in this round's universe" if cid else "empty id",
                     row, "id")
        elif first[at]:
            errs.add(UNIVERSE_ID.duplicate_message(cid, int(first[at])), row, "id")
            at = None
        else:
            first[at] = row
        for j, col, p in cols:
            raw = rec[p]
            if empty_ok and not raw.strip():
                continue
            v: float | None
            try:
                v = float(raw)
            except ValueError:
                v, message = csvfile.number(raw)
            else:
                message = check(v, raw) if check is not None else None
                if message is None and v - v != 0:  # NaN or infinite
                    message = csvfile.number(raw)[1]
            if message:
                errs.add(message, row, col)
            elif at is not None:
                values[at, j] = v
    missing = np.flatnonzero(first == 0)
    if every_id and len(missing) and not errs.dropped:
        for at in missing[:MAX_LISTED_MISSING]:
            errs.add(f"no row for id {universe.ids[at]!r}: every id of the universe needs a {what}", None, "id")
        if len(missing) > MAX_LISTED_MISSING:
            errs.add(f"... and {len(missing) - MAX_LISTED_MISSING} more ids have no row "
                     f"({len(missing)} of {len(universe)} missing)", None, "id")
    errs.raise_if_any()
    return values


def _id_values_fast(data: bytes, *, universe: Universe, columns: Sequence[str],
                    check: Callable[[float, str], str | None] | None,
                    accept: Callable[[np.ndarray], np.ndarray] | None, every_id: bool,
                    empty_ok: bool) -> np.ndarray | None:
    """``read_id_values`` of a file the row-by-row reader would accept, split by str methods
    and read by numpy in C loops; None as soon as anything could be a problem (a quote, a lone carriage
    return, a blank or ragged or overlong row, an unknown or repeated id, a cell that is not a
    finite number or fails ``check``), so that reader words it. Same values, bit for bit: each
    cell goes through ``float`` as there."""
    scratch = ErrorList()
    text = csvfile.decode(data, scratch)
    if text is None or scratch or '"' in text:
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        return None
    names = [h.strip() for h in lines[0].split(",")]
    if sorted(names) != sorted(["id", *columns]) or len(set(names)) != len(names):
        return None
    width = len(names)
    body = lines[1:]
    limit = max(len(lines[0]) + 1, (csvfile.MAX_CELL_CHARS + 3) * width + 64)
    if max(map(len, body)) + 2 > limit:
        return None
    # No quotes: a row's cells are its text split at commas (what csv.reader would give).
    if set(map(str.count, body, itertools.repeat(","))) != {width - 1}:
        return None
    flat = ",".join(body).split(",")
    cells = [flat[j::width] for j in range(width)]
    n = len(body)
    at = list(map(universe.index.get, map(str.strip, cells[names.index("id")])))
    if None in at or len(set(at)) != n or (every_id and n != len(universe)):
        return None
    where = np.fromiter(at, dtype=np.int64, count=n)
    values = np.full((len(universe), len(columns)), np.nan)
    for j, column in enumerate(columns):
        raw = cells[names.index(column)]
        blank = None
        try:
            got = np.fromiter(map(float, raw), dtype=np.float64, count=n)
        except ValueError:
            if not empty_ok:
                return None
            blank = np.fromiter((not r.strip() for r in raw), dtype=bool, count=n)
            try:
                got = np.fromiter((np.nan if b else float(r) for r, b in zip(raw, blank)), dtype=np.float64,
                                  count=n)
            except ValueError:
                return None
        filled = got if blank is None else got[~blank]
        if not np.isfinite(filled).all():
            return None
        if check is not None:
            if accept is not None:
                if not np.asarray(accept(filled), dtype=bool).all():
                    return None
            elif any(check(v, r) is not None for v, r, b in
                     zip(got.tolist(), raw, blank.tolist() if blank is not None else [False] * n) if not b):
                return None
        values[where, j] = got
    return values


STANDINGS_MIN_ROUNDS = "standings_min_rounds"


# Config keys every round kind takes: the resolved rounds an entrant needs before it appears in the
# standings, and how many of its latest rounds a windowed standing averages.
STANDINGS_MIN_ROUNDS_KEY = WholeNumber(STANDINGS_MIN_ROUNDS, 1, 1, 1000,
                                       "must be a whole number of rounds, 1 to 1000; got {value}")
STANDINGS_WINDOW_KEY = WholeNumber("standings_window", 20, 1, 1000,
                                   "must be a whole number of rounds, 1 to 1000; got {value}")


def standings_min_rounds_config(config: Mapping[str, Any]) -> tuple[int, RowError | None]:
    """The config key every round kind takes: ``standings_min_rounds`` (default 1), the resolved
    rounds an entrant needs before it appears in the standings. ``(value, error or None)``."""
    reader = ConfigReader({STANDINGS_MIN_ROUNDS: config[STANDINGS_MIN_ROUNDS]} if STANDINGS_MIN_ROUNDS in config
                          else {}, allowed=(STANDINGS_MIN_ROUNDS,))
    value = reader.take(STANDINGS_MIN_ROUNDS_KEY)
    return value, (reader.errors[0] if reader.errors else None)


def standings_min_rounds_note(min_rounds: int) -> str:
    """What the standings page says about the rule (nothing when every entrant is listed after one round)."""
    if min_rounds <= 1:
        return " Every entrant is listed from its first resolved round (standings_min_rounds 1)."
    return (f" An entrant appears in the standings once it has {min_rounds} resolved rounds "
            f"(standings_min_rounds), so one lucky round never tops entrants with {min_rounds} or more.")


def windowed_mean_standings(results: Sequence[RoundResult], *, window: int, rank_by: str) -> Standings:
    """Per entrant: the mean of each metric over its last ``window`` resolved rounds (``results``
    newest first), n/a values left out of a mean; the row's score is the mean of ``rank_by``."""
    taken: dict[Any, list[RoundResult]] = {}
    for result in results:
        for entrant in result.metrics:
            rounds = taken.setdefault(entrant, [])
            if len(rounds) < window:
                rounds.append(result)
    rows = []
    for entrant, rounds in taken.items():
        sums: dict[str, list[float]] = {}
        for r in rounds:
            for name, value in r.metrics[entrant].items():
                if value is not None and math.isfinite(value):
                    sums.setdefault(name, []).append(value)
                else:
                    sums.setdefault(name, [])
        means = {name: (sum(v) / len(v) if v else None) for name, v in sums.items()}
        first_at = min(r.received_at[entrant] for r in rounds)
        rows.append(Standing(entrant, means.get(rank_by), means, len(rounds), first_at))
    # The interval of each mean, resampling the entrant's rounds (seed: the rounds that count).
    per_round = [[_nan_if_none(r.metrics[s.entrant].get(rank_by)) for r in taken[s.entrant]] for s in rows]
    seed = board_seed("standings", rank_by, window, *sorted(r.number for r in results))
    low, high = ragged_mean_intervals(per_round, seed=seed)
    for s, lo, hi in zip(rows, low, high, strict=True):
        if s.score is not None and np.isfinite(lo) and np.isfinite(hi):
            s.interval = (float(lo), float(hi))
    return Standings(rows)


def _nan_if_none(value: Any) -> float:
    return float("nan") if value is None or not math.isfinite(value) else float(value)
