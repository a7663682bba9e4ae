"""Teams (Kaggle's rules): per benchmark a user competes alone or in exactly one team.

The team's entrant, named as the team, is what boards, round pages, standings, stakes and
comparison sets show; members share one daily limit (``quota_consume(team=...)``). Joining
after uploading alone merges: it is allowed only while the merged count of accepted uploads
does not exceed ``daily_limit x days`` since the merged team's first upload (today
included); the joiner's uploads in rounds still open move to the team, and their uploads
today count against the team's limit. Every change is a ``TeamEvent``.

Races: a user's uploads and their joining or leaving queue on the user's row
(``team_upload_lock``), a team's size on the team's row, and the unique
(user, benchmark) constraint of ``TeamMembership`` keeps a user in one team per benchmark
whatever else happens at the same moment.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Min
from django.utils import timezone

from scoring.errors import RowError

from leaderboard.core.models import Benchmark, Entrant, Round, Submission, Team, TeamEvent, TeamInvite, TeamMembership
from leaderboard.core.quota import day_start, quota_add, quota_used, utc_day
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.entrants import entrant_create
from leaderboard.core.services.leaderboards import leaderboard_refresh_entrant
from leaderboard.core.services.rounds import round_takes_submissions

Invite = TeamInvite.Status


def _refused(message: str, status: int = 409, column: str | None = None) -> SubmissionRejected:
    return SubmissionRejected([RowError(message, column=column)], status=status)


def _lock_user(user_id: int) -> None:
    """Queue on the user's row (NO KEY UPDATE: foreign-key checks never wait on it)."""
    get_user_model().objects.select_for_update(no_key=True).filter(pk=user_id).values_list("pk", flat=True).first()


def team_upload_lock(*, user, benchmark: Benchmark, entrant: Entrant) -> Team | None:
    """Inside an upload's transaction: hold the user's row (joining and leaving take it too) and
    check that the entrant the upload resolved to is still the right one. Returns the team whose
    daily limit the upload takes, or None (the user's own)."""
    _lock_user(user.pk)
    membership = (TeamMembership.objects.select_related("team__entrant")
                  .filter(user=user, benchmark=benchmark).first())
    team = membership.team if membership is not None else None
    if (team.entrant_id if team else None) != (entrant.pk if Team.objects.filter(entrant=entrant).exists() else None):
        now = f"in team {team.entrant.name}" if team else "alone"
        raise _refused(f"your team changed while this upload was on its way (you now compete {now}); send it again")
    return team


def merge_allowance(*, daily_limit: int, first_day: dt.date, today: dt.date) -> tuple[int, int]:
    """Kaggle's merge rule: ``(days, allowance)``, days counted from ``first_day`` to ``today``, both included."""
    days = (today - first_day).days + 1
    return days, daily_limit * days


@dataclass
class MergeCheck:
    team_count: int
    own_count: int
    first_day: dt.date | None
    days: int
    allowance: int

    @property
    def total(self) -> int:
        return self.team_count + self.own_count

    @property
    def allowed(self) -> bool:
        return self.own_count == 0 or self.total <= self.allowance

    def arithmetic(self, team_name: str, limit: int) -> str:
        return (f"your {self.own_count} accepted upload{'s' if self.own_count != 1 else ''} alone plus team "
                f"{team_name}'s {self.team_count} make {self.total}; the allowance is the daily limit {limit} x "
                f"{self.days} day{'s' if self.days != 1 else ''} since the merged team's first upload on "
                f"{self.first_day:%Y-%m-%d} (today included) = {self.allowance}")


def _alone(user, benchmark: Benchmark):
    """The user's accepted uploads to ``benchmark`` as one of their own entrants."""
    return Submission.objects.filter(benchmark=benchmark, user=user, entrant__team__isnull=True,
                                     counts_against_limit=True)


