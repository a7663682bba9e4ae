"""Verify: a participant's dry run. Nothing is saved and nothing counts against the daily limit."""
from __future__ import annotations

from typing import Any

from scoring.errors import RowError, ValidationFailed
from scoring.kinds.base import VerifyUnavailable

from leaderboard.core.models import Benchmark
from leaderboard.core.selectors import leaderboard_round
from leaderboard.core.services.casedata import latest_truth_version, round_caseset, truth_for
from leaderboard.core.services.submissions import SubmissionRejected, upload_size_check


def benchmark_verify(*, benchmark: Benchmark, predictions: Any = None, data: bytes | None = None,
                     filename: str = "") -> dict[str, Any]:
    """Score predictions against the released truth without storing anything.

    Raises SubmissionRejected: 400 with every problem for invalid predictions,
    403 when the benchmark offers no dry run, 409 when there is no truth yet.
    """
    kind = benchmark.kind_impl
    round_ = leaderboard_round(benchmark)
    if round_ is None:
        raise SubmissionRejected([RowError("this benchmark has no cases yet")], status=409)
    cases = round_caseset(round_)
    if data is not None:
        upload_size_check(benchmark=benchmark, size=len(data))
    try:
        if data is not None:
            parsed = kind.parse_submission(data, filename=filename, cases=cases, config=benchmark.config)
        else:
            parsed = kind.parse_json_predictions(predictions, cases=cases, config=benchmark.config)
    except ValidationFailed as exc:
        raise SubmissionRejected(exc.errors, status=413 if exc.too_large else 400) from None
    version = latest_truth_version(round_)
    if version is None:
        raise SubmissionRejected([RowError("no truth has been released for this benchmark yet")], status=409)
    try:
        return kind.verify(parsed, cases=cases, truth=truth_for(version), config=benchmark.config)
    except VerifyUnavailable as exc:
        raise SubmissionRejected([RowError(str(exc))], status=403) from None
