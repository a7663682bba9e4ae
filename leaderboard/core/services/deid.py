"""De-identification of case texts (kind ``impact``): the spec's three stages, stored per case.

On load every case passes the regex stages at once, so a participant never sees
an original text; ``cases_deidentify`` runs the full pipeline (with the model
stage when a backend is configured) from the admin or ``manage.py deidentify``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.db import transaction

from scoring.kinds.base import CaseSet

from leaderboard.core.models import Case, Round, TruthVersion
from leaderboard.deid import deidentify, load_lists, make_backend
from leaderboard.deid.reid import ReidCase, ReidReport, reidentification_check

log = logging.getLogger("leaderboard.deid")

REGEX_ONLY = "regex only"
FULL = "regex + model"


def deid_backend():
    """The OpenAI-compatible backend the settings describe, or None (model stage skipped)."""
    return make_backend(settings.DEID_LLM_URL, settings.DEID_LLM_MODEL, settings.DEID_LLM_API_KEY,
                        settings.DEID_LLM_TIMEOUT)


@lru_cache(maxsize=1)
def _lists():
    return load_lists()


def _apply(public: dict, private: dict, backend) -> tuple[dict, dict]:
    original = private.get("original_text", public.get("text", ""))
    result = deidentify(original, private.get("identifiers") or {}, _lists(), backend)
    public = dict(public, text=result.redacted_text, redaction=REGEX_ONLY if result.regex_only else FULL)
    private = dict(private, original_text=original, deid=result.as_dict())
    return public, private


def caseset_deidentify(cases: CaseSet, round_: Round | None) -> None:
    """Redact a freshly parsed bundle's texts in place before they are stored.

    A case whose original text is unchanged keeps its stored redaction (which
    may include the model stage); the others pass the regex stages now.
    """
    stored = {}
    if round_ is not None:
        stored = {cid: (pub, priv) for cid, pub, priv in
                  Case.objects.filter(round=round_).values_list("external_id", "public", "private")}
    for case in cases.cases:
        old = stored.get(case.case_id)
        if old and old[1].get("original_text") == case.private.get("original_text") and "deid" in old[1]:
            case.public = dict(case.public, text=old[0].get("text", ""), redaction=old[0].get("redaction", REGEX_ONLY))
            case.private = dict(case.private, deid=old[1]["deid"])
        else:
            case.public, case.private = _apply(case.public, case.private, backend=None)


@dataclass
class DeidReport:
    cases: int
    with_model: int
    regex_only: int
    backend: str | None


def cases_deidentify(*, round_: Round | None, backend=None, case_ids: list[str] | None = None) -> DeidReport:
    """Run the three stages on a round's cases and store the redacted text and the log.

    Side effects: each case's ``public.text`` and ``public.redaction`` and its
    ``private.deid`` (every replacement with its stage, and the log) are replaced.
    """
    qs = Case.objects.filter(round=round_).order_by("position", "id")
    if case_ids:
        qs = qs.filter(external_id__in=case_ids)
    with_model = 0
    cases = list(qs)
    for case in cases:
        case.public, case.private = _apply(case.public, case.private, backend)
        with_model += case.public["redaction"] == FULL
        for line in case.private["deid"]["log"]:
            log.info("%s: %s", case.external_id, line)
    with transaction.atomic():
        Case.objects.bulk_update(cases, ["public", "private"], batch_size=500)
    return DeidReport(cases=len(cases), with_model=with_model, regex_only=len(cases) - with_model,
                      backend=getattr(backend, "model", None))


def round_reidentification_check(*, round_: Round | None, backend, limit: int | None = None) -> ReidReport:
    """Ask the backend to name the ticker and move of each redacted case (the spec's validation)."""
    version = TruthVersion.objects.filter(round=round_).order_by("-version").first()
    truth = dict(version.values.values_list("case__external_id", "values")) if version else {}
    cases = []
    for case in Case.objects.filter(round=round_).order_by("position", "id")[:limit]:
        values = truth.get(case.external_id)
        if not values or values.get("percent_change") is None:
            continue
        ticker = (case.private.get("identifiers") or {}).get("ticker") or None
        if isinstance(ticker, list):
            ticker = ticker[0] if ticker else None
        cases.append(ReidCase(case.external_id, case.public.get("text", ""), ticker, float(values["percent_change"])))
    return reidentification_check(cases, backend)
