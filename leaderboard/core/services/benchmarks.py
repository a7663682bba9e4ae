"""Benchmarks: load from bundles, load truth, reveal, rescore."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from scoring.errors import RowError, ValidationFailed
from scoring.kinds import get_kind, kind_names
from scoring.kinds.base import CaseSet, Truth

from leaderboard.core.boardcache import boards_changed
from leaderboard.core.models import Benchmark, Case, NotificationEvent, Round, Submission, TruthValue, TruthVersion
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.casedata import latest_truth_version, round_caseset, truth_for
from leaderboard.core.services.deid import caseset_deidentify
from leaderboard.core.services.leaderboards import leaderboard_refresh
from leaderboard.core.services.notifications import benchmark_event_emit
from leaderboard.core.services.rounds import (
    round_closed_message,
    round_set_deadline,
    round_set_status,
    round_takes_submissions,
)
from leaderboard.core.services.submissions import submissions_requeue

log = logging.getLogger("leaderboard.benchmarks")

MAX_BUNDLE_FILE_BYTES = 200 * 1024 * 1024
CREDIT_MAX_CHARS = 500  # Benchmark.credit


# A bad bundle: the one application error (scoring.errors.ValidationFailed) under its old name.
BundleError = ValidationFailed


@dataclass
class LoadReport:
    benchmark: Benchmark
    created: bool
    truth_version: int | None
    truth_changed: bool
    cases: int
    requeued: int
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        verb = "created" if self.created else "updated"
        truth = (f"truth version {self.truth_version} ({'new' if self.truth_changed else 'unchanged'})"
                 if self.truth_version else "no truth")
        queued = f"{self.requeued} submission{'' if self.requeued == 1 else 's'} queued for rescoring"
        out = f"{verb} {self.benchmark.slug}: {self.cases} cases, {truth}, {queued}"
        return "\n".join([out, *self.notes])


def _read_meta(directory: Path) -> dict[str, Any]:
    meta_path = directory / "benchmark.json"
    if not directory.is_dir():
        raise BundleError([RowError(f"{directory} is not a folder")])
    if not meta_path.is_file():
        raise BundleError([RowError("missing: a bundle folder needs benchmark.json", file="benchmark.json")])
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise BundleError([RowError("not UTF-8 text", file="benchmark.json")]) from None
    except json.JSONDecodeError as exc:
        raise BundleError([RowError(f"invalid JSON: {exc.msg}", row=exc.lineno, file="benchmark.json")]) from None
    if not isinstance(meta, dict):
        raise BundleError([RowError("must be a JSON object", file="benchmark.json")])
    errors = []
    for key in ("slug", "title", "kind"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            errors.append(RowError("required, a non-empty string", column=key, file="benchmark.json"))
    if isinstance(meta.get("slug"), str) and meta["slug"] != slugify(meta["slug"]):
        errors.append(RowError(f"{meta['slug']!r} is not a slug (lowercase letters, digits, hyphens)",
                               column="slug", file="benchmark.json"))
    if isinstance(meta.get("kind"), str) and meta["kind"] not in kind_names():
        errors.append(RowError(f"unknown kind {meta['kind']!r}; known: {', '.join(kind_names())}",
                               column="kind", file="benchmark.json"))
    limit = meta.get("daily_limit", 5)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        errors.append(RowError("must be a positive integer", column="daily_limit", file="benchmark.json"))
    if not isinstance(meta.get("config", {}), dict):
        errors.append(RowError("must be a JSON object", column="config", file="benchmark.json"))
    if not isinstance(meta.get("description", ""), str):
        errors.append(RowError("must be a string (markdown)", column="description", file="benchmark.json"))
    credit = meta.get("credit", "")
    if not isinstance(credit, str) or len(credit) > CREDIT_MAX_CHARS or not credit.isprintable():
        errors.append(RowError(f"must be one line of text (markdown), at most {CREDIT_MAX_CHARS} characters: the "
                               "data's source and licence", column="credit", file="benchmark.json"))
    if "closes_at" in meta:
        try:
            meta["closes_at"] = parse_deadline(meta["closes_at"])
        except ValueError as exc:
            errors.append(RowError(str(exc), column="closes_at", file="benchmark.json"))
    size = meta.get("team_size_max")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        errors.append(RowError("must be a positive integer (members per team), or null for no limit",
                               column="team_size_max", file="benchmark.json"))
    if "team_merge_deadline" in meta:
        try:
            meta["team_merge_deadline"] = parse_deadline(meta["team_merge_deadline"])
        except ValueError as exc:
            errors.append(RowError(str(exc), column="team_merge_deadline", file="benchmark.json"))
    unknown = set(meta) - {"slug", "title", "kind", "description", "credit", "daily_limit", "config", "published", "closes_at",
                           "team_size_max", "team_merge_deadline"}
    if unknown:
        errors.append(RowError(f"unknown keys: {', '.join(sorted(unknown))}", file="benchmark.json"))
    if errors:
        raise BundleError(errors)
    return meta


def parse_deadline(value: Any) -> dt.datetime | None:
    """A ``closes_at`` value: an ISO 8601 date-time with its UTC offset (``2025-06-30T23:59:59Z``), or null.

    Raises ValueError with a message that says what is wrong.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be an ISO 8601 date-time such as \"2025-06-30T23:59:59Z\", or null for no deadline")
    try:
        at = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{value[:60]!r} is not an ISO 8601 date-time; write e.g. \"2025-06-30T23:59:59Z\"") from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"{value[:60]!r} has no UTC offset; end it with Z (UTC) or an offset such as +02:00")
    return at.astimezone(dt.timezone.utc)


