"""The staff's fair-play report of a benchmark: what to look at, never an automatic verdict.

- **Identical uploads**: counted submissions of different owners with the same audit hash
  (the canonical payload's SHA-256), grouped by hash. Counted: a round kind's counted
  submission of each round; a static kind's every upload that was not refused or failed.
- **Correlated predictions**: pairs of entrants of different owners whose predictions
  correlate at or above ``threshold`` (``FAIRPLAY_CORRELATION_THRESHOLD``, 0.99) within a
  round (round kinds: every counted submission, all ids and columns) or a split (static kinds:
  the submission each entrant shows on the public board, over that split's cases). The search
  is vectorised and bounded (``scoring/metrics_similarity.py``).

Entrants of one owner (a participant's several models) are left out: they share a daily limit
already. A team is one entrant. The report is kept in the cache for ``FAIRPLAY_CACHE_SECONDS``
per benchmark, threshold and latest submission, so reloading the page costs nothing.
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max

from scoring.metrics_similarity import correlated_pairs

from leaderboard.core.models import Benchmark, Case, LeaderboardRow, Round, Submission, SubmissionArray

Status = Submission.Status


@dataclass
class IdenticalGroup:
    audit_hash: str
    entrants: list[dict]  # {"entrant", "owner", "submissions": [ids], "first_at"}


@dataclass
class CorrelatedPair:
    scope: str  # "round 3", "public split"
    a: str
    b: str
    correlation: float
    common: int  # values compared


@dataclass
class FairPlayReport:
    threshold: float
    identical: list[IdenticalGroup] = field(default_factory=list)
    correlated: list[CorrelatedPair] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)  # what was compared, with counts
    truncated: int = 0  # candidate pairs beyond what was checked exactly
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _counted(benchmark: Benchmark):
    qs = Submission.objects.filter(benchmark=benchmark)
    if benchmark.kind_impl.is_round_kind:
        return qs.filter(is_counted=True)
    return qs.exclude(status=Status.FAILED)


def identical_uploads(benchmark: Benchmark) -> list[IdenticalGroup]:
    """Audit hashes shared by counted submissions of entrants of more than one owner (one query for
    the hashes, one for their submissions)."""
    counted = _counted(benchmark)
    hashes = list(counted.values("audit_hash").annotate(owners=Count("entrant__owner", distinct=True))
                  .filter(owners__gt=1).order_by("audit_hash").values_list("audit_hash", flat=True)[:500])
    groups: dict[str, dict[int, dict]] = defaultdict(dict)
    for digest, pk, name, owner, at in (counted.filter(audit_hash__in=hashes)
                                        .order_by("audit_hash", "received_at", "id")
                                        .values_list("audit_hash", "pk", "entrant__name", "entrant__owner__username",
                                                     "received_at")):
        entry = groups[digest].setdefault(name, {"entrant": name, "owner": owner, "submissions": [], "first_at": at})
        entry["submissions"].append(pk)
    return [IdenticalGroup(digest, list(groups[digest].values())) for digest in hashes]


def _round_matrices(benchmark: Benchmark):
    """Per round with counted submissions: (scope, entrant names, owner ids, values n x (ids*columns))."""
    rounds = list(Round.objects.filter(benchmark=benchmark, submissions__is_counted=True).distinct()
                  .order_by("-number"))
    for round_ in rounds:
        rows = list(SubmissionArray.objects.filter(submission__round=round_, submission__is_counted=True)
                    .order_by("submission__entrant__name", "submission_id")
                    .values_list("submission__entrant__name", "submission__entrant__owner_id", "rows", "columns",
                                 "data"))
        if len(rows) < 2:
            continue
        values = np.stack([np.frombuffer(bytes(data), dtype=np.float64, count=n * len(cols))
                           for _, _, n, cols, data in rows])
        yield f"round {round_.number}", [r[0] for r in rows], [r[1] for r in rows], values


def _split_matrices(benchmark: Benchmark):
    """Per ranked split of a static benchmark: each entrant's public-board submission over that split's cases."""
    kind = benchmark.kind_impl
    board = list(LeaderboardRow.objects.filter(round__benchmark=benchmark, split="public")
                 .order_by("entrant__name", "id")
                 .values_list("entrant__name", "entrant__owner_id", "submission__payload", "round_id"))
    if len(board) < 2:
        return
    round_id = board[0][3]
    parsed = [kind.load_submission(payload) for _, _, payload, _ in board]
    for split in Case.RANKED_SPLITS:
        ids = list(Case.objects.filter(round_id=round_id, split=split).order_by("position", "id")
                   .values_list("external_id", flat=True))
        if not ids:
            continue
        values = np.stack([kind.prediction_values(p, ids).ravel() for p in parsed])
        yield f"{split} split", [b[0] for b in board], [b[1] for b in board], values


def fairplay_report(benchmark: Benchmark, *, threshold: float | None = None, max_pairs: int = 200) -> FairPlayReport:
    """The report (from the cache while nothing new was submitted)."""
    threshold = settings.FAIRPLAY_CORRELATION_THRESHOLD if threshold is None else threshold
    latest = Submission.objects.filter(benchmark=benchmark).aggregate(n=Max("id"))["n"] or 0
    key = f"fairplay:{benchmark.pk}:{latest}:{threshold!r}:{max_pairs}"
    found = cache.get(key)
    if found is None:
        found = _build(benchmark, threshold, max_pairs)
        cache.set(key, found, settings.FAIRPLAY_CACHE_SECONDS)
    return found


def _build(benchmark: Benchmark, threshold: float, max_pairs: int) -> FairPlayReport:
    started = time.perf_counter()
    report = FairPlayReport(threshold=threshold, identical=identical_uploads(benchmark))
    kind = benchmark.kind_impl
    matrices = _round_matrices(benchmark) if kind.is_round_kind else _split_matrices(benchmark)
    try:
        for scope, names, owners, values in matrices:
            pairs, candidates = correlated_pairs(values, threshold, sample=settings.FAIRPLAY_SAMPLE_VALUES)
            report.scopes.append(f"{scope}: {len(names)} entrants, {values.shape[1]:,} values each")
            report.truncated += max(0, candidates - 20_000)
            for p in pairs:
                if owners[p.a] != owners[p.b]:
                    report.correlated.append(CorrelatedPair(scope, names[p.a], names[p.b], p.correlation, p.common))
    except NotImplementedError as exc:
        report.notes.append(f"predictions are not compared: {exc}")
    report.correlated.sort(key=lambda c: (-c.correlation, c.scope, c.a, c.b))
    if len(report.correlated) > max_pairs:
        report.notes.append(f"{len(report.correlated) - max_pairs:,} more pairs above the threshold are not listed "
                            "(the strongest are); raise the threshold to see fewer")
        report.correlated = report.correlated[:max_pairs]
    report.seconds = time.perf_counter() - started
    return report

