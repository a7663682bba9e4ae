"""Rounds: the one place a round's status changes."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from scoring.errors import RowError

from leaderboard.core.models import Round, TruthVersion
from leaderboard.core.services.submissions import SubmissionRejected

# Allowed moves: a round opens, closes (no more submissions; what was submitted
# is frozen), and resolves once its final truth is in. Reopening a closed round
# is allowed (an organiser's mistake); a resolved round stays resolved.
_MOVES = {
    Round.Status.OPEN: {Round.Status.CLOSED},
    Round.Status.CLOSED: {Round.Status.OPEN, Round.Status.RESOLVED},
    Round.Status.RESOLVED: set(),
}


def round_set_status(*, round_: Round, status: str) -> Round:
    """Move a round to ``status``.

    Side effects: ``status_changed_at`` set; on close, ``closes_at`` set if it
    was empty; on resolve, ``resolves_at`` set if empty. Closing stops new
    submissions (only open rounds accept them). Resolving needs a final truth
    version. A permanent round (static competition) never closes.
    """
    with transaction.atomic():
        round_ = Round.objects.select_for_update().get(pk=round_.pk)
        if status == round_.status:
            return round_
        if round_.is_permanent:
            raise SubmissionRejected([RowError("a static competition's permanent round stays open")], status=409)
        if status not in _MOVES[round_.status]:
            raise SubmissionRejected([RowError(f"a {round_.status} round cannot become {status}")], status=409)
        now = timezone.now()
        if status == Round.Status.RESOLVED and not TruthVersion.objects.filter(round=round_, is_final=True).exists():
            raise SubmissionRejected([RowError("load the final truth before resolving the round")], status=409)
        if status == Round.Status.CLOSED and round_.closes_at is None:
            round_.closes_at = now
        if status == Round.Status.RESOLVED and round_.resolves_at is None:
            round_.resolves_at = now
        round_.status = status
        round_.status_changed_at = now
        round_.save()
        return round_
