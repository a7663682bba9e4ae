"""Turn stored cases and truth into the pure layer's CaseSet and Truth."""
from __future__ import annotations

from scoring.kinds.base import Case as PureCase
from scoring.kinds.base import CaseSet, Truth

from leaderboard.core.models import Case, Round, TruthValue, TruthVersion


def round_caseset(round_: Round) -> CaseSet:
    rows = Case.objects.filter(round=round_).order_by("position", "id").values_list("external_id", "split", "public")
    return CaseSet([PureCase(case_id=cid, split=split, public=public) for cid, split, public in rows])


def latest_truth_version(round_: Round) -> TruthVersion | None:
    return TruthVersion.objects.filter(round=round_).order_by("-version").first()


def truth_for(version: TruthVersion) -> Truth:
    values = dict(
        TruthValue.objects.filter(truth_version=version).values_list("case__external_id", "values")
    )
    return Truth(values=values, final=version.is_final, extra=version.extra)
