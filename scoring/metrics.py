"""Every metric of the five kinds, importable from one place.

    from scoring.metrics import numerai_corr, symmetric_ndcg_at_k, capitalbench_score

Pure functions over numpy/scipy/pandas: no Django import, usable offline by an
organiser or a participant. See docs/scoring.md for each formula and its source.
"""
from __future__ import annotations

from scoring.metrics_impact import adjusted_score, impact_category, impact_metrics
from scoring.metrics_portfolio import (
    CASH,
    ComparisonSet,
    beats_cash,
    capitalbench_score,
    capitalbench_scores,
    comparison_set_score,
    comparison_sets,
    consistency_summary,
    oracle_return,
    portfolio_return,
    price_returns,
    regret,
    round_results,
    sp500_return,
)
from scoring.metrics_properties import spearman, top_fraction_recall
from scoring.metrics_ranking import rank_targets, symmetric_ndcg_at_k
from scoring.metrics_signals import (
    corr_with_meta_model,
    correlation_contribution,
    feature_neutral_corr,
    gaussianize,
    neutralize,
    numerai_corr,
    orthogonalize,
    pairwise_corr_stats,
    stake_weighted_meta_model,
    tie_broken_rank,
    tie_kept_rank,
)
from scoring.metrics_uncertainty import (
    BootstrapCI,
    PairedBootstrap,
    board_seed,
    bootstrap_ci,
    contribution_intervals,
    paired_bootstrap_diff,
    rank_intervals,
    rank_ranges,
    ratio_intervals,
)
from scoring.rounds import RoundScores, score_ranking_round, score_signals_round

__all__ = [
    # signals (numerai-tools 0.7.2)
    "tie_kept_rank",
    "tie_broken_rank",
    "gaussianize",
    "orthogonalize",
    "neutralize",
    "numerai_corr",
    "correlation_contribution",
    "feature_neutral_corr",
    "stake_weighted_meta_model",
    "corr_with_meta_model",
    "pairwise_corr_stats",
    # ranking (crowdcent-challenge 0.2.16)
    "symmetric_ndcg_at_k",
    "rank_targets",
    # properties
    "spearman",
    "top_fraction_recall",
    # impact
    "adjusted_score",
    "impact_category",
    "impact_metrics",
    # portfolio
    "CASH",
    "ComparisonSet",
    "portfolio_return",
    "oracle_return",
    "capitalbench_score",
    "comparison_set_score",
    "comparison_sets",
    "price_returns",
    "sp500_return",
    "regret",
    "beats_cash",
    "capitalbench_scores",
    "round_results",
    "consistency_summary",
    # uncertainty
    "BootstrapCI",
    "PairedBootstrap",
    "bootstrap_ci",
    "paired_bootstrap_diff",
    "board_seed",
    "contribution_intervals",
    "rank_intervals",
    "rank_ranges",
    "ratio_intervals",
    # whole rounds
    "RoundScores",
    "score_signals_round",
    "score_ranking_round",
]
