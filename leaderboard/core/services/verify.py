"""Verify: a participant's dry run. Nothing is saved and nothing counts against the daily limit."""
from __future__ import annotations

from typing import Any

from scoring.errors import RowError

from leaderboard.core.models import Benchmark, Case
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.casedata import latest_truth_version, round_caseset, truth_for
from leaderboard.core.services.predictions import PredictionsSource, predictions_parse
from leaderboard.core.services.rounds import leaderboard_round
from leaderboard.core.services.visibility import case_truth_visible

# The dry run scores the dev split only, for everyone: cases whose truth participants
# may see and which never rank. Its answer can tell nothing about a ranked case.
VERIFY_SPLITS = (Case.Split.DEV,)


def benchmark_verify(*, benchmark: Benchmark, predictions: Any = None, data: bytes | None = None,
                     filename: str = "") -> dict[str, Any]:
    """Score predictions of the dev cases against their truth without storing anything.

    The file is validated against every case (a full submission file is
    fine); predictions of other cases are ignored and only dev truth is read.
    Raises SubmissionRejected: 400 with every problem for invalid predictions,
    403 when the benchmark offers no dry run, 409 when there are no dev cases
    or no truth yet.
    """
    kind = benchmark.kind_impl
    round_ = leaderboard_round(benchmark)
    if round_ is None:
        raise SubmissionRejected([RowError("this benchmark has no cases yet")], status=409)
    if not kind.verify_available(benchmark.config):
        raise SubmissionRejected([RowError("this benchmark has no dry run (verify)")], status=403)
    cases = round_caseset(round_)
    splits = [s for s in VERIFY_SPLITS
              if case_truth_visible(benchmark=benchmark, round_=round_, split=s, viewer=None)]
    if not cases.in_splits(splits).cases:
        raise SubmissionRejected([RowError(
            "this benchmark has no dev cases, so a dry run has nothing to score: verify scores only the dev "
            "split (cases whose truth participants may see), never a ranked case")], status=409)
    parsed = predictions_parse(benchmark=benchmark, cases=cases,
                               source=PredictionsSource(data=data, filename=filename, predictions=predictions))
    version = latest_truth_version(round_)
    if version is None:
        raise SubmissionRejected([RowError("no truth has been released for this benchmark yet")], status=409)
    return kind.verify(parsed, cases=cases, truth=truth_for(version, splits=splits), config=benchmark.config)
