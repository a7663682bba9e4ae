"""Kind ``ranking``: CrowdCent-style rounds scored by symmetric NDCG@k (spec/ranking-symmetric-ndcg.txt).

A round opens with a universe of ids. A submission is ``id,pred_10d,pred_30d``
(one column per horizon of config ``horizons``): every universe id once, finite
numbers of any scale (only their order and min-max scaling matter). Truth is
``id,return_10d,return_30d``: realised returns, an empty cell meaning no return
for that id and horizon. When a truth file is loaded, each horizon's returns
become rank targets, ``rank(average) / count`` (``scoring.metrics_ranking.rank_targets``):
by default, as crowdcent's ``create_ranking_targets``, an id missing any
horizon's return is left out of every horizon (config ``missing_returns``:
``drop_id``); ``per_horizon`` ranks each horizon over the ids that have its
return. The stored truth keeps both returns and targets.

Each truth version scores the whole round in one call of
``score_ranking_horizons``: per horizon ``ndcg_<h>`` (symmetric NDCG@k,
crowdcent-challenge 0.2.16), ``spearman_<h>``, and against the round's meta model
(the mean of the counted submissions' rank-scaled predictions) ``corr_to_meta_<h>``
and ``unique_ndcg_<h>``; ``score`` is the weighted mean of the ndcg values.
Standings: the mean of each metric over an entrant's last ``standings_window``
resolved rounds, ranked by ``score``.
"""
from __future__ import annotations

