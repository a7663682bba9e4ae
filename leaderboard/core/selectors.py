"""Reads that join models. Views and API views call the same ones."""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q

from leaderboard.core.models import Benchmark, CaseResult, LeaderboardRow, Round, Score, Submission
from leaderboard.core.services.submissions import current_round


def benchmarks_visible(viewer) -> list[Benchmark]:
    qs = Benchmark.objects.all() if getattr(viewer, "is_staff", False) else Benchmark.objects.filter(is_published=True)
    return list(qs.annotate(
        entrant_count=Count("rounds__leaderboard_rows", filter=Q(rounds__leaderboard_rows__split="public")),
    ).order_by("title", "id"))


def private_visible(benchmark: Benchmark, viewer) -> bool:
    return benchmark.private_revealed or getattr(viewer, "is_staff", False)


def leaderboard_round(benchmark: Benchmark) -> Round | None:
    """The round whose leaderboard the benchmark page shows (the current one, else the latest)."""
    return current_round(benchmark) or Round.objects.filter(benchmark=benchmark).order_by("-number", "-id").first()


def leaderboard_rows(benchmark: Benchmark, *, split: str = "public", viewer=None, round_: Round | None = None):
    """Precomputed rows, ranked, with entrant and submission loaded (one query).

    The private split is only returned once revealed, or to staff.
    """
    if split != "public" and not private_visible(benchmark, viewer):
        return []
    round_ = round_ or leaderboard_round(benchmark)
    if round_ is None:
        return []
    return list(
        LeaderboardRow.objects.filter(round=round_, split=split)
        .select_related("entrant", "submission")
        .order_by("rank", "id")
    )


def default_split(benchmark: Benchmark) -> str:
    return "private" if benchmark.private_revealed else "public"


def submission_scores(submission: Submission, *, viewer=None) -> dict[str, dict[str, float | None]]:
    """split -> metric -> value; the private split only after reveal (or for staff)."""
    out: dict[str, dict[str, float | None]] = defaultdict(dict)
    show_private = private_visible(submission.benchmark, viewer)
    for split, metric, value in Score.objects.filter(submission=submission).values_list("split", "metric", "value"):
        if split == "private" and not show_private:
            continue
        out[split][metric] = value
    return dict(out)


def submission_case_rows(submission: Submission, *, viewer=None) -> list[dict]:
    """Per-case debug rows the viewer may see: never truth of a hidden private split."""
    show_private = private_visible(submission.benchmark, viewer)
    if not show_private and not submission.benchmark.kind_impl.case_rows_public:
        return []  # a hidden test set: per-case truth waits for the reveal
    qs = CaseResult.objects.filter(submission=submission).select_related("case").order_by("case__position", "id")
    if not show_private:
        qs = qs.filter(split="public")
    order = {name: i for i, name in enumerate(submission.case_columns)}
    return [dict(sorted(row.data.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))) for row in qs]


def submissions_for(user, *, benchmark: Benchmark | None = None):
    qs = Submission.objects.filter(user=user).select_related("benchmark", "entrant").order_by("-received_at", "-id")
    if benchmark is not None:
        qs = qs.filter(benchmark=benchmark)
    return qs


def submissions_headline(submissions) -> dict[int, float | None]:
    """Public ranking-metric value per submission id, in one query."""
    subs = list(submissions)
    wanted = defaultdict(list)
    for s in subs:
        wanted[s.benchmark.kind_impl.ranking_metric].append(s.pk)
    out: dict[int, float | None] = {}
    q = Q()
    for metric, ids in wanted.items():
        q |= Q(metric=metric, submission_id__in=ids)
    if not wanted:
        return out
    for sub_id, value in Score.objects.filter(q, split="public").values_list("submission_id", "value"):
        out[sub_id] = value
    return out
