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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from scoring import csvfile
from scoring.errors import RowError, ValidationFailed
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
from scoring.metrics_uncertainty import contribution_intervals, resample_counts
from scoring.rounds import (
    SIGNALS_METRICS,
    RoundMatrix,
    percentile_ranks,
    power_table,
    rank_codes,
    score_signals_round,
    signed_power,
)

ID, PREDICTION, TARGET = "id", "prediction", "target"
_INTERVAL_BLOCK = 1000  # submissions bootstrapped together (ids x 1,000 float64 per block)
FEATURE_PREFIX = "feature_"
DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024

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
                             "must be an integer from 1024 to 104857600; got {value!r}")


@register
class SignalsKind(RoundKind):
    name = "signals"
    label = "Signals rounds (numerai corr, MMC)"
    metrics = METRICS
    ranking_metric = "corr"
    submission_formats = ("csv",)
    round_template = "core/kinds/signals_round.html"

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
                cfg.error("extra_targets", f"{t!r} is not a usable column name")
        if len(set(extra)) != len(extra):
            cfg.error("extra_targets", "names a column twice")
        names = [m.name for m in METRICS] + [f"corr_{t}" for t in extra]
        rank_by = cfg.get("rank_by", "corr")
        if rank_by not in names:
            cfg.error("rank_by", f"must be one of {', '.join(names)}; got {rank_by!r}")
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
        """Ranked by ``corr``: each id's share of the Pearson correlation of pow1.5(gaussianized
        average ranks) with pow1.5(centred target), i.e. the product of the two standardised
        sides, bootstrapped over the ids with a known target, a block of submissions at a time."""
        if self.validate_config(config)["rank_by"] != "corr" or inputs.truth is None or not len(inputs.keys):
            return None
        target = inputs.truth.column(TARGET)
        known = np.isfinite(target)
        if known.sum() < 2:
            return None
        t = signed_power(target[known] - target[known].mean(), 1.5)
        if t.std() == 0:
            return None
        zt = (t - t.mean()) / t.std()
        m, count = len(inputs.keys), int(known.sum())
        counts = resample_counts(count, seed=seed)  # one draw for every block: the same cases for all
        low, high = np.full(m, np.nan), np.full(m, np.nan)
        for start in range(0, m, _INTERVAL_BLOCK):
            stop = min(m, start + _INTERVAL_BLOCK)
            codes, _counts, _constant = rank_codes(inputs.values[start:stop, :, 0][:, known])
            p = power_table(count)[codes].T  # ids x submissions: pow1.5 of the gaussianized average ranks
            sd = p.std(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                zp = np.where(sd > 0, (p - p.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
            lo, hi = contribution_intervals(zp * zt[:, None], counts=counts)
            lo[sd == 0], hi[sd == 0] = np.nan, np.nan  # a constant submission has no correlation
            low[start:stop], high[start:stop] = lo, hi
        return low, high

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

        stakes = inputs.stakes
        if stakes is None or not np.isfinite(stakes).all() or stakes.sum() <= 0:
            notes.append("No stakes were loaded for this round: the meta model weighs every counted "
                         "submission equally." if stakes is None else
                         "The stakes of this round's submissions sum to zero: the meta model weighs every "
                         "counted submission equally.")
            weights = np.ones(n)
        else:
            weights = np.asarray(stakes, dtype=np.float64)
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
        for j, col in enumerate(truth.columns[1:], start=1):
            extra_target = pd.Series(truth.values[:, j], index=ids).dropna()
            if len(extra_target):
                extra_scores[f"corr_{col}"] = score_signals_round(matrix, extra_target, metrics=("corr",)).scores["corr"]
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
        columns = {name: (given[name] if name in given else scores[name].to_numpy())
                   for name in SIGNALS_METRICS if name in wanted}
        columns.update({name: s.to_numpy() for name, s in extra_scores.items()})
        for i in range(n):
            out.append({name: finite_or_none(values[i]) for name, values in columns.items()})
        return RoundOutcome(out, notes)

    truth_free_metrics = ("mcwnm", "apcwnm")

    def score_truth_free(self, inputs: RoundInputs, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """MCWNM and APCWNM: every pair of counted submissions, whatever the truth (the round's
        quadratic part, done once when it closes rather than for each truth version)."""
        n = len(inputs.keys)
        if n == 0:
            return {}
        matrix = RoundMatrix(inputs.take_values()[:, :, 0], pd.Index(inputs.universe.ids),
                             pd.Index([str(k) for k in inputs.keys]), owned=True)
        scores = score_signals_round(matrix, metrics=self.truth_free_metrics).scores
        return {name: scores[name].to_numpy() for name in self.truth_free_metrics}

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