def merge_check(*, team: Team, user, today: dt.date | None = None) -> MergeCheck:
    benchmark = team.benchmark
    today = today or utc_day()
    own = _alone(user, benchmark).aggregate(n=Min("received_at"))["n"]
    own_count = _alone(user, benchmark).count()
    team_subs = Submission.objects.filter(entrant=team.entrant, counts_against_limit=True)
    team_count = team_subs.count()
    firsts = [at for at in (own, team_subs.aggregate(n=Min("received_at"))["n"]) if at is not None]
    if not firsts:
        return MergeCheck(team_count, own_count, None, 0, 0)
    first_day = utc_day(min(firsts))
    days, allowance = merge_allowance(daily_limit=benchmark.daily_limit, first_day=first_day, today=today)
    return MergeCheck(team_count, own_count, first_day, days, allowance)


def _deadline_refusal(benchmark: Benchmark, what: str) -> None:
    deadline = benchmark.team_merge_deadline
    if deadline is not None and timezone.now() >= deadline:
        raise _refused(f"{what}: the team merge deadline of {benchmark.slug} passed at {deadline:%Y-%m-%d %H:%M} UTC")


def _event(team: Team, user, kind: str, detail: str = "") -> None:
    TeamEvent.objects.create(team=team, user=user, kind=kind, detail=detail)


def _join(*, team: Team, user, how: str) -> MergeCheck:
    """Add ``user`` to ``team`` (their row and the team's are locked by the caller): the merge rule,
    the membership (the unique constraint decides a race), their uploads in open rounds, today's count."""
    benchmark = team.benchmark
    other = TeamMembership.objects.select_related("team__entrant").filter(user=user, benchmark=benchmark).first()
    if other is not None:
        raise _refused(f"{user.username} is already in team {other.team.entrant.name} on {benchmark.slug}; "
                       "leave it first")
    today = utc_day()
    # Uploads they made today for this very team (before leaving it and joining again) are on the
    # team's count already: what they bring along below is their count today less those.
    start = day_start(today)
    counted = Submission.objects.filter(benchmark=benchmark, user=user, entrant=team.entrant,
                                        received_at__gte=start, counts_against_limit=True).count()
    check = merge_check(team=team, user=user)
    if not check.allowed:
        raise _refused(f"joining would break the merge rule: {check.arithmetic(team.entrant.name, benchmark.daily_limit)}")
    try:
        with transaction.atomic():
            TeamMembership.objects.create(team=team, user=user, benchmark=benchmark)
    except IntegrityError:
        raise _refused(f"{user.username} is already in a team on {benchmark.slug}") from None
    _event(team, user, TeamEvent.Kind.JOINED, how)
    # In a team now, they can accept no other team's invite on this benchmark: those are closed
    # (declined, as deleting an account does), each team's log saying why; they may be invited again later.
    for other_invite in (TeamInvite.objects.select_related("team").filter(
            user=user, status=Invite.PENDING, team__benchmark=benchmark).exclude(team=team)):
        TeamInvite.objects.filter(pk=other_invite.pk).update(status=Invite.DECLINED, answered_at=timezone.now())
        _event(other_invite.team, user, TeamEvent.Kind.DECLINED,
               f"{user.username}'s invite closed: they joined team {team.entrant.name}")
    if check.own_count:
        moved = _move_uploads(team=team, user=user)
        _event(team, user, TeamEvent.Kind.MERGED,
               f"merged {user.username}'s uploads alone: {check.arithmetic(team.entrant.name, benchmark.daily_limit)}"
               f"; {moved} upload{'s' if moved != 1 else ''} in rounds still open moved to the team")
    quota_add(benchmark=benchmark, day=today, team_id=team.pk,
              used=quota_used(benchmark=benchmark, day=today, user_id=user.pk) - counted)
    return check


