"""The no-leak rule, ``case_truth_visible``: every surface that could show a case's truth or
whether a prediction of it was right (submission and case pages, per-case rows in JSON and CSV,
training downloads, verify) asks it first. It sits below the services and the selectors, which
both ask it."""
from __future__ import annotations

from leaderboard.core.models import Benchmark, Case, Round
from leaderboard.core.services.rounds import round_takes_submissions


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
