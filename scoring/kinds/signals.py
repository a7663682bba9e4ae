"""Kind ``signals``: Numerai-Signals-style rounds (spec/signals-definitions.txt).

A round opens with a universe of ids (optionally ``feature_*`` columns, for
FNC). A submission is ``id,prediction``: every universe id once, a finite
prediction in [0, 1]. Truth is ``id,target`` (binned 0, .25, .5, .75, 1), plus
any extra target columns named in config; interim snapshots have the same shape.

Each truth version scores the whole round in one call of
``scoring.rounds.score_signals_round`` (numerai-tools 0.7.2 semantics, each
submission on its own): corr, mmc (against the stake-weighted meta model of the
round's counted submissions), bmc (against the benchmark models' meta model),
fnc (when the universe has features), cwmm, mcwnm, apcwnm. An extra target
adds ``corr_<name>`` (one more call, corr only). Standings: the mean of each
metric over the last ``standings_window`` resolved rounds an entrant took part in.
"""
from __future__ import annotations

import datetime as dt
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from scoring import csvfile
from scoring.errors import RowError, ValidationFailed, json_shown
from scoring.kinds import register
from scoring.kinds.base import (
    STANDINGS_MIN_ROUNDS,
    STANDINGS_MIN_ROUNDS_KEY,
    STANDINGS_WINDOW_KEY,
    UNIVERSE_MAX_BYTES,
    CaseSet,
    Column,
    ConfigReader,
    MetricSpec,
    RoundInputs,
    RoundKind,
    RoundOutcome,
    RoundResult,
    RoundSubmission,
    RoundTruth,
    Standings,
    Universe,
    WholeNumber,
    finite_or_none,
    read_id_universe,
    read_id_values,
    standings_min_rounds_note,
    windowed_mean_standings,
)
from scoring.metrics_uncertainty import BOARD_CONFIDENCE, BOARD_RESAMPLES, contribution_intervals, resample_counts
from scoring.rounds import (
    SIGNALS_METRICS,
    RoundMatrix,
    gaussian_table,
    neutralize_block,
    percentile_ranks,
    power_table,
    rank_codes,
    score_signals_round,
    screened_max_mean,
    signed_power,
    stake_weighted_mean,
)

ID, PREDICTION, TARGET = "id", "prediction", "target"
_INTERVAL_BLOCK = 1000  # submissions bootstrapped together (ids x 1,000 float64 per block)
_INTERVAL_THREADS = 2  # blocks bootstrapped at once
# mcwnm's interval recomputes every pair in every resample (resamples x submissions^2 x ids
# multiplications) while that fits this budget; a larger board resamples each row's maximum over
# its nearest partners only: as many as MCWNM_PARTNER_BUDGET allows (resamples x submissions x
# partners x ids), between 1 and MCWNM_MAX_PARTNERS.
MCWNM_INTERVAL_BUDGET = 2 * 10**10
MCWNM_PARTNER_BUDGET = 10**11
MCWNM_MAX_PARTNERS = 8
# The close stores each submission's nearest partners (found by the same pair screen as MCWNM
# itself) with the truth-free metrics, one column per place, nearest first (a position among the
# counted submissions; -1: none), so the resolve's interval needs no pairs.
MCWNM_PARTNER_PREFIX = "mcwnm_partner_"
_MAX_PAIR_TERMS = 4_000_000  # per-id pair products held at once (32 MB)
FEATURE_PREFIX = "feature_"
DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024