def _move_uploads(*, team: Team, user) -> int:
    """The joiner's uploads alone in rounds still open become the team's (closed rounds keep them).
    Round kinds: when the team already has a counted upload in a round, the joiner's stops counting."""
    benchmark = team.benchmark
    now = timezone.now()
    moved = 0
    rounds = Round.objects.filter(pk__in=_alone(user, benchmark).values("round_id")).order_by("number", "id")
    for round_ in rounds:
        if not round_takes_submissions(round_):
            continue
        mine = Submission.objects.filter(round=round_, user=user, entrant__team__isnull=True)
        old_entrants = set(mine.values_list("entrant_id", flat=True))
        if Submission.objects.filter(round=round_, entrant=team.entrant, is_counted=True).exists():
            mine.filter(is_counted=True).update(
                is_counted=False, replaced_at=now,
                status_reason=f"replaced: its entrant joined team {team.entrant.name}, whose upload counts")
        else:
            # One counted upload per entrant and round: the joiner's latest counted one stays counted.
            latest = mine.filter(is_counted=True).order_by("-received_at", "-id").values_list("pk", flat=True).first()
            mine.filter(is_counted=True).exclude(pk=latest or 0).update(
                is_counted=False, replaced_at=now, status_reason=f"replaced when joining team {team.entrant.name}")
        mine.filter(is_selected=True).update(is_selected=False)  # the team's own selection stands
        moved += mine.update(entrant=team.entrant)
        if not benchmark.kind_impl.is_round_kind:
            for entrant_id in sorted(old_entrants | {team.entrant_id}):
                leaderboard_refresh_entrant(round_, entrant_id)
    return moved


def team_create(*, user, benchmark: Benchmark, name: str) -> Team:
    """A new team on ``benchmark`` whose first member is ``user``: 409 when they are in a team there
    already or the name is taken, or past the merge deadline. Uploads they made alone merge into it."""
    _deadline_refusal(benchmark, "no new team can form")
    if TeamMembership.objects.filter(user=user, benchmark=benchmark).exists():
        raise _refused(f"you are already in a team on {benchmark.slug}; leave it to create another")
    with transaction.atomic():
        _lock_user(user.pk)
        entrant = entrant_create(owner=user, name=name, description=f"Team on {benchmark.title}")
        team = Team.objects.create(benchmark=benchmark, entrant=entrant, created_by=user)
        _event(team, user, TeamEvent.Kind.CREATED, f"created by {user.username}")
        _join(team=team, user=user, how="created the team")
    return team


def _is_member(team: Team, user) -> bool:
    return TeamMembership.objects.filter(team=team, user=user).exists()


def team_invite(*, team: Team, by, username: str) -> TeamInvite:
    """Invite ``username`` (members only). Refused past the deadline, for a full team, and for a user
    already in this or another team of the benchmark. Inviting again returns the pending invite."""
    if not _is_member(team, by):
        raise _refused("only the team's members may invite", status=403)
    username = (username or "").strip()
    if not username:
        raise _refused("name the user to invite", status=400, column="username")
    benchmark = team.benchmark
    _deadline_refusal(benchmark, "no one can join a team any more")
    invitee = get_user_model().objects.filter(username=username, is_active=True).first()
    if invitee is None:
        raise _refused(f"no user is called {username!r}", status=404, column="username")
    _size_refusal(team)
    other = TeamMembership.objects.select_related("team__entrant").filter(user=invitee, benchmark=benchmark).first()
    if other is not None:
        where = "this team" if other.team_id == team.pk else f"team {other.team.entrant.name}"
        raise _refused(f"{username} is already in {where} on {benchmark.slug}")
    try:
        with transaction.atomic():
            invite = TeamInvite.objects.create(team=team, user=invitee, invited_by=by)
            _event(team, by, TeamEvent.Kind.INVITED, f"{by.username} invited {username}")
    except IntegrityError:  # a pending invite exists: sending it again changes nothing
        invite = TeamInvite.objects.get(team=team, user=invitee, status=Invite.PENDING)
    return invite


