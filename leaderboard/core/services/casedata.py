"""Turn stored cases and truth into the pure layer's CaseSet and Truth."""
from __future__ import annotations

from scoring.kinds.base import Case as PureCase
from scoring.kinds.base import CaseSet, Truth

from leaderboard.core.models import Case, Round, TruthValue, TruthVersion


def round_caseset(round_: Round, *, case_ids=None) -> CaseSet:
    """A round's cases in order (with ``case_ids``, only those primary keys)."""
    qs = Case.objects.filter(round=round_)
    if case_ids is not None:
        qs = qs.filter(pk__in=list(case_ids))
    rows = qs.order_by("position", "id").values_list("external_id", "split", "public")
    return CaseSet([PureCase(case_id=cid, split=split, public=public) for cid, split, public in rows])


def latest_truth_version(round_: Round) -> TruthVersion | None:
    return TruthVersion.objects.filter(round=round_).order_by("-version").first()


def truth_for(version: TruthVersion, *, splits=None, case_ids=None) -> Truth:
    """A truth version's values; with ``splits`` or ``case_ids`` (primary keys), only those cases' are read."""
    qs = TruthValue.objects.filter(truth_version=version)
    if splits is not None:
        qs = qs.filter(case__split__in=list(splits))
    if case_ids is not None:
        qs = qs.filter(case_id__in=list(case_ids))
    values = dict(qs.values_list("case__external_id", "values"))
    return Truth(values=values, final=version.is_final, extra=version.extra)