import datetime as dt
import math
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scoring.errors import RowError, ValidationFailed, json_shown
from scoring.kinds import register
from scoring.kinds.base import (
    STANDINGS_MIN_ROUNDS,
    STANDINGS_MIN_ROUNDS_KEY,
    STANDINGS_WINDOW_KEY,
    UNIVERSE_MAX_BYTES,
    CaseSet,
    Choice,
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
from scoring.metrics_ranking import MISSING_RULES, rank_targets, score_ranking_horizons
from scoring.metrics_uncertainty import contribution_intervals, resample_counts
from scoring.rounds import symmetric_ndcg_contributions

DEFAULT_HORIZONS = ("10d", "30d")
DEFAULT_K = 40
DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 * 1024
HORIZON_NAME = re.compile(r"^[A-Za-z0-9]{1,20}$")
CONFIG_KEYS = ("horizons", "k", "weights", "standings_window", "missing_returns", "max_upload_bytes",
               STANDINGS_MIN_ROUNDS)


MAX_UPLOAD_KEY = WholeNumber("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES, 1024, 100 * 1024 * 1024,
                             "must be an integer from 1024 to 104857600; got {value}")
K_KEY = WholeNumber("k", DEFAULT_K, 1, 100_000, "must be a whole number from 1 to 100000; got {value}")
MISSING_KEY = Choice("missing_returns", MISSING_RULES[0], tuple(MISSING_RULES),
                     '"drop_id" (an id without some horizon\'s return is left out of every horizon, as crowdcent\'s '
                     'create_ranking_targets) or "per_horizon" (each horizon over the ids with its return); '
                     'got {value}')


@register
class RankingKind(RoundKind):
    name = "ranking"
    label = "Ranking rounds (symmetric NDCG@k)"
    ranking_metric = "score"
    submission_formats = ("csv",)
    round_template = "core/kinds/ranking_round.html"

    # -- configuration ------------------------------------------------------
    def validate_config(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        cfg = ConfigReader(dict(config or {}), allowed=CONFIG_KEYS, keep_order=True)
        horizons = cfg.get("horizons", list(DEFAULT_HORIZONS))
        if (not isinstance(horizons, list) or not horizons or len(horizons) > 10
                or not all(isinstance(h, str) and HORIZON_NAME.match(h) for h in horizons)):
            cfg.error("horizons", 'must be a list of 1 to 10 short names of letters and digits, '
                                  f'e.g. ["10d", "30d"]; got {json_shown(horizons)}')
            horizons = list(DEFAULT_HORIZONS)
        elif len(set(horizons)) != len(horizons):
            cfg.error("horizons", "names a horizon twice")
        k = cfg.take(K_KEY)
        weights = cfg.get("weights")
        if weights is None:
            weights = dict.fromkeys(horizons, 1.0)
        elif not isinstance(weights, dict):
            cfg.error("weights", 'must map each horizon to a weight, e.g. {"10d": 1, "30d": 1}')
            weights = dict.fromkeys(horizons, 1.0)
        else:
            unknown = [h for h in weights if h not in horizons]
            missing = [h for h in horizons if h not in weights]
            bad = [h for h, w in weights.items() if isinstance(w, bool) or not isinstance(w, (int, float))
                   or not math.isfinite(w) or w < 0]
            if unknown or missing:
                cfg.error("weights", f"must give a weight to each horizon ({', '.join(horizons)})"
                          + (f"; unknown: {', '.join(map(str, unknown))}" if unknown else "")
                          + (f"; missing: {', '.join(missing)}" if missing else ""))
            elif bad:
                cfg.error("weights", f"weights are numbers >= 0; not {', '.join(map(str, bad))}")
            elif sum(weights.values()) <= 0:
                cfg.error("weights", "at least one weight must be above 0")
            weights = {h: float(weights[h]) if h in weights and h not in bad else 0.0 for h in horizons}
        window = cfg.take(STANDINGS_WINDOW_KEY)
        missing_rule = cfg.take(MISSING_KEY)
        cap = cfg.take(MAX_UPLOAD_KEY)
        min_rounds = cfg.take(STANDINGS_MIN_ROUNDS_KEY)
        cfg.done()
        return {"horizons": list(horizons), "k": k, "weights": weights, "standings_window": window,
                "missing_returns": missing_rule, "max_upload_bytes": cap, STANDINGS_MIN_ROUNDS: min_rounds}

    def metric_specs(self, config: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
        cfg = self.validate_config(config)
        horizons, k = cfg["horizons"], cfg["k"]
        weights = cfg["weights"]
        equal = len(set(weights.values())) == 1
        how = "mean" if equal else "weighted mean (" + ", ".join(f"{h}: {weights[h]:g}" for h in horizons) + ")"
        specs = [MetricSpec("score", "Score", True, "{:.4f}", f"{how} of the symmetric NDCG@{k} of each horizon")]
        specs += [MetricSpec(f"ndcg_{h}", f"NDCG@{k} {h}", True, "{:.4f}",
                             f"symmetric NDCG@{k} against the {h} rank targets") for h in horizons]
        specs += [MetricSpec(f"spearman_{h}", f"Spearman {h}", True, "{:.4f}",
                             f"Spearman correlation with the {h} returns") for h in horizons]
        specs += [MetricSpec(f"unique_ndcg_{h}", f"Unique NDCG {h}", True, "{:.4f}",
                             f"symmetric NDCG@{k} ({h}) of what is left of your rank-scaled prediction once the "
                             "meta model's least-squares component is removed") for h in horizons]
        specs += [MetricSpec(f"corr_to_meta_{h}", f"Corr. meta {h}", False, "{:.4f}",
                             f"Spearman correlation with the meta model ({h}); lower: more your own")
                  for h in horizons]
        return tuple(specs)

    def metric(self, name: str) -> MetricSpec:
        labels = {"ndcg": ("NDCG", True), "spearman": ("Spearman", True), "unique_ndcg": ("Unique NDCG", True),
                  "corr_to_meta": ("Corr. meta", False)}
        if name == "score":
            return MetricSpec("score", "Score", True, "{:.4f}", "weighted mean of the horizons' symmetric NDCG@k")
        for prefix, (label, higher) in sorted(labels.items(), key=lambda p: -len(p[0])):
            if name.startswith(prefix + "_"):
                return MetricSpec(name, f"{label} {name[len(prefix) + 1:]}", higher, "{:.4f}")
        return MetricSpec(name, name)

    def chart_metrics(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return ("score", *(f"ndcg_{h}" for h in self.validate_config(config)["horizons"]))

    def leaderboard_note(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        return (f"Standings: the mean of each metric over the last {cfg['standings_window']} resolved rounds an "
                f"entrant took part in, ranked by the mean score (symmetric NDCG@{cfg['k']} over the horizons "
                f"{', '.join(cfg['horizons'])})." + standings_min_rounds_note(cfg[STANDINGS_MIN_ROUNDS]))

    # -- universe and uploads -------------------------------------------------
    def parse_universe(self, data: bytes, *, filename: str, config: Mapping[str, Any]) -> CaseSet:
        """``id`` alone: each id once, printable, no commas."""
        return read_id_universe(data, filename=filename)

    def prediction_names(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(f"pred_{h}" for h in self.validate_config(config)["horizons"])

    def parse_round_submission(self, data: bytes, *, filename: str, universe: Universe,
                               config: Mapping[str, Any]) -> RoundSubmission:
        """``id,pred_<h>...``: every universe id exactly once, each prediction a finite number."""
        cfg = self.validate_config(config)
        columns = self.prediction_names(cfg)
        values = read_id_values(data, universe=universe, columns=columns, max_bytes=cfg["max_upload_bytes"])
        return RoundSubmission(values, columns)

    def format_help(self, config: Mapping[str, Any]) -> str:
        cfg = self.validate_config(config)
        columns = self.prediction_names(cfg)
        horizons, k = cfg["horizons"], cfg["k"]
        mb = cfg["max_upload_bytes"] / 1048576
        weights = cfg["weights"]
        equal = len(set(weights.values())) == 1
        how = "the mean" if equal else "the weighted mean (" + ", ".join(
            f"{h}: {weights[h]:g}" for h in horizons) + ")"
        return "\n".join([
            "### Submission format",
            "",
            "Each round has its own universe of ids (download it from the round's page or "
            "`GET /api/benchmarks/{slug}/rounds/{n}/universe/`). Upload a CSV (UTF-8) with exactly these columns:",
            "",
            "```",
            ",".join(["id", *columns]),
            "```",
            "",
            "- every id of the open round's universe exactly once, no other id;",
            f"- one score per horizon ({', '.join(horizons)}): any finite number, higher meaning a higher expected "
            "return over that horizon. Only the order and the spread matter: scores are min-max scaled;",
            f"- at most {mb:g} MB. A rejected file lists every problem with its row (the header is row 1) "
            "and column, and does not count against the daily limit.",
            "",
            "Your latest accepted upload before the round closes is the one that counts; earlier ones stay in "
            "your history, marked replaced.",
            "",
            "### Scoring",
            "",
            "When the organiser loads the realised returns (interim snapshots, then the final ones), each "
            "horizon's returns become rank targets, `rank / count` over the ids that have a return"
            + (" for every horizon (an id missing one horizon's return is left out of all of them, as "
               "crowdcent's create_ranking_targets does)" if cfg["missing_returns"] == "drop_id"
               else " for that horizon") + ", and every "
            f"counted submission of the round is scored at once: `ndcg_<h>`, the symmetric NDCG@{k} of "
            "crowdcent-challenge 0.2.16 (how well your top "
            f"{k} find the highest returns and your bottom {k} the lowest), and `spearman_<h>`. "
            f"`score` is {how} of the ndcg values, and ranks the round. Against the round's meta model (the mean "
            "of every counted submission's rank-scaled predictions) you also get `corr_to_meta_<h>` (Spearman "
            "correlation with it) and `unique_ndcg_<h>` (the NDCG of what your prediction says beyond it). "
            f"Standings average each metric over your last {cfg['standings_window']} resolved rounds.",
        ]) + "\n"

    def example_submission(self, cases: CaseSet, config: Mapping[str, Any]) -> tuple[str, bytes]:
        columns = self.prediction_names(config)
        lines = [",".join(["id", *columns])]
        for c in cases.cases:
            seed = zlib.crc32(c.case_id.encode())
            lines.append(",".join([c.case_id, *(f"{((seed >> (3 * j)) % 1000) / 1000:.3f}"
                                                for j in range(len(columns)))]))
        return "example_submission.csv", ("\n".join(lines) + "\n").encode()

    # -- truth ------------------------------------------------------------------
    def truth_columns(self, config: Mapping[str, Any]) -> tuple[str, ...]:
        horizons = self.validate_config(config)["horizons"]
        return (*(f"return_{h}" for h in horizons), *(f"target_{h}" for h in horizons))

    def parse_truth(self, data: bytes, *, filename: str, universe: Universe, config: Mapping[str, Any],
                    final: bool, as_of: dt.date | None = None) -> RoundTruth:
        """``id,return_<h>...``: realised returns, ids of the universe at most once, an empty cell
        for no return. The returns become rank targets here (``rank_targets``, config ``missing_returns``)."""
        cfg = self.validate_config(config)
        horizons = cfg["horizons"]
        file = filename or "truth.csv"
        returns = read_id_values(data, universe=universe, columns=[f"return_{h}" for h in horizons],
                                 max_bytes=UNIVERSE_MAX_BYTES, filename=file, every_id=False, empty_ok=True,
                                 what="id")
        empty = [h for j, h in enumerate(horizons) if np.isnan(returns[:, j]).all()]
        if len(empty) == len(horizons):
            raise ValidationFailed([RowError("no id has a return: nothing could be scored", file=file)])
        if final and empty:
            raise ValidationFailed([RowError(f"the final truth needs returns for every horizon; column "
                                             f"return_{h} is empty", column=f"return_{h}", file=file)
                                    for h in empty])
        targets = rank_targets(returns, missing=cfg["missing_returns"])
        return RoundTruth(np.hstack([returns, targets]), self.truth_columns(config), final=final, as_of=as_of)

    # -- scoring ------------------------------------------------------------------
    def round_intervals(self, inputs: RoundInputs, config: Mapping[str, Any], *,
                        seed: int) -> tuple[np.ndarray, np.ndarray] | None:
        """``score``: each id's share of every horizon's symmetric NDCG@k (``symmetric_ndcg_contributions``),
        weighted as the score, over the ids with a target for every weighted horizon."""
        cfg = self.validate_config(config)
        horizons, k = cfg["horizons"], cfg["k"]
        truth = inputs.truth
        if truth is None or not len(inputs.keys):
            return None
        weights = {h: float(cfg["weights"].get(h, 0.0)) if cfg["weights"] else 1.0 for h in horizons}
        used = [j for j, h in enumerate(horizons) if weights[h] > 0]
        targets = np.column_stack([truth.column(f"target_{h}") for h in horizons])
        known = np.isfinite(targets[:, used]).all(axis=1) if used else np.zeros(len(targets), bool)
        if known.sum() < 2:
            return None
        counts = resample_counts(int(known.sum()), seed=seed)
        m = len(inputs.keys)
        low, high = np.full(m, np.nan), np.full(m, np.nan)
        total = sum(weights[horizons[j]] for j in used)
        for start in range(0, m, 1000):
            stop = min(m, start + 1000)
            shares = sum(weights[horizons[j]] * symmetric_ndcg_contributions(
                inputs.values[start:stop][:, known, j], targets[known, j], k) for j in used) / total
            low[start:stop], high[start:stop] = contribution_intervals(shares, counts=counts)
        return low, high

    def score_round_version(self, inputs: RoundInputs, config: Mapping[str, Any]) -> RoundOutcome:
        cfg = self.validate_config(config)
        horizons, k = cfg["horizons"], cfg["k"]
        m = len(inputs.keys)
        if m == 0:
            return RoundOutcome([], ["No counted submissions."])
        truth = inputs.truth
        assert truth is not None, "a truth version is scored with its truth"
        targets = np.column_stack([truth.column(f"target_{h}") for h in horizons])
        result = score_ranking_horizons(inputs.values, targets, horizons=horizons, k=k, weights=cfg["weights"])
        notes: list[str] = []
        missing = [h for j, h in enumerate(horizons) if np.isnan(targets[:, j]).all()]
        if missing:
            notes.append(f"No {', '.join(missing)} returns in this snapshot yet: the score is over "
                         f"{', '.join(h for h in horizons if h not in missing)} only.")
        scored = {h: int((~np.isnan(targets[:, j])).sum()) for j, h in enumerate(horizons)}
        partial = [f"{h}: {scored[h]} of {len(inputs.universe)}" for h in horizons
                   if h not in missing and scored[h] < len(inputs.universe)]
        if partial:
            notes.append("Ids with a return (the others are not scored): " + "; ".join(partial) + ".")
        returns = np.column_stack([truth.column(f"return_{h}") for h in horizons])
        dropped = int((~np.isnan(returns).all(axis=1) & np.isnan(targets).all(axis=1)).sum())
        if dropped:
            notes.append(f"{dropped} id{'s' if dropped != 1 else ''} without a return for some horizon "
                         f"{'are' if dropped != 1 else 'is'} left out of every horizon, as crowdcent's "
                         "create_ranking_targets does (config missing_returns: drop_id).")
        mm = result.meta_metrics
        shown = ", ".join(f"NDCG@{k} {h} {mm[f'ndcg_{h}']:.4f}" for h in horizons if h not in missing)
        whose = "submissions'" if m != 1 else "submission's"  # plural and singular possessive
        notes.append(f"Meta model (the mean of the {m} counted {whose} rank-scaled "
                     f"predictions): score {mm['score']:.4f}; {shown}.")
        if m == 1:
            notes.append("With one counted submission the meta model is that submission: unique NDCG is n/a.")
        columns = dict(result.metrics)
        return RoundOutcome([{name: finite_or_none(v[i]) for name, v in columns.items()} for i in range(m)], notes)

    # -- the per-id debug table -------------------------------------------------
    def case_columns(self, config: Mapping[str, Any]) -> tuple[Column, ...]:
        cfg = self.validate_config(config)
        k = cfg["k"]
        cols = [Column("id", "id", "{}")]
        for h in cfg["horizons"]:
            cols += [
                Column(f"pred_{h}", f"pred {h}", "{:.6g}", "your value"),
                Column(f"rank_{h}", f"your rank {h}", "{}",
                       "1 = your highest prediction, among the ids with a return; tied values share the best rank"),
                Column(f"return_{h}", f"return {h}", "{:+.4%}", "the realised return"),
                Column(f"target_{h}", f"rank target {h}", "{:.4f}", "rank(average) / count of the return"),
                Column(f"band_{h}", f"top/bottom {k} {h}", "{}",
                       f"whether your prediction put this id in your top {k} or your bottom {k}"),
            ]
        return tuple(cols)

    def case_table_promise(self, config: Mapping[str, Any]) -> str:
        k = self.validate_config(config)["k"]
        return (f"The per-id table (your predictions, your rank of each id, its return and rank target, and "
                f"whether it fell in your top or bottom {k}) is shown once the round is resolved.")

    def round_case_rows(self, values: np.ndarray, *, universe: Universe, truth: RoundTruth,
                        config: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Per universe id and horizon: the prediction, its rank among the ids with a return
        (1 = highest, ties share the best), the return, the rank target and the k band."""
        cfg = self.validate_config(config)
        k = cfg["k"]
        values = np.asarray(values, dtype=np.float64).reshape(len(universe), -1)
        rows: list[dict[str, Any]] = [{"id": cid} for cid in universe.ids]
        for j, h in enumerate(cfg["horizons"]):
            pred = values[:, j]
            target = truth.column(f"target_{h}")
            ret = truth.column(f"return_{h}")
            scored = ~np.isnan(target) & ~np.isnan(pred)
            p = pred[scored]
            ordered = np.sort(p)
            above = len(p) - np.searchsorted(ordered, p, side="right")  # strictly higher predictions
            below = np.searchsorted(ordered, p, side="left")  # strictly lower
            rank = np.full(len(pred), -1, dtype=np.int64)
            band = np.full(len(pred), "", dtype=object)
            rank[scored] = above + 1
            top, bottom = above < k, below < k
            band[scored] = np.where(top & bottom, "top and bottom", np.where(top, "top", np.where(bottom, "bottom", "")))
            for i, row in enumerate(rows):
                row[f"pred_{h}"] = finite_or_none(pred[i])
                row[f"rank_{h}"] = int(rank[i]) if rank[i] > 0 else None
                row[f"return_{h}"] = finite_or_none(ret[i])
                row[f"target_{h}"] = finite_or_none(target[i])
                row[f"band_{h}"] = band[i]
        return rows

    # -- standings ------------------------------------------------------------------
    def standings(self, results: Sequence[RoundResult], config: Mapping[str, Any]) -> Standings:
        """Per entrant: the mean of each metric over its last ``standings_window`` resolved rounds,
        ranked by the mean ``score``."""
        cfg = self.validate_config(config)
        return windowed_mean_standings(results, window=cfg["standings_window"], rank_by="score")