def _size_refusal(team: Team) -> None:
    limit = team.benchmark.team_size_max
    if limit is not None:
        members = TeamMembership.objects.filter(team=team).count()
        if members >= limit:
            raise _refused(f"team {team.entrant.name} is full: {members} of at most {limit} members "
                           f"(team_size_max of {team.benchmark.slug})")


def _pending(invite_id: int, user, *, accepting: bool = False) -> TeamInvite:
    invite = (TeamInvite.objects.select_related("team__entrant", "team__benchmark")
              .select_for_update(of=("self",)).filter(pk=invite_id).first())
    if invite is None or invite.user_id != user.pk:
        raise _refused("no such invite of yours", status=404)
    if invite.status != Invite.PENDING:
        other = (TeamMembership.objects.select_related("team__entrant")
                 .filter(user=user, benchmark_id=invite.team.benchmark_id).exclude(team=invite.team).first()
                 if accepting and invite.status == Invite.DECLINED else None)
        if other is not None:  # closed when they joined it
            raise _refused(f"{user.username} is already in team {other.team.entrant.name} on "
                           f"{invite.team.benchmark.slug}; leave it first")
        raise _refused(f"this invite was {invite.status} already")
    return invite


def invite_accept(*, invite_id: int, user) -> Team:
    """Join the invite's team. 409 with the reason: past the merge deadline, the team is full, the
    user is in another team of the benchmark, or the merge rule (with its arithmetic)."""
    with transaction.atomic():
        _lock_user(user.pk)
        invite = _pending(invite_id, user, accepting=True)
        # The team's row alone, NO KEY UPDATE: joins of one team queue here, while foreign-key checks (another
        # join's events on this team, its memberships) never wait on it, nor on the entrant or benchmark rows
        # a plain FOR UPDATE over the join would hold (two joins at once deadlocked on those).
        team = (Team.objects.select_for_update(of=("self",), no_key=True).select_related("entrant", "benchmark")
                .get(pk=invite.team_id))
        _deadline_refusal(team.benchmark, "no one can join a team any more")
        _size_refusal(team)
        inviter = invite.invited_by.username if invite.invited_by else "a member"
        _join(team=team, user=user, how=f"accepted {inviter}'s invite")
        TeamInvite.objects.filter(pk=invite.pk).update(status=Invite.ACCEPTED, answered_at=timezone.now())
    return team


def invite_decline(*, invite_id: int, user) -> None:
    with transaction.atomic():
        invite = _pending(invite_id, user)
        TeamInvite.objects.filter(pk=invite.pk).update(status=Invite.DECLINED, answered_at=timezone.now())
        _event(invite.team, user, TeamEvent.Kind.DECLINED, f"{user.username} declined the invite")


def team_leave(*, team: Team, user) -> None:
    """Leave ``team``: from now on the user competes alone on its benchmark. The team keeps its uploads,
    and every upload the user made today (for the team too) counts against their own limit today."""
    with transaction.atomic():
        _lock_user(user.pk)
        deleted, _ = TeamMembership.objects.filter(team=team, user=user).delete()
        if not deleted:
            raise _refused(f"you are not in team {team.entrant.name}", status=404)
        today = utc_day()
        start = day_start(today)
        # Every upload the user made today on this benchmark, alone or for the team, counts on their own row.
        made = Submission.objects.filter(benchmark=team.benchmark, user=user, received_at__gte=start,
                                         counts_against_limit=True).count()
        own = quota_used(benchmark=team.benchmark, day=today, user_id=user.pk)
        quota_add(benchmark=team.benchmark, day=today, user_id=user.pk, used=made - own)
        _event(team, user, TeamEvent.Kind.LEFT, f"{user.username} left")


def teams_leave_all(user) -> None:
    """Take ``user`` out of every team (their account is being deleted)."""
    for team in Team.objects.filter(memberships__user=user).select_related("entrant", "benchmark"):
        team_leave(team=team, user=user)
    TeamInvite.objects.filter(user=user, status=Invite.PENDING).update(status=Invite.DECLINED,
                                                                      answered_at=timezone.now())
