"""Reads that join models. Views and API views call the same ones.

The no-leak rule, ``case_truth_visible``, lives below them in
``services/visibility.py`` (the dry run asks it too), and which round is current
in ``services/rounds.py``; every read here that could show a case's truth asks it.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from allauth.account.models import EmailAddress
from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.http import Http404
from django.utils import timezone

from scoring.kinds.base import RoundKind
from scoring.metrics_uncertainty import rank_intervals, rank_ranges

from leaderboard.core.models import (
    Benchmark,
    Case,
    CaseResult,
    Entrant,
    LeaderboardRow,
    Round,
    RoundScore,
    Score,
    StandingRow,
    StandingsDocument,
    Submission,
    SubmissionArray,
    Team,
    TeamEvent,
    TeamInvite,
    TeamMembership,
    TruthVersion,
)
from leaderboard.core.services.casedata import (
    latest_truth_version,
    round_caseset,
    round_truth,
    round_universe,
    truth_for,
)

# Which rounds take uploads and which is current are the pages' reads too (re-exported).
from leaderboard.core.services.rounds import current_round as current_round
from leaderboard.core.services.rounds import leaderboard_round, round_counted
from leaderboard.core.services.rounds import rounds_open as rounds_open
from leaderboard.core.services.visibility import case_truth_visible

# How a case whose truth the viewer may not see yet is labelled: it ranks (public or
# private), and which of the two it is stays hidden with its truth.
HIDDEN_SPLIT_LABEL = "test"


def split_counts_hidden(*, benchmark: Benchmark, round_: Round | None, split: str, viewer=None) -> frozenset[str]:
    """The kind's metrics that count ``split``'s cases (``Kind.split_count_metrics``), when they must not be shown.

    Hidden while the split's truth is (``case_truth_visible``): an upload of a few ranked cases
    would learn from the counts which cases are public and which private.
    """
    if split not in Case.RANKED_SPLITS or case_truth_visible(benchmark=benchmark, round_=round_, split=split,
                                                              viewer=viewer):
        return frozenset()
    return frozenset(benchmark.kind_impl.split_count_metrics)


def split_label(split: str, *, visible: bool) -> str:
    """A case's split as a viewer may see it: ``dev``, or ``test`` for a ranked case whose truth is hidden."""
    return split if visible or split == Case.Split.DEV else HIDDEN_SPLIT_LABEL


def _visible_splits(benchmark: Benchmark, round_: Round | None, viewer) -> dict[str, bool]:
    return {split: case_truth_visible(benchmark=benchmark, round_=round_, split=split, viewer=viewer)
            for split in Case.Split.values}


DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
# Far past any board's last page; bounds the SQL offset (a 20-digit page number overflowed it: a 500).
MAX_PAGE = 1_000_000


def benchmarks_for(viewer) -> QuerySet:
    """The benchmarks ``viewer`` may see, the one rule every list and page uses: the published
    ones; staff see every benchmark."""
    qs = Benchmark.objects.all()
    return qs if getattr(viewer, "is_staff", False) else qs.filter(is_published=True)


def benchmark_for(viewer, slug: str) -> Benchmark:
    """The benchmark ``slug`` if ``viewer`` may see it (``benchmarks_for``); else Http404 naming the slug
    (the same words for one that does not exist and one not published: nothing is told of the latter)."""
    benchmark = benchmarks_for(viewer).filter(slug=slug).first()
    if benchmark is None:
        raise Http404(f"no benchmark {str(slug)[:80]!r}: GET /api/benchmarks/ lists them")
    return benchmark


def board_shareable_seconds(benchmark_id: int, slug: str, *, private: bool = False) -> float:
    """How long an answer built now about the benchmark's boards may be given to anyone: 0 unless anyone
    at all may see them (published, still named ``slug``, and with ``private`` its private split
    revealed); else until the next opening, deadline or resolution of one of its rounds (what a page
    says about taking submissions, and which metrics a board hides, change then), ``math.inf`` if none.
    Read fresh (two queries), after the caches read the benchmark's generation
    (``boardcache.public_store``)."""
    b = Benchmark.objects.filter(pk=benchmark_id, slug=slug, is_published=True).only("private_revealed_at").first()
    if b is None or (private and not b.private_revealed):
        return 0.0
    now = timezone.now()
    times = Round.objects.filter(benchmark_id=benchmark_id).values_list("opens_at", "closes_at", "resolves_at")
    upcoming = [at for row in times for at in row if at is not None and at > now]
    return (min(upcoming) - now).total_seconds() if upcoming else math.inf


