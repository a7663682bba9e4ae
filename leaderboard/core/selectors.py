"""Reads that join models. Views and API views call the same ones."""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q

from leaderboard.core.models import Benchmark, Case, CaseResult, LeaderboardRow, Round, Score, Submission
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


def _visible_case_results(submission: Submission, viewer):
    """The submission's CaseResults the viewer may see, or None when it may see none."""
    show_private = private_visible(submission.benchmark, viewer)
    if not show_private and not submission.benchmark.kind_impl.case_rows_public:
        return None  # a hidden test set: per-case truth waits for the reveal
    qs = CaseResult.objects.filter(submission=submission)
    if not show_private:
        qs = qs.filter(split="public")
    return qs


def _in_column_order(submission: Submission, data: dict) -> dict:
    order = {name: i for i, name in enumerate(submission.case_columns)}
    return dict(sorted(data.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def submission_case_rows(submission: Submission, *, viewer=None) -> list[dict]:
    """Per-case debug rows the viewer may see: never truth of a hidden private split."""
    qs = _visible_case_results(submission, viewer)
    if qs is None:
        return []
    return [_in_column_order(submission, data)
            for data in qs.order_by("case__position", "id").values_list("data", flat=True)]


def submission_case_row(submission: Submission, case: Case, *, viewer=None) -> dict | None:
    """One case's debug row of a submission, under the same rules as ``submission_case_rows``.

    None when the case was not predicted, has no released truth (no row is
    stored for it) or lies in a split the viewer may not see.
    """
    qs = _visible_case_results(submission, viewer)
    data = qs.filter(case=case).values_list("data", flat=True).first() if qs is not None else None
    return None if data is None else _in_column_order(submission, data)


def round_case(round_: Round | None, case_id: str) -> Case | None:
    if round_ is None:
        return None
    return Case.objects.filter(round=round_, external_id=case_id).first()


def round_cases(round_: Round | None) -> list[dict]:
    """A round's cases in order: ``external_id`` and the ``public`` attributes (never truth)."""
    if round_ is None:
        return []
    return list(Case.objects.filter(round=round_).order_by("position", "id").values("external_id", "public"))


def case_neighbours(case: Case) -> tuple[str | None, str | None]:
    """External ids of the cases before and after this one in its round's order."""
    same_round = Case.objects.filter(round_id=case.round_id)
    before = (same_round.filter(Q(position__lt=case.position) | Q(position=case.position, id__lt=case.id))
              .order_by("-position", "-id").values_list("external_id", flat=True).first())
    after = (same_round.filter(Q(position__gt=case.position) | Q(position=case.position, id__gt=case.id))
             .order_by("position", "id").values_list("external_id", flat=True).first())
    return before, after


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
