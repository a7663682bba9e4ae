"""Reads that join models. Views and API views call the same ones.

The no-leak rule lives here, in ``case_truth_visible``: every surface that
could show a case's truth or whether a prediction of it was right (submission
and case pages, per-case rows in JSON and CSV, training downloads, verify)
asks it first.
"""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q

from leaderboard.core.models import Benchmark, Case, CaseResult, LeaderboardRow, Round, Score, Submission
from leaderboard.core.services.casedata import latest_truth_version, round_caseset, truth_for
from leaderboard.core.services.submissions import current_round, round_takes_submissions

# How a case whose truth the viewer may not see yet is labelled: it ranks (public or
# private), and which of the two it is stays hidden with its truth.
HIDDEN_SPLIT_LABEL = "test"


def case_truth_visible(*, benchmark: Benchmark, round_: Round | None, split: str, viewer) -> bool:
    """Whether per-case truth and correctness of ``split``'s cases in ``round_`` may be shown to ``viewer``.

    The one no-leak rule: staff see everything; the ``dev`` split is shown to
    everyone (it never ranks); a ranked split (``public``, ``private``) only
    once its round takes no more submissions, and ``private`` only after the
    organiser's reveal. A round of a round kind (not permanent) shows its
    truth once resolved.
    """
    if getattr(viewer, "is_staff", False):
        return True
    if split == Case.Split.DEV:
        return True
    if round_ is None or split not in Case.RANKED_SPLITS:
        return False
    if not round_.is_permanent:
        return round_.status == Round.Status.RESOLVED
    if round_takes_submissions(round_):
        return False
    return split == Case.Split.PUBLIC or benchmark.private_revealed


def split_label(split: str, *, visible: bool) -> str:
    """A case's split as a viewer may see it: ``dev``, or ``test`` for a ranked case whose truth is hidden."""
    return split if visible or split == Case.Split.DEV else HIDDEN_SPLIT_LABEL


def _visible_splits(benchmark: Benchmark, round_: Round | None, viewer) -> dict[str, bool]:
    return {split: case_truth_visible(benchmark=benchmark, round_=round_, split=split, viewer=viewer)
            for split in Case.Split.values}


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


def _raw_scores(submission: Submission) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = defaultdict(dict)
    for split, metric, value in Score.objects.filter(submission=submission).values_list("split", "metric", "value"):
        out[split][metric] = value
    return dict(out)


def _scores_shown(submission: Submission, raw: dict, viewer) -> dict[str, dict[str, float | None]]:
    benchmark = submission.benchmark
    kind = benchmark.kind_impl
    shown = {}
    for split, metrics in raw.items():
        if split == Case.Split.PRIVATE and not private_visible(benchmark, viewer):
            continue
        if (split in Case.RANKED_SPLITS
                and not case_truth_visible(benchmark=benchmark, round_=submission.round, split=split, viewer=viewer)
                and not kind.leaderboard_eligible(metrics, benchmark.config)):
            # Scored over fewer cases than the leaderboard's minimum: such a score
            # would tell the truth of its few cases (one case: right or wrong).
            continue
        shown[split] = metrics
    return shown


def submission_scores(submission: Submission, *, viewer=None) -> dict[str, dict[str, float | None]]:
    """split -> metric -> value the viewer may see.

    Dev always; public; private only after reveal (or for staff). While a ranked
    split's truth is hidden, a split whose scores do not qualify for the
    leaderboard (too few scored cases) is left out: ``submission_standing`` says why.
    """
    return _scores_shown(submission, _raw_scores(submission), viewer)


def submission_standing(submission: Submission, *, viewer=None) -> list[dict]:
    """Per leaderboard split the viewer may see: is this submission the one listed, and if not, why.

    ``[{"split", "listed", "reason"}]``; empty until the submission is scored.
    Reasons say nothing a hidden split's truth decides (no counts of scored cases).
    """
    if submission.status != Submission.Status.SCORED:
        return []
    benchmark = submission.benchmark
    kind = benchmark.kind_impl
    raw = _raw_scores(submission)
    listed = dict(LeaderboardRow.objects.filter(round_id=submission.round_id, entrant_id=submission.entrant_id)
                  .values_list("split", "submission_id"))
    predicted = set(CaseResult.objects.filter(submission=submission).values_list("split", flat=True).distinct())
    out = []
    for split in kind.splits:
        metrics = raw.get(split)
        if metrics is None or (split == Case.Split.PRIVATE and not private_visible(benchmark, viewer)):
            continue  # the round has no case of this split, or its board is not shown yet
        if listed.get(split) == submission.pk:
            out.append({"split": split, "listed": True, "reason": None})
            continue
        if predicted == {Case.Split.DEV}:
            reason = "it predicts only dev cases, which are scored for you but never rank"
        else:
            visible = case_truth_visible(benchmark=benchmark, round_=submission.round, split=split, viewer=viewer)
            reason = kind.leaderboard_ineligible_reason(metrics, benchmark.config, detail=visible)
        if reason is None and listed.get(split):
            reason = (f"{submission.entrant.name}'s submission #{listed[split]} is the one listed: the board shows "
                      + ("each entrant's best public submission" if split == kind.splits[0]
                         else "each entrant's selected submission, or its best public one"))
        out.append({"split": split, "listed": False, "reason": reason or "it is not ranked on this split"})
    return out