def benchmarks_visible(viewer) -> list[Benchmark]:
    """The benchmark list: ``benchmarks_for`` with each board's entrant count."""
    return list(benchmarks_for(viewer).annotate(
        entrant_count=Count("rounds__leaderboard_rows__entrant", distinct=True,
                            filter=Q(rounds__leaderboard_rows__split="public")),
    ).order_by("title", "id"))


def viewer_entrants(viewer) -> QuerySet:
    """The ids of the entrants a viewer competes as: their own and those of the teams they are in, as a
    query (a subquery where it is used in another: "find me" costs no query more)."""
    if not getattr(viewer, "is_authenticated", False):
        return Entrant.objects.none().values_list("pk", flat=True)
    return Entrant.objects.filter(Q(owner=viewer, team__isnull=True) | Q(team__memberships__user=viewer)
                                  ).values_list("pk", flat=True)


def viewer_entrant_ids(viewer) -> set[int]:
    """``viewer_entrants`` as a set (the rows a board marks as the viewer's). Written out: it runs on
    every signed-in page view, and building it through the ORM cost more CPU than the query (issue 26)."""
    if not getattr(viewer, "is_authenticated", False):
        return set()
    with connection.cursor() as cursor:
        cursor.execute(VIEWER_ENTRANTS_SQL, {"user": viewer.pk})
        return {row[0] for row in cursor.fetchall()}


VIEWER_ENTRANTS_SQL = (  # viewer_entrant_ids; two index lookups (owner, membership's user) rather than one scan for an OR
    f"SELECT e.id FROM {Entrant._meta.db_table} e WHERE e.owner_id = %(user)s AND NOT EXISTS"
    f" (SELECT 1 FROM {Team._meta.db_table} t WHERE t.entrant_id = e.id) UNION SELECT t.entrant_id FROM"
    f" {Team._meta.db_table} t JOIN {TeamMembership._meta.db_table} m ON m.team_id = t.id WHERE m.user_id = %(user)s")


def email_addresses(user) -> list[dict]:
    """The account's email addresses: ``email``, ``verified``, ``primary`` (primary first)."""
    return list(EmailAddress.objects.filter(user=user).order_by("-primary", "id").values("email", "verified", "primary"))


# -- teams ---------------------------------------------------------------------------

def teams_of(benchmark: Benchmark) -> list[dict]:
    """The benchmark's teams with their members (two queries): ``id``, ``name``, ``members``
    (usernames, in joining order), ``created_at``."""
    teams = list(Team.objects.filter(benchmark=benchmark).select_related("entrant").order_by("entrant__name", "id"))
    members: dict[int, list[str]] = defaultdict(list)
    for team_id, username in (TeamMembership.objects.filter(team__benchmark=benchmark)
                              .order_by("joined_at", "id").values_list("team_id", "user__username")):
        members[team_id].append(username)
    return [{"id": t.pk, "name": t.entrant.name, "members": members[t.pk], "created_at": t.created_at,
             "benchmark": benchmark.slug} for t in teams]


def team_view(team: Team, *, viewer=None) -> dict:
    """One team: ``id``, ``name``, ``benchmark``, ``members``; for its members also ``invites``
    (pending) and ``events`` (the audit log, oldest first)."""
    members = list(TeamMembership.objects.filter(team=team).order_by("joined_at", "id")
                   .values_list("user__username", flat=True))
    out = {"id": team.pk, "name": team.entrant.name, "benchmark": team.benchmark.slug, "members": members,
           "created_at": team.created_at}
    if getattr(viewer, "is_authenticated", False) and (viewer.username in members or viewer.is_staff):
        out["invites"] = [{"id": i, "username": u, "created_at": at} for i, u, at in
                          TeamInvite.objects.filter(team=team, status=TeamInvite.Status.PENDING)
                          .order_by("created_at", "id").values_list("pk", "user__username", "created_at")]
        out["events"] = [{"kind": k, "user": u, "detail": d, "at": at} for k, u, d, at in
                         TeamEvent.objects.filter(team=team).order_by("at", "id")
                         .values_list("kind", "user__username", "detail", "at")]
    return out