def benchmark_load_bundle(directory: str | Path, *, user=None) -> LoadReport:
    """Create or update a benchmark from a bundle folder; idempotent.

    Everything is validated before anything is written, and written in one
    transaction: a bad bundle changes nothing. Truth that changed becomes a
    new truth version and queues a rescore of the round's submissions.
    """
    directory = Path(directory)
    meta = _read_meta(directory)
    kind = get_kind(meta["kind"])
    try:
        config = kind.validate_config(meta.get("config", {}))
    except ValidationFailed as exc:
        raise BundleError([RowError(e.message, e.row, e.column or "config", "benchmark.json")
                           for e in exc.errors]) from None
    files: dict[str, bytes] = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name != "benchmark.json" and not path.name.startswith("."):
            if path.stat().st_size > MAX_BUNDLE_FILE_BYTES:
                raise BundleError([RowError("file too large for a bundle", file=path.name)])
            files[path.name] = path.read_bytes()
    try:
        bundle = kind.parse_bundle(files, config)
    except ValidationFailed as exc:
        raise BundleError(exc.errors) from None

    with transaction.atomic():
        benchmark, created = Benchmark.objects.select_for_update().get_or_create(
            slug=meta["slug"],
            defaults={"title": meta["title"], "kind": meta["kind"]},
        )
        if not created and benchmark.kind != meta["kind"]:
            raise BundleError([RowError(
                f"benchmark {benchmark.slug!r} is of kind {benchmark.kind!r}; a bundle cannot change its kind",
                column="kind", file="benchmark.json")])
        if not created and (refused := config_change_refusal(benchmark, bundle.config)):
            raise BundleError(refused)
        config_changed = not created and config_changes_scores(kind, benchmark.config, bundle.config)
        benchmark.title = meta["title"]
        benchmark.description = meta.get("description", "")
        benchmark.credit = meta.get("credit", "").strip()
        benchmark.daily_limit = meta.get("daily_limit", 5)
        benchmark.config = bundle.config
        benchmark.is_published = bool(meta.get("published", True))
        benchmark.team_size_max = meta.get("team_size_max")
        benchmark.team_merge_deadline = meta.get("team_merge_deadline")
        benchmark.save()
        boards_changed(benchmark.pk)  # title, config and columns of its boards
        if kind.is_round_kind:  # rounds open later, each with its universe (round_open)
            return LoadReport(benchmark=benchmark, created=created, truth_version=None, truth_changed=False,
                              cases=0, requeued=0)
        round_, _ = Round.objects.get_or_create(
            benchmark=benchmark, number=1,
            defaults={"is_permanent": True, "title": benchmark.title, "status": Round.Status.OPEN},
        )
        notes = []
        if "closes_at" in meta:  # absent: the deadline set in the admin stays
            try:
                round_ = round_set_deadline(round_=round_, closes_at=meta["closes_at"])
            except SubmissionRejected as exc:
                raise BundleError([RowError(e.message, column="closes_at", file="benchmark.json")
                                   for e in exc.errors]) from None
        if round_.is_permanent:
            notes.append(_deadline_note(round_))
        report = truth_load(round_=round_, cases=bundle.cases, truth=bundle.truth, user=user,
                            note=f"loaded from {directory.name}")
        requeued = report[2]
        if config_changed and not report[1]:
            # Scores follow the config (weights, properties, recall rule) as they follow the truth: every row
            # of a board is scored by the same rule. Truth that changed has requeued them already.
            requeued = benchmark_rescore(benchmark=benchmark, reason=CONFIG_CHANGED)
        return LoadReport(benchmark=benchmark, created=created, truth_version=report[0], truth_changed=report[1],
                          cases=len(bundle.cases.cases), requeued=requeued, notes=notes)


