"""Turn stored cases and truth into the pure layer's CaseSet and Truth (static rounds) and
Universe and RoundTruth (rounds of round kinds): the read helpers services and selectors share."""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from scoring.kinds.base import Case as PureCase
from scoring.kinds.base import CaseSet, RoundTruth, Truth, Universe

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


# -- the universe -------------------------------------------------------------------

_UNIVERSES: OrderedDict[tuple[int, str], Universe] = OrderedDict()
_UNIVERSES_LOCK = threading.Lock()
_UNIVERSES_KEPT = 8


def round_universe(round_: Round, *, columns: bool = False) -> Universe:
    """The round's universe: ids in order (cached per process: a universe never changes once
    opened), with the numeric columns (features, prices) when ``columns`` is asked for."""
    if columns:
        return round_.benchmark.kind_impl.universe(round_caseset(round_), round_.benchmark.config)
    key = (round_.pk, round_.universe_sha256)
    with _UNIVERSES_LOCK:
        found = _UNIVERSES.get(key)
        if found is not None:
            _UNIVERSES.move_to_end(key)
            return found
    ids = tuple(Case.objects.filter(round=round_).order_by("position", "id").values_list("external_id", flat=True))
    universe = Universe(ids)
    with _UNIVERSES_LOCK:
        _UNIVERSES[key] = universe
        while len(_UNIVERSES) > _UNIVERSES_KEPT:
            _UNIVERSES.popitem(last=False)
    return universe


def round_truth(version: TruthVersion, universe: Universe) -> RoundTruth:
    """A stored truth version as an array aligned to the universe (NaN where an id has none)."""
    kind = version.round.benchmark.kind_impl
    columns = tuple(kind.truth_columns(version.round.benchmark.config))
    values = np.full((len(universe), len(columns)), np.nan)
    index = universe.index
    for cid, vals in TruthValue.objects.filter(truth_version=version).values_list("case__external_id", "values"):
        at = index.get(cid)
        if at is None:
            continue
        for j, c in enumerate(columns):
            v = vals.get(c)
            if v is not None:
                values[at, j] = v
    return RoundTruth(values, columns, final=version.is_final, as_of=version.as_of, extra=version.extra)