def invites_for(user, *, benchmark: Benchmark | None = None) -> list[dict]:
    """A user's pending invites, newest first: ``id``, ``team``, ``team_id``, ``benchmark``, ``invited_by``."""
    qs = TeamInvite.objects.filter(user=user, status=TeamInvite.Status.PENDING)
    if benchmark is not None:
        qs = qs.filter(team__benchmark=benchmark)
    return [{"id": i, "team": name, "team_id": team_id, "benchmark": slug, "invited_by": by, "created_at": at}
            for i, name, team_id, slug, by, at in qs.order_by("-created_at", "-id").values_list(
                "pk", "team__entrant__name", "team_id", "team__benchmark__slug", "invited_by__username", "created_at")]


# -- boards: paged, ranks derived from the stored order key ------------------------

class BoardParamError(ValueError):
    """A bad ``page`` or ``page_size``; ``column`` names the parameter."""

    def __init__(self, column: str, message: str):
        self.column = column
        super().__init__(message)


def board_paging(params: Mapping[str, str]) -> tuple[int, int]:
    """``(page, page_size)`` from query parameters: page 1..1,000,000, page_size 1..1000 (default 100).

    A bad value raises BoardParamError naming it (the API's 400 and the pages' 400).
    """
    out = []
    for name, default, high in (("page", 1, MAX_PAGE), ("page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)):
        raw = params.get(name)
        if raw is None:
            out.append(default)
            continue
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise BoardParamError(name, f"{name} must be a whole number; got {raw[:40]!r}") from None
        if not 1 <= value <= high:
            raise BoardParamError(name, f"{name} must be between 1 and {high:,}; got {value:,}"[:200])
        out.append(value)
    return out[0], out[1]


# Every row's (low, high) for its rank range, one array each (``board_intervals``).
BoardIntervals = tuple[np.ndarray, np.ndarray]


@dataclass
class BoardPage:
    """One page of a board. ``rows`` carry ``rank`` (derived: offset + position)."""

    rows: list
    count: int
    page: int
    page_size: int
    # The whole board's intervals the rows' rank ranges were read from (``board_intervals``), for the
    # next page of the same read (``board_page(board=...)``); None where the page has no ranges.
    board: BoardIntervals | None = field(default=None, repr=False, compare=False)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.count / self.page_size))

    @property
    def next_page(self) -> int | None:
        return self.page + 1 if self.page * self.page_size < self.count else None

    @property
    def past_end(self) -> bool:
        """A page after the last of a board that has rows (an old link, a typed number): its table is
        empty, but the board is not."""
        return self.count > 0 and self.page > self.pages

    @property
    def previous_page(self) -> int | None:
        return self.page - 1 if self.page > 1 else None

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size

    def page_links(self, around: int = 2) -> list[int | None]:
        """Page numbers to link: first, last and a few around this one; None marks a gap."""
        wanted = {1, self.pages, *range(self.page - around, self.page + around + 1)}
        out: list[int | None] = []
        for n in sorted(p for p in wanted if 1 <= p <= self.pages):
            if out and out[-1] is not None and n > out[-1] + 1:
                out.append(None)
            out.append(n)
        return out