def config_changes_scores(kind, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether replacing a static benchmark's config ``old`` by ``new`` can change a score or a rank: any
    key changed but the kind's ``free_config_keys`` (an upload limit, late submissions). Only then are
    its submissions rescored."""
    return any(old.get(key) != new.get(key) for key in set(old) | set(new) if key not in kind.free_config_keys)


def config_cases_refusal(benchmark: Benchmark, config: dict[str, Any]) -> list[RowError]:
    """Why a static benchmark's stored cases and truth cannot be scored with ``config`` (validated by the
    kind), as a bundle pairing them would be refused: empty when they can (or there is no truth yet).
    A config edited alone (the admin) is checked here, before any submission is rescored with it."""
    kind = benchmark.kind_impl
    round_ = None if kind.is_round_kind else Round.objects.filter(benchmark=benchmark, is_permanent=True).first()
    version = latest_truth_version(round_) if round_ is not None else None
    if round_ is None or version is None:
        return []
    try:
        kind.check_config_for_cases(config, cases=round_caseset(round_), truth=truth_for(version))
    except ValidationFailed as exc:
        return exc.errors
    return []


def config_change_refusal(benchmark: Benchmark, config: dict[str, Any], *, file: str | None = "benchmark.json",
                          ) -> list[RowError]:
    """Why ``config`` (validated by the kind) may not replace a round benchmark's config: one error per
    key that decides scores or ranks (any key but the kind's ``free_config_keys``) and would change,
    once any of its rounds has truth. Empty: the change is allowed (static kinds rescore on their own)."""
    kind = benchmark.kind_impl
    if not kind.is_round_kind:
        return []
    scored = list(Round.objects.filter(benchmark=benchmark, truth_versions__isnull=False)
                  .order_by("number").values_list("number", flat=True).distinct())
    if not scored:
        return []
    try:
        old = kind.validate_config(benchmark.config)
    except ValidationFailed:
        old = dict(benchmark.config)
    shown = ", ".join(map(str, scored[:10])) + (f" and {len(scored) - 10} more" if len(scored) > 10 else "")
    rounds = f"round{'s' if len(scored) != 1 else ''} {shown}"
    errors = []
    for key in sorted(set(old) | set(config)):
        if key in kind.free_config_keys or old.get(key) == config.get(key):
            continue
        before, after = json.dumps(old.get(key)), json.dumps(config.get(key))
        errors.append(RowError(
            f"cannot change from {before} to {after}: {rounds} of {benchmark.slug!r} already have truth and "
            f"were scored with {before}, so their boards, standings and records would no longer match. Keep "
            f"{before}, or load the new config as a new benchmark with another slug",
            column=f"config.{key}", file=file))
    return errors


def _deadline_note(round_: Round) -> str:
    if not round_takes_submissions(round_):
        return round_closed_message(round_)
    if round_.closes_at is None:
        return "submissions open, no deadline (set closes_at in benchmark.json or the admin)"
    return f"submissions open until {round_.closes_at:%Y-%m-%d %H:%M} UTC"


def _truth_digest(cases: CaseSet, truth: Truth) -> str:
    canonical = {
        "cases": [[c.case_id, c.split] for c in cases.cases],
        "truth": {cid: truth.values.get(cid) for cid in sorted(truth.values)},
        "final": truth.final,
        "extra": truth.extra,
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, default=str).encode()).hexdigest()


def truth_load(*, round_: Round, cases: CaseSet, truth: Truth, user=None, note: str = "") -> tuple[int | None, bool, int]:
    """Store a round's cases and, if it changed, a new truth version; rescore what it affects.

    Returns (current truth version number, whether it changed, submissions requeued).
    Side effects: texts of kinds that need it de-identified; cases created/updated/removed; a TruthVersion with values;
    the round's scored and failed submissions requeued on commit.
    """
    if round_.benchmark.kind_impl.deidentify_text:
        # Participants never see an original text: redact before storing.
        caseset_deidentify(cases, round_)
    with transaction.atomic():
        existing = {c.external_id: c for c in Case.objects.filter(round=round_)}
        keep = set()
        to_create, to_update = [], []
        for position, pc in enumerate(cases.cases):
            keep.add(pc.case_id)
            case = existing.get(pc.case_id)
            if case is None:
                to_create.append(Case(round=round_, external_id=pc.case_id, split=pc.split, public=pc.public,
                                      private=pc.private, position=position))
            elif (case.split, case.public, case.private, case.position) != (pc.split, pc.public, pc.private, position):
                case.split, case.public, case.private, case.position = pc.split, pc.public, pc.private, position
                to_update.append(case)
        Case.objects.bulk_create(to_create, batch_size=1000)
        Case.objects.bulk_update(to_update, ["split", "public", "private", "position"], batch_size=1000)
        removed = [c.pk for cid, c in existing.items() if cid not in keep]
        if removed:
            Case.objects.filter(pk__in=removed).delete()

        if not truth.values:
            return None, False, 0
        digest = _truth_digest(cases, truth)
        latest = latest_truth_version(round_)
        if latest is not None and latest.sha256 == digest:
            return latest.version, False, 0
        version = TruthVersion.objects.create(
            round=round_, version=(latest.version + 1) if latest else 1, is_final=truth.final,
            sha256=digest, note=note[:300], extra=truth.extra, created_by=user,
        )
        case_ids = dict(Case.objects.filter(round=round_).values_list("external_id", "id"))
        TruthValue.objects.bulk_create(
            (TruthValue(truth_version=version, case_id=case_ids[cid], values=vals)
             for cid, vals in truth.values.items() if cid in case_ids),
            batch_size=1000,
        )
        requeued = 0
        if latest is not None:
            requeued = submissions_requeue(
                Submission.objects.filter(round=round_, status__in=[Submission.Status.SCORED,
                                                                    Submission.Status.FAILED]),
                reason=f"rescoring: truth changed to version {version.version}",
            )
        log.info("round %s: truth version %s, %s submissions requeued", round_.pk, version.version, requeued)
        return version.version, True, requeued


def benchmark_reveal(*, benchmark: Benchmark, reveal: bool = True) -> None:
    """Show (or hide again) the private leaderboard; ranking switches to the private split.

    Refused (409) while the benchmark's permanent round takes submissions:
    the private split's truth, shown case by case after the reveal, must
    never reach an upload. A round past its deadline that the periodic job
    has not closed yet is closed here first. Side effects: the round's status
    (through ``round_set_status``), ``private_revealed_at``.
    """
    with transaction.atomic():
        benchmark = Benchmark.objects.select_for_update(no_key=True).get(pk=benchmark.pk)
        if reveal and benchmark.private_revealed:
            return
        if reveal:
            for round_ in Round.objects.filter(benchmark=benchmark, is_permanent=True).order_by("number", "id"):
                if round_takes_submissions(round_):
                    until = (f"until {round_.closes_at:%Y-%m-%d %H:%M} UTC" if round_.closes_at
                             else "with no deadline")
                    raise SubmissionRejected([RowError(
                        f"submissions to {benchmark.title} are open {until}: the private split can only be "
                        f"revealed once they are closed (python manage.py round_close {benchmark.slug} "
                        f"{round_.number}, or the admin's Close action)")], status=409)
                if round_.status == Round.Status.OPEN:  # past its deadline, not closed yet
                    round_set_status(round_=round_, status=Round.Status.CLOSED)
        benchmark.private_revealed_at = timezone.now() if reveal else None
        benchmark.save(update_fields=["private_revealed_at", "updated_at"])
        boards_changed(benchmark.pk)
        if reveal:
            benchmark_event_emit(benchmark, NotificationEvent.Kind.BENCHMARK_REVEALED)


CONFIG_CHANGED = "rescoring: the benchmark's config changed"


def benchmark_rescore(*, benchmark: Benchmark, reason: str = "rescoring requested by an organiser") -> int:
    """Requeue every scored or failed submission of a benchmark (organiser action; a static benchmark's
    config changed, by a bundle or in the admin). Round kinds' submissions are scored with their rounds."""
    return submissions_requeue(
        Submission.objects.filter(benchmark=benchmark, status__in=[Submission.Status.SCORED,
                                                                   Submission.Status.FAILED]),
        reason=reason,
    )


def round_leaderboards_refresh(*, benchmark: Benchmark) -> None:
    with transaction.atomic():
        for round_ in Round.objects.filter(benchmark=benchmark):
            leaderboard_refresh(round_)