def mcwnm_interval_partners(m: int, ids: int) -> int:
    """How many nearest partners MCWNM's interval resamples each row's maximum over on a board of
    ``m`` submissions and ``ids`` ids: 0 (every pair) within ``MCWNM_INTERVAL_BUDGET``, else as
    many as ``MCWNM_PARTNER_BUDGET`` allows, between 1 and ``MCWNM_MAX_PARTNERS``."""
    if m < 2 or BOARD_RESAMPLES * m * m * ids <= MCWNM_INTERVAL_BUDGET:
        return 0
    return min(m - 1, MCWNM_MAX_PARTNERS, max(1, MCWNM_PARTNER_BUDGET // (BOARD_RESAMPLES * m * ids)))


METRICS = (
    MetricSpec("corr", "CORR", True, "{:.4f}", "numerai corr: Pearson of pow1.5(gaussianized rank) with "
                                               "pow1.5(centred target)"),
    MetricSpec("mmc", "MMC", True, "{:.4f}", "meta model contribution: covariance of the target with the "
                                             "predictions orthogonalized to the stake-weighted meta model"),
    MetricSpec("bmc", "BMC", True, "{:.4f}", "benchmark model contribution: as MMC, against the benchmark "
                                             "models' meta model"),
    MetricSpec("fnc", "FNC", True, "{:.4f}", "feature neutral corr: numerai corr after neutralizing the "
                                             "predictions to the universe's features"),
    MetricSpec("cwmm", "CWMM", False, "{:.4f}", "correlation with the meta model (lower: more original)"),
    MetricSpec("mcwnm", "MCWNM", False, "{:.4f}", "maximum correlation with another submission of the round"),
    MetricSpec("apcwnm", "APCWNM", False, "{:.4f}", "average correlation with the other submissions of the round"),
)


MAX_UPLOAD_KEY = WholeNumber("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES, 1024, 100 * 1024 * 1024,
                             "must be an integer from 1024 to 104857600; got {value}")


@register
class SignalsKind(RoundKind):
    name = "signals"
    label = "Signals rounds (numerai corr, MMC)"
    metrics = METRICS
    ranking_metric = "corr"
    submission_formats = ("csv",)
    round_template = "core/kinds/signals_round.html"
    uses_stakes = True  # the meta model (MMC, CWMM) and the benchmark meta model (BMC) are stake-weighted

    # -- configuration ------------------------------------------------------
    def validate_config(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        cfg = ConfigReader(dict(config or {}), allowed={"rank_by", "standings_window", "extra_targets",
                                                        "max_upload_bytes", STANDINGS_MIN_ROUNDS})
        extra = cfg.get("extra_targets", [])
        if not isinstance(extra, list) or not all(isinstance(t, str) and t.strip() == t and t for t in extra):
            cfg.error("extra_targets", 'must be a list of column names, e.g. ["target_60"]')
            extra = []
        for t in extra:
            if t in (ID, TARGET) or not t.replace("_", "").isalnum() or len(t) > 60:
                cfg.error("extra_targets", f"{json_shown(t)} is not a usable column name")
        if len(set(extra)) != len(extra):
            cfg.error("extra_targets", "names a column twice")
        names = [m.name for m in METRICS] + [f"corr_{t}" for t in extra]
        rank_by = cfg.get("rank_by", "corr")
        if rank_by not in names:
            cfg.error("rank_by", f"must be one of {', '.join(names)}; got {json_shown(rank_by)}")
        window = cfg.take(STANDINGS_WINDOW_KEY)
        cap = cfg.take(MAX_UPLOAD_KEY)
        min_rounds = cfg.take(STANDINGS_MIN_ROUNDS_KEY)
        cfg.done()
        return {"rank_by": rank_by, "standings_window": window, "extra_targets": list(extra),
                "max_upload_bytes": cap, STANDINGS_MIN_ROUNDS: min_rounds}

    def ranking_metric_for(self, config: Mapping[str, Any]) -> str:
        return self.validate_config(config)["rank_by"]

    def metric_specs(self, config: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
        extra = self.validate_config(config)["extra_targets"]
        return METRICS + tuple(MetricSpec(f"corr_{t}", f"CORR {t}", True, "{:.4f}",
                                          f"numerai corr against {t}") for t in extra)

    def metric(self, name: str) -> MetricSpec:
        for m in METRICS:
            if m.name == name:
                return m
        if name.startswith("corr_"):
            return MetricSpec(name, f"CORR {name[5:]}", True, "{:.4f}")
        raise KeyError(name)

    def chart_metrics(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return ("corr", "mmc")

    def leaderboard_note(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        return (f"Standings: the mean of each metric over the last {cfg['standings_window']} resolved rounds "
                f"an entrant took part in, ranked by {self.metric(cfg['rank_by']).label}."
                + standings_min_rounds_note(cfg[STANDINGS_MIN_ROUNDS]))

    # -- universe -------------------------------------------------------------
    def parse_universe(self, data: bytes, *, filename: str, config: Mapping[str, Any]) -> CaseSet:
        """``id`` plus optional ``feature_*`` columns (finite numbers): each id once."""
        return read_id_universe(data, filename=filename, prefixes=(FEATURE_PREFIX,))

    # -- submissions ----------------------------------------------------------
    def parse_round_submission(self, data: bytes, *, filename: str, universe: Universe,
                               config: Mapping[str, Any]) -> RoundSubmission:
        """``id,prediction``: every universe id exactly once, predictions finite in [0, 1]."""
        cfg = self.validate_config(config)

        def in_unit_interval(v: float, raw: str) -> str | None:
            if 0.0 <= v <= 1.0:
                return None
            return ("NaN is not allowed; expected a number in [0, 1]" if v != v
                    else f"{csvfile.show(raw.strip())} is outside [0, 1]")

        values = read_id_values(data, universe=universe, columns=(PREDICTION,), max_bytes=cfg["max_upload_bytes"],
                                check=in_unit_interval, accept=lambda v: (v >= 0.0) & (v <= 1.0))
        return RoundSubmission(values, (PREDICTION,))

    def format_help(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        mb = cfg["max_upload_bytes"] / 1048576
        extra = "".join(f", `corr_{t}` (against `{t}`)" for t in cfg["extra_targets"])
        return "\n".join([
            "### Submission format",
            "",
            "Each round has its own universe of ids (download it from the round's page or "
            "`GET /api/benchmarks/{slug}/rounds/{n}/universe/`). Upload a CSV (UTF-8) with exactly two columns:",
            "",
            "```",
            "id,prediction",
            "```",
            "",
            "- every id of the open round's universe exactly once, no other id;",
            "- `prediction`: a finite number in [0, 1] (only the order matters: predictions are ranked);",
            f"- at most {mb:g} MB. A rejected file lists every problem with its row (the header is row 1) "
            "and column, and does not count against the daily limit.",
            "",
            "Your latest accepted upload before the round closes is the one that counts; earlier ones stay in "
            "your history, marked replaced.",
            "",
            "### Scoring",
            "",
            "When the organiser loads the round's targets (dated interim snapshots, then the final one), every "
            "counted submission of the round is scored at once, as numerai-tools 0.7.2 scores it: `corr` "
            "(numerai corr), `mmc` (contribution to the stake-weighted meta model), `bmc` (to the benchmark "
            "models' meta model), `fnc` (feature neutral corr, when the universe has features), `cwmm`, "
            f"`mcwnm`, `apcwnm`{extra}. Interim scores are provisional and dated. The round ranks by "
            f"`{cfg['rank_by']}`; the standings average each metric over your last "
            f"{cfg['standings_window']} resolved rounds.",
        ]) + "\n"

    def example_submission(self, cases: CaseSet, config: Mapping[str, Any]) -> tuple[str, bytes]:
        lines = ["id,prediction"]
        for c in cases.cases:
            lines.append(f"{c.case_id},{zlib.crc32(c.case_id.encode()) / 2**32:.6f}")
        return "example_submission.csv", ("\n".join(lines) + "\n").encode()

    # -- truth ------------------------------------------------------------------
    def truth_columns(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return (TARGET, *self.validate_config(config)["extra_targets"])

    def parse_truth(self, data: bytes, *, filename: str, universe: Universe, config: Mapping[str, Any],
                    final: bool, as_of: dt.date | None = None) -> RoundTruth:
        """``id,target`` (+ the extra target columns): ids of the universe at most once; an empty
        cell means no target for that id (it is not scored)."""
        columns = self.truth_columns(config)
        file = filename or "truth.csv"
        values = read_id_values(data, universe=universe, columns=columns, max_bytes=UNIVERSE_MAX_BYTES,
                                filename=file, every_id=False, empty_ok=True, what="id")
        if np.isnan(values[:, 0]).all():
            raise ValidationFailed([RowError(f"no id has a {TARGET}: nothing could be scored", file=file)])
        return RoundTruth(values, columns, final=final, as_of=as_of)

    # -- scoring ------------------------------------------------------------------
    def round_intervals(self, inputs: RoundInputs, config: Mapping[str, Any], *,
                        seed: int) -> tuple[np.ndarray, np.ndarray] | None:
        """95% intervals of the ranking metric, bootstrapped over the round's ids (one draw for
        every submission), a block of submissions at a time.

        Every metric but ``mcwnm`` is a mean of per-id terms, which are resampled
        (``contribution_intervals``): ``corr``/``corr_<t>``/``fnc``/``cwmm``: the product of the
        two standardised sides of the Pearson correlation (for ``fnc``, the predictions' ranks
        neutralized to the features and ranked again; for ``cwmm``, the meta model as the other
        side); ``mmc``/``bmc``: the centred target times the predictions' gaussianized ranks
        orthogonalized to the meta model's; ``apcwnm``: the standardised ranks times the mean of
        the other submissions' (a mean of correlations is the mean of those products).
        ``mcwnm``, a maximum, is recomputed in each resample: every pair's correlation as the
        resampled mean of its per-id products, then each row's largest (``max_pair_intervals``; up
        to ``MCWNM_INTERVAL_BUDGET`` multiplications); on a larger board, each row's largest over
        the partners it correlates with most on the observed ids (``nearest_pair_intervals``):
        those the close stored with the truth-free metrics (``score_truth_free``), or, when
        ``inputs.truth_free`` has none, found here by the same screen."""
        cfg = self.validate_config(config)
        rank_by = cfg["rank_by"]
        if inputs.values is None or not len(inputs.keys):
            return None
        values = inputs.values[:, :, 0]
        if rank_by == "mcwnm":
            m, ids = values.shape
            z = np.empty((ids, m))

            def rank_block(start: int) -> None:  # block by block: no whole-board temporaries
                z[:, start:start + _INTERVAL_BLOCK] = _standard_ranks(values, start, min(m, start + _INTERVAL_BLOCK))

            with ThreadPoolExecutor(max_workers=_INTERVAL_THREADS) as pool:  # numpy's sorts release the GIL
                list(pool.map(rank_block, range(0, m, _INTERVAL_BLOCK)))
            partners = mcwnm_interval_partners(m, ids)
            if not partners:
                return max_pair_intervals(z, seed=seed)
            return nearest_pair_intervals(z, seed=seed, partners=partners,
                                          near=_stored_partners(inputs.truth_free, m, partners))
        if rank_by == "apcwnm":
            return _block_intervals(len(inputs.keys), values.shape[1], seed, _apcwnm_shares(values))
        shares = self._interval_shares(rank_by, inputs, values)
        if shares is None:
            return None
        count, block_shares = shares
        return _block_intervals(len(inputs.keys), count, seed, block_shares)

    def _interval_shares(self, rank_by: str, inputs: RoundInputs,
                         values: np.ndarray) -> tuple[int, Callable[[int, int], np.ndarray]] | None:
        """The ids resampled and, for submissions [start, stop), their per-id terms (ids x block)."""
        truth = inputs.truth
        if rank_by in ("mmc", "bmc", "cwmm"):
            mm = self._meta_model(inputs, values, benchmark=rank_by == "bmc")
            if mm is None:
                return None
            if rank_by == "cwmm":
                return _pearson_shares(values, np.isfinite(mm), mm - np.nanmean(mm))
            if truth is None:
                return None
            return _contribution_shares(values, mm, truth.column(TARGET))
        if truth is None:
            return None
        column = TARGET if rank_by in ("corr", "fnc") else rank_by[len("corr_"):]
        if column not in truth.columns:
            return None
        target = truth.column(column)
        if rank_by == "fnc":
            features = [v for k, v in inputs.universe.columns.items() if k.startswith(FEATURE_PREFIX)]
            if not features:
                return None
            return _feature_neutral_shares(values, np.column_stack(features), target)
        known = np.isfinite(target)
        return _pearson_shares(values, known, signed_power(target - target[known].mean(), 1.5))

    @staticmethod
    def _meta_weights(inputs: RoundInputs) -> tuple[np.ndarray, str | None]:
        """The stake of each submission in the meta model (equal stakes when none are usable)."""
        stakes, n = inputs.stakes, len(inputs.keys)
        if stakes is None or not np.isfinite(stakes).all() or stakes.sum() <= 0:
            return np.ones(n), ("No stakes were loaded for this round: the meta model weighs every counted "
                                "submission equally." if stakes is None else
                                "The stakes of this round's submissions sum to zero: the meta model weighs every "
                                "counted submission equally.")
        return np.asarray(stakes, dtype=np.float64), None

    def _meta_model(self, inputs: RoundInputs, values: np.ndarray, *, benchmark: bool) -> np.ndarray | None:
        weights, _note = self._meta_weights(inputs)
        names = pd.Index([str(k) for k in inputs.keys])
        if benchmark:
            bm = np.asarray(inputs.benchmark_models, dtype=bool)
            if not bm.any():
                return None
            weights, names = (weights[bm] if weights[bm].sum() > 0 else np.ones(int(bm.sum()))), names[bm]
        matrix = RoundMatrix(values, pd.Index(inputs.universe.ids), pd.Index([str(k) for k in inputs.keys]))
        return stake_weighted_mean(matrix, pd.Series(weights, index=names)).to_numpy()

    def score_round_version(self, inputs: RoundInputs, config: Mapping[str, Any]) -> RoundOutcome:
        notes: list[str] = []
        ids = pd.Index(inputs.universe.ids)
        names = pd.Index([str(k) for k in inputs.keys])
        n = len(names)
        if n == 0:
            return RoundOutcome([], ["no counted submissions"])
        # The (submissions, ids) block as it is, taken from the inputs: the matrix owns it and drops
        # it once ranked (at 20,000 submissions x 5,000 ids, 800 MB nothing reads after ranking).
        matrix = RoundMatrix(inputs.take_values()[:, :, 0], ids, names, owned=True)
        truth = inputs.truth
        assert truth is not None, "a truth version is scored with its truth"
        target = pd.Series(truth.column(TARGET), index=ids).dropna()

        weights, note = self._meta_weights(inputs)
        if note:
            notes.append(note)
        stake_series = pd.Series(weights, index=names)

        wanted = ["corr", "mmc", "cwmm", "mcwnm", "apcwnm"]
        kwargs: dict[str, Any] = {"stakes": stake_series}
        bm = np.asarray(inputs.benchmark_models, dtype=bool)
        if bm.any():
            bm_weights = weights[bm] if weights[bm].sum() > 0 else np.ones(int(bm.sum()))
            kwargs["benchmark_stakes"] = pd.Series(bm_weights, index=names[bm])
            wanted.insert(2, "bmc")
        else:
            notes.append("No benchmark models took part in this round: BMC is not available.")
        features = {k: v for k, v in inputs.universe.columns.items() if k.startswith(FEATURE_PREFIX)}
        if features:
            kwargs["features"] = pd.DataFrame(features, index=ids)
            wanted.insert(3, "fnc")
        else:
            notes.append("The universe has no feature columns: FNC is not available.")
        extra_scores = {}  # before the main call, which lets the matrix drop its values
        # Each extra column ranks over its own ids, which may not be the main target's: the values
        # must outlive these calls (an owned matrix drops them after each), so only the main call may.
        matrix.owned = False
        for j, col in enumerate(truth.columns[1:], start=1):
            extra_target = pd.Series(truth.values[:, j], index=ids).dropna()
            if len(extra_target):
                extra_scores[f"corr_{col}"] = score_signals_round(matrix, extra_target, metrics=("corr",)).scores["corr"]
            else:  # null in every row (below); docs/organisers.md promises the notes say why
                notes.append(f"The truth has no {col} value for any id: corr_{col} is not available.")
        matrix.owned = True
        known = inputs.truth_free or {}
        given = {name: np.asarray(known[name], dtype=np.float64) for name in self.truth_free_metrics
                 if name in known and len(known[name]) == n}
        result = score_signals_round(matrix, target, **kwargs,
                                     metrics=tuple(m for m in SIGNALS_METRICS if m in wanted and m not in given))
        scores = result.scores
        if result.problems:
            notes.append(f"{len(result.problems)} score(s) were not computed (too little overlap with the target "
                         "or meta model); they show as n/a.")
        out: list[dict[str, float | None]] = []
        # Every metric the benchmark has (docs/organisers.md), in every row: one this round cannot give
        # (bmc without benchmark models, fnc without features, an extra target without a value) is None.
        columns: dict[str, np.ndarray | None] = {
            name: ((given[name] if name in given else scores[name].to_numpy()) if name in wanted else None)
            for name in SIGNALS_METRICS}
        columns.update({f"corr_{t}": None for t in truth.columns[1:]})
        columns.update({name: s.to_numpy() for name, s in extra_scores.items()})
        for i in range(n):
            out.append({name: None if values is None else finite_or_none(values[i])
                        for name, values in columns.items()})
        return RoundOutcome(out, notes)

    truth_free_metrics = ("mcwnm", "apcwnm")

    def score_truth_free(self, inputs: RoundInputs, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """MCWNM and APCWNM: every pair of counted submissions, whatever the truth (the round's
        quadratic part, done once when it closes rather than for each truth version); with them,
        on a board too large for the exact interval, each submission's most correlated others
        (``mcwnm_partner_1``, ...: as many as ``mcwnm_interval_partners``; positions among the
        counted submissions, -1 for none), which MCWNM's interval reads."""
        n = len(inputs.keys)
        if n == 0:
            return {}
        matrix = RoundMatrix(inputs.take_values()[:, :, 0], pd.Index(inputs.universe.ids),
                             pd.Index([str(k) for k in inputs.keys]), owned=True)
        result = score_signals_round(matrix, metrics=self.truth_free_metrics,
                                     partners=mcwnm_interval_partners(n, len(inputs.universe.ids)))
        out = {name: result.scores[name].to_numpy() for name in self.truth_free_metrics}
        if result.partners is not None:  # what MCWNM's interval resamples over, found by the same screen
            out.update({f"{MCWNM_PARTNER_PREFIX}{j + 1}": result.partners[:, j].astype(np.float64)
                        for j in range(result.partners.shape[1])})
        return out

    # -- the per-id debug table -------------------------------------------------
    def case_columns(self, config: Mapping[str, Any]) -> tuple[Column, ...]:
        return (
            Column("id", "id", "{}"),
            Column("prediction", "prediction", "{:.6f}", "your value"),
            Column("gaussianized_rank", "gaussianized rank", "{:.4f}",
                   "inverse normal CDF of (tie-kept rank - 0.5) / n, over the ids with a target"),
            Column("target", "target", "{:.4g}"),
            Column("contribution", "contribution to corr", "{:+.6f}",
                   "this id's term of the Pearson correlation behind corr; the column sums to corr"),
        )

    def case_table_promise(self, config: Mapping[str, Any]) -> str:
        return ("The per-id table (your prediction, its gaussianized rank, the target and each id's contribution) "
                "is shown once the round is resolved.")

    def round_case_rows(self, values: np.ndarray, *, universe: Universe, truth: RoundTruth,
                        config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """id, prediction, gaussianized rank, target and contribution to corr, per universe id.

        Ranks are taken over the ids that have a target (those corr is computed on);
        ``contribution`` is each id's term of the Pearson correlation of
        pow1.5(gaussianized rank) with pow1.5(target centred over all its ids), so
        the column sums to the submission's corr.
        """
        prediction = np.asarray(values, dtype=np.float64).reshape(-1)
        target = truth.column(TARGET)
        scored = ~np.isnan(target) & ~np.isnan(prediction)
        gauss = np.full(len(prediction), np.nan)
        contribution = np.full(len(prediction), np.nan)
        if scored.sum() >= 2:
            codes, counts, constant = rank_codes(prediction[scored][None, :])
            g = ndtri(percentile_ranks(codes, counts)[0])
            gauss[scored] = g
            if not constant[0]:
                t = target[~np.isnan(target)]
                tt = signed_power(target[scored] - t.mean())
                s = signed_power(g)
                sc, tc = s - s.mean(), tt - tt.mean()
                denom = math.sqrt(float(sc @ sc) * float(tc @ tc))
                if denom > 0:
                    contribution[scored] = sc * tc / denom
        return [
            {"id": cid, "prediction": finite_or_none(prediction[i]), "gaussianized_rank": finite_or_none(gauss[i]),
             "target": finite_or_none(target[i]), "contribution": finite_or_none(contribution[i])}
            for i, cid in enumerate(universe.ids)
        ]

    # -- standings ------------------------------------------------------------------
    def standings(self, results: Sequence[RoundResult], config: Mapping[str, Any]) -> Standings:
        """Per entrant: the mean of each metric over its last ``standings_window`` resolved rounds
        (newest first in ``results``), n/a values left out of a mean; ranked by ``rank_by``."""
        cfg = self.validate_config(config)
        return windowed_mean_standings(results, window=cfg["standings_window"], rank_by=cfg["rank_by"])



# -- the per-id terms the intervals resample -------------------------------------------------
def _standard(block: np.ndarray) -> np.ndarray:
    """Each column centred and divided by its (population) standard deviation; NaN where constant."""
    sd = block.std(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sd > 0, (block - block.mean(axis=0)) / np.where(sd > 0, sd, 1.0), np.nan)


def _block_intervals(m: int, count: int, seed: int,
                     block_shares: Callable[[int, int], np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """``contribution_intervals`` of every submission, ``_INTERVAL_BLOCK`` at a time with one draw
    over ``count`` ids; a submission with an undefined term (NaN) gets no interval."""
    if count < 2:
        return None
    counts = resample_counts(count, seed=seed)  # one draw for every block: the same ids for all
    low, high = np.full(m, np.nan), np.full(m, np.nan)

    def one_block(start: int) -> None:
        stop = min(m, start + _INTERVAL_BLOCK)
        shares = block_shares(start, stop)
        undefined = ~np.isfinite(shares).all(axis=0)
        lo, hi = contribution_intervals(np.where(undefined, 0.0, shares), counts=counts)
        lo[undefined], hi[undefined] = np.nan, np.nan
        low[start:stop], high[start:stop] = lo, hi

    # Two blocks at a time: ranking (numpy's sorts) runs on one core, and releases the GIL, while the
    # other block's product runs. Each block writes only its own rows: the result is the same.
    with ThreadPoolExecutor(max_workers=_INTERVAL_THREADS) as pool:
        list(pool.map(one_block, range(0, m, _INTERVAL_BLOCK)))
    return low, high


def _pearson_shares(values: np.ndarray, rows: np.ndarray,
                    other: np.ndarray) -> tuple[int, Callable[[int, int], np.ndarray]] | None:
    """Per-id terms of the Pearson correlation of pow1.5(gaussianized ranks over ``rows``) with
    ``other`` (over the same rows): the product of the two standardised sides."""
    count = int(rows.sum())
    if count < 2:
        return None
    zt = _standard(other[rows][:, None])[:, 0]
    if not np.isfinite(zt).all():
        return None  # a constant target has no correlation

    def shares(start: int, stop: int) -> np.ndarray:
        p = power_table(count)[rank_codes(values[start:stop][:, rows])[0]].T
        return _standard(p) * zt[:, None]
    return count, shares


def _contribution_shares(values: np.ndarray, meta_model: np.ndarray,
                         target: np.ndarray) -> tuple[int, Callable[[int, int], np.ndarray]] | None:
    """Per-id terms of MMC/BMC (numerai-tools correlation_contribution): the centred target (x4 when
    it lies in [0, 1]) times the gaussianized ranks orthogonalized to the meta model's."""
    rows = np.isfinite(meta_model) & np.isfinite(target)
    count = int(rows.sum())
    if count < 2:
        return None
    m = gaussian_table(count)[rank_codes(meta_model[rows][None, :])[0][0]]
    t = target[rows]
    if (t >= 0).all() and (t <= 1).all():
        t = t * 4
    tc = t - t.mean()
    mm = float(m @ m)
    if mm == 0:
        return None

    def shares(start: int, stop: int) -> np.ndarray:
        g = gaussian_table(count)[rank_codes(values[start:stop][:, rows])[0]].T
        return tc[:, None] * (g - m[:, None] * ((m @ g) / mm))
    return count, shares


def _feature_neutral_shares(values: np.ndarray, features: np.ndarray,
                            target: np.ndarray) -> tuple[int, Callable[[int, int], np.ndarray]] | None:
    """Per-id terms of FNC: the gaussianized ranks over the ids with every feature, neutralized to the
    features, ranked again over those with a target, then numerai corr's standardised products."""
    with_features = np.isfinite(features).all(axis=1)
    n_features = int(with_features.sum())
    scored = np.isfinite(target[with_features])
    count = int(scored.sum())
    if count < 2:
        return None
    t = signed_power(target[with_features][scored] - target[np.isfinite(target)].mean(), 1.5)
    zt = _standard(t[:, None])[:, 0]
    if not np.isfinite(zt).all():
        return None

    def shares(start: int, stop: int) -> np.ndarray:
        g = gaussian_table(n_features)[rank_codes(values[start:stop][:, with_features])[0]].T
        residual = neutralize_block(g, features[with_features])[scored]
        out = np.full(residual.shape, np.nan)
        ok = np.isfinite(residual).all(axis=0)
        if ok.any():
            p = power_table(count)[rank_codes(residual[:, ok].T)[0]].T
            out[:, ok] = _standard(p) * zt[:, None]
        return out
    return count, shares


def _standard_ranks(values: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The standardised gaussianized ranks of submissions [start, stop) (ids x block; NaN: constant)."""
    return _standard(gaussian_table(values.shape[1])[rank_codes(values[start:stop])[0]].T)


def _apcwnm_shares(values: np.ndarray) -> Callable[[int, int], np.ndarray]:
    """Per-id terms of APCWNM from the standardised gaussianized ranks ``z`` of the submissions:
    each pair's correlation is the mean of ``z_i * z_j``, so the mean over the other (non-constant)
    submissions j is the mean of ``z_i * (sum of z_j) / (their number)``. The sum is taken block by
    block first, so no more than a block of ``z`` is held at once."""
    m, ids = values.shape
    total, live = np.zeros(ids), 0
    for start in range(0, m, _INTERVAL_BLOCK):
        z = _standard_ranks(values, start, min(m, start + _INTERVAL_BLOCK))
        ok = np.isfinite(z).all(axis=0)
        total += z[:, ok].sum(axis=1)
        live += int(ok.sum())
    others = live - 1

    def shares(start: int, stop: int) -> np.ndarray:
        zb = _standard_ranks(values, start, stop)
        with np.errstate(invalid="ignore", divide="ignore"):
            return zb * (total[:, None] - zb) / (others if others > 0 else np.nan)
    return shares


def max_pair_intervals(z: np.ndarray, *, seed: int, n: int = BOARD_RESAMPLES,
                       confidence: float = BOARD_CONFIDENCE,
                       budget: int = MCWNM_INTERVAL_BUDGET) -> tuple[np.ndarray, np.ndarray] | None:
    """MCWNM's interval: in each resample of the ids, every pair's correlation is the resampled mean
    of its per-id products ``z_i * z_j`` (``z``: ids x submissions, standardised; NaN columns are
    constant submissions, which correlate with nothing) and a row's value is its largest, with the
    same draws for every pair. None above ``budget`` multiplications or with fewer than two rows."""
    ids, m = z.shape
    live = np.isfinite(z).all(axis=0)
    if ids < 2 or live.sum() < 2 or n * m * m * ids > budget:
        return None
    zl = np.where(live, z, 0.0)
    counts = resample_counts(ids, n, seed)
    stats = np.empty((n, m))
    rows = max(1, _MAX_PAIR_TERMS // (ids * m))
    for start in range(0, m, rows):  # a block of rows: every pair's per-id products, resampled in one product
        stop = min(m, start + rows)
        pairs = (zl[:, start:stop, None] * zl[:, None, :]).reshape(ids, -1)
        corr = (counts @ pairs).reshape(n, stop - start, m) / ids
        corr[:, :, ~live] = -np.inf
        corr[:, np.arange(stop - start), np.arange(start, stop)] = -np.inf  # not with itself
        stats[:, start:stop] = corr.max(axis=2)
    stats[:, ~live] = np.nan
    alpha = (1 - confidence) / 2
    low, high = np.full(m, np.nan), np.full(m, np.nan)
    if live.any():
        low[live], high[live] = np.quantile(stats[:, live], [alpha, 1 - alpha], axis=0)
    return low, high


def nearest_partners(z: np.ndarray, partners: int) -> np.ndarray:
    """For each submission (a column of ``z``, ids x submissions, standardised; NaN: constant), the
    ``partners`` others it correlates with most on the observed ids, most first (submissions x
    partners; -1 where there are fewer live others): the pair screen the close runs for MCWNM
    (``screened_max_mean``), on these columns as unit rows."""
    ids, m = z.shape
    live = np.isfinite(z).all(axis=0)

    def unit_rows(cols: np.ndarray) -> np.ndarray:
        rows = z[:, cols].T
        return rows / np.sqrt(np.einsum("ij,ij->i", rows, rows))[:, None]

    near = screened_max_mean(unit_rows, m, ids, live, partners=partners, chunk_size=_INTERVAL_BLOCK,
                             workers=_INTERVAL_THREADS).partners
    assert near is not None
    return near


def _stored_partners(truth_free: Mapping[str, np.ndarray] | None, m: int, partners: int) -> np.ndarray | None:
    """The ``partners`` nearest partners of each submission stored at the close, or None when
    fewer were stored (or none, or for another set of submissions)."""
    names = [f"{MCWNM_PARTNER_PREFIX}{j + 1}" for j in range(partners)]
    if not truth_free or any(name not in truth_free or len(truth_free[name]) != m for name in names):
        return None
    near = np.column_stack([np.asarray(truth_free[name], dtype=np.float64) for name in names])
    if not np.isfinite(near).all() or (near < -1).any() or (near >= m).any():
        return None
    return near.astype(np.int64)


def nearest_pair_intervals(z: np.ndarray, *, seed: int, partners: int, n: int = BOARD_RESAMPLES,
                           confidence: float = BOARD_CONFIDENCE,
                           near: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """MCWNM's interval on a board too large for every pair in every resample: in each resample, a
    row's value is its largest correlation with its ``partners`` nearest others (``nearest_partners``,
    on the observed ids), with the same draws for every row. With every other submission as a
    partner this is ``max_pair_intervals``; with fewer, a resample where a farther submission
    overtakes them all is missed, so the interval can lie a little low. ``near``: the partners
    when already known (the close stores them), else found here."""
    ids, m = z.shape
    live = np.isfinite(z).all(axis=0)
    if ids < 2 or live.sum() < 2:
        return None
    zl = z if live.all() else np.where(live, z, 0.0)
    if near is None:
        near = nearest_partners(z, partners)
    counts = resample_counts(ids, n, seed)
    stats = np.full((n, m), np.nan)
    rows = max(1, _MAX_PAIR_TERMS // (ids * partners))
    for start in range(0, m, rows):
        stop = min(m, start + rows)
        block = near[start:stop]
        pairs = zl[:, start:stop, None] * zl[:, np.maximum(block, 0)]  # ids x rows x partners
        corr = (counts @ pairs.reshape(ids, -1)).reshape(n, stop - start, partners) / ids
        corr[:, block < 0] = -np.inf
        stats[:, start:stop] = corr.max(axis=2)
    stats[:, ~live] = np.nan
    alpha = (1 - confidence) / 2
    low, high = np.full(m, np.nan), np.full(m, np.nan)
    low[live], high[live] = np.quantile(stats[:, live], [alpha, 1 - alpha], axis=0)
    return low, high