def board_page(qs: QuerySet, order: tuple[str, ...], *, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE,
               higher_is_better: bool | None = None, board: BoardIntervals | None = None) -> BoardPage:
    """A page of board rows in the board's order, each with its ``rank``. Three queries.

    Given the board's direction (``higher_is_better``, ``board_direction``), each row also gets its
    ``rank_range`` (``board_rank_ranges``), from a read of the whole board's scores and intervals that
    stands in for the count: still three queries. ``board``: that read, from an earlier page of the
    same board (``BoardPage.board``), so a reader of every page (the CSV, a record) makes it once.
    """
    if board is None and higher_is_better is not None:
        board = board_intervals(qs)
    count = len(board[0]) if board is not None else qs.count()
    offset = (page - 1) * page_size
    rows = []
    if offset < count:
        # The page's ids come from the order index alone (an index-only scan); then only
        # those rows are read and joined to their entrant and submission (joining every
        # skipped row costs more than the page itself).
        page_ids = list(qs.order_by(*order).values_list("pk", flat=True)[offset:offset + page_size])
        by_id = {row.pk: row for row in qs.filter(pk__in=page_ids)}
        rows = [by_id[pk] for pk in page_ids if pk in by_id]
    for i, row in enumerate(rows):
        row.rank = offset + i + 1
    if board is not None and higher_is_better is not None:
        board_rank_ranges(rows, board, higher_is_better=higher_is_better)
    return BoardPage(rows=rows, count=count, page=page, page_size=page_size, board=board)


def board_direction(benchmark: Benchmark) -> bool:
    """Whether a higher value of the benchmark's ranking metric ranks first (every board of it
    ranks by that metric: a static board's splits, a round's board, the standings)."""
    kind = benchmark.kind_impl
    return kind.metric(kind.ranking_metric_for(benchmark.config)).higher_is_better


def board_intervals(qs: QuerySet) -> BoardIntervals:
    """The intervals every row of one board (``qs``: its rows) holds for its rank range
    (``scoring.metrics_uncertainty.rank_intervals``), in one query whatever the board's size."""
    columns = qs.order_by().values_list("score", "interval_low", "interval_high")
    if connection.vendor == "postgresql":
        # Three arrays, not a tuple per row: 10,000 row tuples set off Python's cyclic garbage
        # collector, a full pass over the process's heap (60 ms, one read in ten at 10,000 rows).
        # One scan feeds the three aggregates: element i of each array is the same row.
        sql, params = columns.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SELECT array_agg(b.score), array_agg(b.interval_low), array_agg(b.interval_high) "
                           f"FROM ({sql}) b", params)
            found = cursor.fetchone()
        values = [found[i] or [] for i in range(3)] if found else [[], [], []]
    else:
        values = [list(column) for column in zip(*columns)] or [[], [], []]
    scores, lows, highs = (np.array(column, dtype=np.float64) for column in values)
    return rank_intervals(scores, lows, highs)


def board_rank_ranges(rows, board: BoardIntervals, *, higher_is_better: bool) -> None:
    """Set each row's ``rank_range``, ``[best, worst]`` (None for a row without a score): the ranks it
    could hold within the intervals of every row of its board (``board``: ``board_intervals``).

    Derived when the board is read, like the rank, from the rows' scores and intervals alone: a
    scored upload writes only its own entrant's row, never the ranges of the rows it moves.
    Every board, API answer, page, CSV and record gets its ranges here.
    """
    lo, hi = rank_intervals([r.score for r in rows], [r.interval_low for r in rows],
                            [r.interval_high for r in rows])
    best, worst = rank_ranges(lo, hi, higher_is_better=higher_is_better, board=board)
    for i, row in enumerate(rows):
        row.rank_range = [int(best[i]), int(worst[i])] if np.isfinite(lo[i]) else None


def board_rank(qs: QuerySet, order: tuple[str, ...], row) -> int:
    """1 + the number of rows ordered before ``row`` (one index range count)."""
    before = Q()
    equal: dict = {}
    for name in order:
        value = getattr(row, name)
        before |= Q(**equal, **{f"{name}__lt": value})
        equal[name] = value
    return qs.filter(before).count() + 1


def board_find(qs: QuerySet, order: tuple[str, ...], *, entrant_ids, page_size: int = DEFAULT_PAGE_SIZE):
    """The best-ranked row of any of ``entrant_ids`` on a board: ``(rank, page)``, or None."""
    mine = qs.filter(entrant_id__in=entrant_ids).order_by(*order).first()
    if mine is None:
        return None
    rank = board_rank(qs, order, mine)
    return rank, (rank - 1) // page_size + 1