def _in_column_order(submission: Submission, data: dict) -> dict:
    order = {name: i for i, name in enumerate(submission.case_columns)}
    return dict(sorted(data.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def _shown_row(submission: Submission, split: str, data: dict, visible: bool) -> dict:
    if not visible:
        # The participant's own prediction only: no truth, no correctness, no split.
        data = dict(submission.benchmark.kind_impl.prediction_only(data), split=HIDDEN_SPLIT_LABEL)
    return _in_column_order(submission, data)


def submission_case_rows(submission: Submission, *, viewer=None) -> list[dict]:
    """A submission's per-case rows, each as the no-leak rule lets the viewer see it.

    Rows of splits whose truth is visible are whole; the others carry the
    prediction only, labelled ``test``.
    """
    visible = _visible_splits(submission.benchmark, submission.round, viewer)
    rows = (CaseResult.objects.filter(submission=submission).order_by("case__position", "id")
            .values_list("split", "data"))
    return [_shown_row(submission, split, data, visible.get(split, False)) for split, data in rows]


def submission_case_row(submission: Submission, case: Case, *, viewer=None) -> dict | None:
    """One case's row of a submission, under the same rule as ``submission_case_rows``.

    None when the case was not predicted or has no released truth (no row is stored for it).
    """
    found = CaseResult.objects.filter(submission=submission, case=case).values_list("split", "data").first()
    if found is None:
        return None
    split, data = found
    visible = case_truth_visible(benchmark=submission.benchmark, round_=submission.round, split=split, viewer=viewer)
    return _shown_row(submission, split, data, visible)


def round_case(round_: Round | None, case_id: str) -> Case | None:
    if round_ is None:
        return None
    return Case.objects.filter(round=round_, external_id=case_id).first()


def round_cases(benchmark: Benchmark, round_: Round | None, *, viewer=None) -> list[dict]:
    """A round's cases in order: ``external_id``, ``split`` as the viewer may see it (``split_label``)
    and the ``public`` attributes (never truth)."""
    if round_ is None:
        return []
    visible = _visible_splits(benchmark, round_, viewer)
    rows = Case.objects.filter(round=round_).order_by("position", "id").values("external_id", "split", "public")
    return [dict(r, split=split_label(r["split"], visible=visible[r["split"]])) for r in rows]


def training_rows(benchmark: Benchmark, round_: Round | None) -> list[dict]:
    """The labelled rows anyone may train on: the dev cases with their truth, as the kind lays them out."""
    if round_ is None:
        return []
    version = latest_truth_version(round_)
    if version is None:
        return []
    splits = [s for s in (Case.Split.DEV,)
              if case_truth_visible(benchmark=benchmark, round_=round_, split=s, viewer=None)]
    cases = round_caseset(round_).in_splits(splits)
    return benchmark.kind_impl.training_rows(cases, truth_for(version, splits=splits), benchmark.config)


def case_truth(benchmark: Benchmark, case: Case, *, viewer=None) -> dict | None:
    """A case's truth as the kind labels it (e.g. its measured values), when the viewer may see it; else None."""
    if not case_truth_visible(benchmark=benchmark, round_=case.round, split=case.split, viewer=viewer):
        return None
    version = latest_truth_version(case.round)
    truth = truth_for(version, case_ids=[case.pk]) if version is not None else None
    if truth is None or case.external_id not in truth.values:
        return None
    pure = round_caseset(case.round, case_ids=[case.pk])
    row = benchmark.kind_impl.training_rows(pure, truth, benchmark.config)[0]
    return {k: v for k, v in row.items() if k != "case_id" and k not in case.public}


def case_neighbours(case: Case) -> tuple[str | None, str | None]:
    """External ids of the cases before and after this one in its round's order."""
    same_round = Case.objects.filter(round_id=case.round_id)
    before = (same_round.filter(Q(position__lt=case.position) | Q(position=case.position, id__lt=case.id))
              .order_by("-position", "-id").values_list("external_id", flat=True).first())
    after = (same_round.filter(Q(position__gt=case.position) | Q(position=case.position, id__gt=case.id))
             .order_by("position", "id").values_list("external_id", flat=True).first())
    return before, after


def submissions_for(user, *, benchmark: Benchmark | None = None):
    qs = (Submission.objects.filter(user=user).select_related("benchmark", "entrant", "round")
          .order_by("-received_at", "-id"))
    if benchmark is not None:
        qs = qs.filter(benchmark=benchmark)
    return qs


def submissions_headline(submissions, *, viewer=None) -> dict[int, float | None]:
    """Public ranking-metric value per submission id, in one query, under ``submission_scores``'s rule
    (a score over fewer cases than the leaderboard's minimum is withheld while the truth is hidden)."""
    subs = list(submissions)
    if not subs:
        return {}
    public: dict[int, dict] = defaultdict(dict)
    for sub_id, metric, value in Score.objects.filter(submission__in=subs, split="public").values_list(
            "submission_id", "metric", "value"):
        public[sub_id][metric] = value
    out: dict[int, float | None] = {}
    for s in subs:
        shown = _scores_shown(s, {"public": public[s.pk]} if s.pk in public else {}, viewer)
        if "public" in shown:
            out[s.pk] = shown["public"].get(s.benchmark.kind_impl.ranking_metric)
    return out