def leaderboard_queryset(round_: Round | None, split: str) -> QuerySet:
    if round_ is None:
        return LeaderboardRow.objects.none()
    # Only what a board shows: a submission row also carries its payload, which can be large.
    return (LeaderboardRow.objects.filter(round=round_, split=split).select_related("entrant", "submission")
            .only(*(f.name for f in LeaderboardRow._meta.concrete_fields if f.name != "round"), "round_id",
                  "entrant__name", "entrant__description", "entrant__owner_id",
                  "submission__audit_hash", "submission__received_at"))


def private_visible(benchmark: Benchmark, viewer) -> bool:
    return benchmark.private_revealed or getattr(viewer, "is_staff", False)


def leaderboard_page(benchmark: Benchmark, *, split: str = "public", viewer=None, round_: Round | None = None,
                     page: int = 1, page_size: int = DEFAULT_PAGE_SIZE,
                     board: BoardIntervals | None = None) -> BoardPage:
    """A page of precomputed rows, ranked, with entrant and submission loaded (two queries).

    The private split is only returned once revealed, or to staff. While the split's truth is
    hidden, the rows' metrics leave out those counting its cases (``split_counts_hidden``; the
    same for every viewer, as the page is cached for all).
    """
    if split != "public" and not private_visible(benchmark, viewer):
        return BoardPage([], 0, page, page_size)
    round_ = round_ or leaderboard_round(benchmark)
    out = board_page(leaderboard_queryset(round_, split), LeaderboardRow.BOARD_ORDER, page=page, page_size=page_size,
                     higher_is_better=board_direction(benchmark), board=board)
    hidden = split_counts_hidden(benchmark=benchmark, round_=round_, split=split)
    for row in out.rows if hidden else ():
        row.metrics = {name: value for name, value in row.metrics.items() if name not in hidden}
    return out


def leaderboard_rows(benchmark: Benchmark, *, split: str = "public", viewer=None, round_: Round | None = None):
    """Every row of a board, ranked (tests and small boards; pages use ``leaderboard_page``)."""
    return leaderboard_page(benchmark, split=split, viewer=viewer, round_=round_, page=1,
                            page_size=10**9).rows


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
        hidden = split_counts_hidden(benchmark=benchmark, round_=submission.round, split=split, viewer=viewer)
        shown[split] = {name: value for name, value in metrics.items() if name not in hidden}
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
        if submission.late:
            reason = "it was received after the deadline (late): late submissions are scored but never ranked"
        elif predicted == {Case.Split.DEV}:
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
    """The user's uploads and their teams' (every member sees the team's), newest first."""
    qs = (Submission.objects.of_participant(user).select_related("benchmark", "entrant", "round", "user")
          .order_by("-received_at", "-id"))
    if benchmark is not None:
        qs = qs.filter(benchmark=benchmark)
    return qs


@dataclass
class ListedSubmission:
    """A row of ``submissions_page``: the submission with what its JSON shows, read for the whole page at once.

    ``scores`` (static kinds: split -> metric -> value, under ``submission_scores``'s rule) or
    ``history`` (round kinds: ``submission_round_scores``)."""

    submission: Submission
    scores: dict[str, dict[str, float | None]]
    history: list[dict]


def submissions_page(user, *, benchmark: Benchmark, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE) -> BoardPage:
    """A page of the user's (and their teams') submissions to ``benchmark``, newest first: ``rows`` are
    ``ListedSubmission``. Three queries whatever the page size: the count, the page, and its scores."""
    qs = submissions_for(user, benchmark=benchmark).select_related("truth_version")
    count = qs.count()
    subs = list(qs[(page - 1) * page_size:page * page_size])
    ids = [s.pk for s in subs]
    history: dict[int, list[dict]] = defaultdict(list)
    raw: dict[int, dict[str, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    if not ids:
        pass
    elif benchmark.kind_impl.is_round_kind:
        for sub_id, v, as_of, final, metrics in (
                RoundScore.objects.filter(submission_id__in=ids).order_by("submission_id", "truth_version__version", "id")
                .values_list("submission_id", "truth_version__version", "truth_version__as_of",
                             "truth_version__is_final", "metrics")):
            history[sub_id].append({"version": v, "as_of": as_of, "interim": not final, "metrics": metrics})
    else:
        for sub_id, split, metric, value in (Score.objects.filter(submission_id__in=ids)
                                             .values_list("submission_id", "split", "metric", "value")):
            raw[sub_id][split][metric] = value
    rows = [ListedSubmission(s, _scores_shown(s, {k: dict(v) for k, v in raw[s.pk].items()}, user) if s.pk in raw
                             else {}, history.get(s.pk, [])) for s in subs]
    return BoardPage(rows=rows, count=count, page=page, page_size=page_size)


def submissions_headline(submissions, *, viewer=None) -> dict[int, float | None]:
    """Public ranking-metric value per submission id, in one query, under ``submission_scores``'s rule
    (a score over fewer cases than the leaderboard's minimum is withheld while the truth is hidden)."""
    subs = list(submissions)
    if not subs:
        return {}
    out: dict[int, float | None] = {}
    rounds: dict[int, str] = {}
    static: list[Submission] = []
    for s in subs:
        kind = s.benchmark.kind_impl
        if kind.is_round_kind:  # the latest scored truth version's value
            rounds[s.pk] = kind.ranking_metric_for(s.benchmark.config)
        else:
            static.append(s)
    if rounds:
        for sub_id, metrics in (RoundScore.objects.filter(submission_id__in=list(rounds))
                                .order_by("submission_id", "truth_version__version")
                                .values_list("submission_id", "metrics")):
            out[sub_id] = metrics.get(rounds[sub_id])
    if not static:
        return out
    public: dict[int, dict] = defaultdict(dict)
    for sub_id, metric, value in Score.objects.filter(submission__in=static, split="public").values_list(
            "submission_id", "metric", "value"):
        public[sub_id][metric] = value
    for s in static:
        shown = _scores_shown(s, {"public": public[s.pk]} if s.pk in public else {}, viewer)
        if "public" in shown:
            out[s.pk] = shown["public"].get(s.benchmark.kind_impl.ranking_metric_for(s.benchmark.config))
    return out


# -- rounds of round kinds ---------------------------------------------------------

def rounds_of(benchmark: Benchmark) -> list[Round]:
    """Every round of a benchmark, newest first, with its submission count (one query)."""
    return list(Round.objects.filter(benchmark=benchmark)
                .annotate(submission_count=Count("submissions", filter=Q(submissions__is_repeat=False)))
                .order_by("-number", "-id"))


def round_of(benchmark: Benchmark, number: int) -> Round | None:
    return (Round.objects.filter(benchmark=benchmark, number=number)
            .annotate(submission_count=Count("submissions", filter=Q(submissions__is_repeat=False))).first())


def round_truth_versions(round_: Round) -> list:
    return list(TruthVersion.objects.filter(round=round_).order_by("version"))


def round_audit(round_: Round) -> list[dict] | None:
    """After close, the frozen submissions: entrant, audit hash, received_at (None while open)."""
    if round_.status == Round.Status.OPEN:
        return None
    return [{"entrant": name, "audit_hash": audit_hash, "received_at": at}
            for name, audit_hash, at in Submission.objects.filter(round=round_, is_counted=True)
            .order_by("entrant__name", "id").values_list("entrant__name", "audit_hash", "received_at")]


def round_committed(round_: Round) -> list[dict] | None:
    """After close, what the round's commitment covers (a static benchmark's: every upload taken
    while it was open, not late): entrant, audit hash, received_at; None while open or uncommitted."""
    if round_.status == Round.Status.OPEN or not round_.commitment:
        return None
    return [{"entrant": name, "audit_hash": audit_hash, "received_at": at}
            for name, audit_hash, at in round_counted(round_).order_by("entrant__name", "audit_hash", "id")
            .values_list("entrant__name", "audit_hash", "received_at")]


def round_truth_visible(round_: Round, viewer) -> bool:
    """Whether per-id truth of a round of a round kind (debug tables) may be shown to ``viewer``:
    the one no-leak rule (``case_truth_visible``) for the round's universe, whose ids rank."""
    return case_truth_visible(benchmark=round_.benchmark, round_=round_, split=Case.Split.PUBLIC, viewer=viewer)


def _ranks_withheld(round_: Round) -> bool:
    """A kind whose provisional boards do not rank (portfolio) withholds rank until the final truth."""
    return (not round_.benchmark.kind_impl.ranks_provisional
            and LeaderboardRow.objects.filter(round=round_, split="public", provisional=True).exists())


def round_board_page(round_: Round, *, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE,
                     ranges: bool = True, board: BoardIntervals | None = None) -> BoardPage:
    """A page of the round's board; ``rank`` is None on provisional rows of a kind that withholds it.
    ``ranges`` False: the rows without their ``rank_range`` (a chart's top entrants)."""
    out = board_page(leaderboard_queryset(round_, "public"), LeaderboardRow.BOARD_ORDER, page=page,
                     page_size=page_size, higher_is_better=board_direction(round_.benchmark) if ranges else None,
                     board=board)
    if not round_.benchmark.kind_impl.ranks_provisional:
        for row in out.rows:
            if row.provisional:
                row.rank = None
    return out


def round_board_find(round_: Round, viewer, *, page_size: int = DEFAULT_PAGE_SIZE):
    if not getattr(viewer, "is_authenticated", False) or _ranks_withheld(round_):
        return None
    return board_find(leaderboard_queryset(round_, "public"), LeaderboardRow.BOARD_ORDER,
                      entrant_ids=viewer_entrants(viewer), page_size=page_size)


def standings_queryset(benchmark: Benchmark, track: str = "") -> QuerySet:
    return (StandingRow.objects.filter(benchmark=benchmark, track=track)
            .select_related("entrant").only(*(f.name for f in StandingRow._meta.concrete_fields
                                              if f.name not in ("benchmark", "entrant")),
                                            "benchmark_id", "entrant_id", "entrant__name", "entrant__description",
                                            "entrant__owner_id"))


def standings_page(benchmark: Benchmark, *, track: str = "", page: int = 1,
                   page_size: int = DEFAULT_PAGE_SIZE, board: BoardIntervals | None = None) -> BoardPage:
    return board_page(standings_queryset(benchmark, track), StandingRow.BOARD_ORDER, page=page, page_size=page_size,
                      higher_is_better=board_direction(benchmark), board=board)


def round_history(round_: Round, *, entrant_names: list[str] | None = None) -> list[dict]:
    """Every counted submission's scores per truth version, oldest version first:
    ``[{"entrant", "points": [{"version", "as_of", "interim", "metrics"}]}]``, entrants by name."""
    qs = RoundScore.objects.filter(submission__round=round_, submission__is_counted=True)
    if entrant_names is not None:
        qs = qs.filter(submission__entrant__name__in=entrant_names)
    by_entrant: dict[str, list[dict]] = defaultdict(list)
    for name, version, as_of, final, metrics in qs.order_by("submission__entrant__name", "truth_version__version",
                                                            "id").values_list(
            "submission__entrant__name", "truth_version__version", "truth_version__as_of",
            "truth_version__is_final", "metrics"):
        by_entrant[name].append({"version": version, "as_of": as_of, "interim": not final, "metrics": metrics})
    return [{"entrant": name, "points": points} for name, points in by_entrant.items()]


def submission_round_scores(submission: Submission) -> list[dict]:
    """A round submission's scores per truth version, oldest first: version, as_of, interim, metrics."""
    return [{"version": v, "as_of": as_of, "interim": not final, "metrics": metrics}
            for v, as_of, final, metrics in RoundScore.objects.filter(submission=submission)
            .order_by("truth_version__version", "id")
            .values_list("truth_version__version", "truth_version__as_of", "truth_version__is_final", "metrics")]


def round_submission_case_rows(submission: Submission, *, viewer=None) -> list[dict] | None:
    """The per-id debug table of a round submission, computed now from its stored array and the
    round's latest truth version; None while the viewer may not see the round's truth."""
    round_ = submission.round
    if not round_truth_visible(round_, viewer):
        return None
    version = (TruthVersion.objects.filter(round=round_, scored_at__isnull=False)
               .select_related("round__benchmark").order_by("-is_final", "-version").first())
    array = SubmissionArray.objects.filter(submission=submission).first()
    if version is None or array is None:
        return None
    universe = round_universe(round_, columns=True)  # the universe's numbers (start prices) feed some tables
    values = np.frombuffer(bytes(array.data), dtype=np.float64).reshape(array.rows, len(array.columns))
    kind = submission.benchmark.kind_impl
    return kind.round_case_rows(values, universe=universe, truth=round_truth(version, universe),
                                config=submission.benchmark.config)


def round_frozen(round_: Round) -> list[dict]:
    """After close, the round's counted submissions and consistency runs with their stored values:
    ``entrant``, ``audit_hash``, ``received_at``, ``repeat``, ``values`` (ids x columns) and ``meta``;
    empty while the round is open (no one sees another's upload before the close)."""
    if round_.status == Round.Status.OPEN:
        return []
    out = []
    for name, audit_hash, at, repeat, payload, rows, columns, data in (
            Submission.objects.filter(round=round_).filter(Q(is_counted=True) | Q(is_repeat=True))
            .order_by("entrant__name", "received_at", "id")
            .values_list("entrant__name", "audit_hash", "received_at", "is_repeat", "payload", "array__rows",
                         "array__columns", "array__data")):
        if data is None:
            continue
        values = np.frombuffer(bytes(data), dtype=np.float64).reshape(rows, len(columns))
        out.append({"entrant": name, "audit_hash": audit_hash, "received_at": at, "repeat": repeat,
                    "values": values, "meta": (payload or {}).get("meta", {})})
    return out


def round_public(round_: Round) -> dict | None:
    """What the round's kind shows beyond the board (start prices, frozen portfolios...), or None."""
    kind = round_.benchmark.kind_impl
    if type(kind).round_public is RoundKind.round_public:  # the kind shows nothing more: load nothing
        return None
    return kind.round_public(round_universe(round_, columns=True), round_frozen(round_), round_.benchmark.config)


def comparison_sets_view(benchmark: Benchmark, *, track: str, page: int = 1,
                         page_size: int | None = DEFAULT_PAGE_SIZE) -> dict:
    """A track's comparison sets as stored by the last standings refresh, entrant names resolved:
    ``sets`` (``members``, ``joined``, ``rounds``, ``oracle_sum``, ``count``, ``rows`` of this page:
    ``rank``, ``entrant``, ``score``, ``return_sum``, ``oracle_sum``), ``history`` (every entrant's
    all-available rounds: context, not the ranking), ``has_next`` and ``updated_at``. ``page_size``
    None: every row of every set."""
    doc = StandingsDocument.objects.filter(benchmark=benchmark, track=track, name="comparison_sets").first()
    data = doc.data if doc is not None else {}
    sets, history = data.get("sets", []), data.get("history", [])
    ids = {e for s in sets for e in s["members"]} | {h["entrant"] for h in history}
    names = dict(Entrant.objects.filter(pk__in=ids).values_list("pk", "name"))
    if page_size is None:
        page, page_size = 1, max((len(s["rows"]) for s in sets), default=0) or 1
    offset = (page - 1) * page_size
    out_sets = []
    for s in sets:
        out_sets.append({
            "members": [names.get(e, str(e)) for e in s["members"]],
            "joined": [names.get(e, str(e)) for e in s["joined"]],
            "rounds": s["rounds"], "oracle_sum": s["oracle_sum"], "count": len(s["rows"]),
            "rows": [{**row, "entrant": names.get(row["entrant"], str(row["entrant"]))}
                     for row in s["rows"][offset:offset + page_size]],
        })
    return {
        "track": track, "updated_at": doc.updated_at if doc is not None else None, "sets": out_sets,
        "history": [{**h, "entrant": names.get(h["entrant"], str(h["entrant"]))} for h in history],
        "has_next": any(len(s["rows"]) > offset + page_size for s in sets),
    }
