"""Typed answers of the API. Each keeps the JSON it came from in ``raw`` (fields the server adds later)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from leaderboard_client.errors import ErrorItem, parse_datetime

# Statuses after which a submission's state no longer changes by itself soon:
# scored and failed are final; a round submission waits as accepted until truth arrives.
FINAL_STATUSES = ("scored", "failed")
SETTLED_STATUSES = ("scored", "failed", "accepted")


def _date(value: Any) -> dt.date | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass
class Metric:
    name: str
    label: str = ""
    higher_is_better: bool = True

    @classmethod
    def from_json(cls, d: dict) -> Metric:
        return cls(name=d.get("name", ""), label=d.get("label") or d.get("name", ""),
                   higher_is_better=bool(d.get("higher_is_better", True)))


@dataclass
class TruthVersion:
    version: int
    interim: bool = False
    as_of: dt.date | None = None

    @classmethod
    def from_json(cls, d: dict) -> TruthVersion:
        return cls(version=d.get("version"), interim=bool(d.get("interim")), as_of=_date(d.get("as_of")))


@dataclass
class AuditEntry:
    """A closed round's public record of one entrant's counted submission."""

    entrant: str
    audit_hash: str
    received_at: dt.datetime | None = None

    @classmethod
    def from_json(cls, d: dict) -> AuditEntry:
        return cls(entrant=d.get("entrant", ""), audit_hash=d.get("audit_hash", ""),
                   received_at=parse_datetime(d.get("received_at")))


@dataclass
class Round:
    number: int
    status: str
    track: str | None = None
    title: str | None = None
    opens_at: dt.datetime | None = None
    closes_at: dt.datetime | None = None
    resolves_at: dt.datetime | None = None
    submissions: int | None = None
    truth_versions: list[TruthVersion] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> Round:
        return cls(
            number=d.get("number"), status=d.get("status", ""), track=d.get("track"), title=d.get("title"),
            opens_at=parse_datetime(d.get("opens_at")), closes_at=parse_datetime(d.get("closes_at")),
            resolves_at=parse_datetime(d.get("resolves_at")), submissions=_int(d.get("submissions")),
            truth_versions=[TruthVersion.from_json(v) for v in d.get("truth_versions") or []],
            audit=[AuditEntry.from_json(a) for a in d.get("audit") or []],
            raw=d,
        )


@dataclass
class BenchmarkSummary:
    """A row of ``Client.benchmarks()``. ``current_round`` is None when the list does not carry it;
    ``open_round`` is the number of the round that takes submissions now, or None."""

    slug: str
    title: str
    kind: str
    daily_limit: int | None = None
    url: str = ""
    current_round: Round | None = None
    open_round: int | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> BenchmarkSummary:
        cr = d.get("current_round")
        return cls(slug=d.get("slug", ""), title=d.get("title", ""), kind=d.get("kind", ""),
                   daily_limit=_int(d.get("daily_limit")), url=d.get("url", ""),
                   current_round=Round.from_json(cr) if isinstance(cr, dict) else None,
                   open_round=_int(d.get("open_round")), raw=d)


@dataclass
class Benchmark:
    slug: str
    title: str
    kind: str
    daily_limit: int | None = None
    url: str = ""
    description: str = ""
    config: dict = field(default_factory=dict)
    ranking_metric: str = ""
    metrics: list[Metric] = field(default_factory=list)
    current_round: Round | None = None
    private_revealed: bool = False
    remaining_today: int | None = None
    format: str = ""
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> Benchmark:
        cr = d.get("current_round")
        return cls(
            slug=d.get("slug", ""), title=d.get("title", ""), kind=d.get("kind", ""),
            daily_limit=_int(d.get("daily_limit")), url=d.get("url", ""), description=d.get("description") or "",
            config=d.get("config") or {}, ranking_metric=d.get("ranking_metric") or "",
            metrics=[Metric.from_json(m) for m in d.get("metrics") or []],
            current_round=Round.from_json(cr) if isinstance(cr, dict) else None,
            private_revealed=bool(d.get("private_revealed")), remaining_today=_int(d.get("remaining_today")),
            format=d.get("format") or "", raw=d,
        )


@dataclass
class LeaderboardRow:
    """One ranked row of a board: a benchmark's, a round's, or standings across rounds (``rounds``)."""

    rank: int | None
    entrant: str
    score: float | None
    metrics: dict[str, Any] = field(default_factory=dict)
    submissions: int | None = None
    rounds: int | None = None
    provisional: bool = False
    as_of: dt.date | None = None
    updated_at: dt.datetime | None = None
    submission_id: int | None = None
    audit_hash: str | None = None
    interval: list[float] | None = None  # [low, high]: the 95% bootstrap interval of score
    rank_range: list[int] | None = None  # [best, worst]: the ranks it could hold within the intervals
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> LeaderboardRow:
        return cls(
            rank=_int(d.get("rank")), entrant=d.get("entrant", ""), score=_float(d.get("score")),
            metrics=d.get("metrics") or {}, submissions=_int(d.get("submissions")), rounds=_int(d.get("rounds")),
            provisional=bool(d.get("provisional")), as_of=_date(d.get("as_of")),
            updated_at=parse_datetime(d.get("updated_at")), submission_id=_int(d.get("submission_id")),
            audit_hash=d.get("audit_hash"), interval=d.get("interval"), rank_range=d.get("rank_range"), raw=d,
        )


@dataclass
class LeaderboardPage:
    """One page of a board. ``count`` is the number of rows on all pages; ``next`` the next page's URL or None."""

    rows: list[LeaderboardRow]
    count: int
    next: str | None = None
    benchmark: str | None = None
    round: int | None = None
    split: str | None = None
    ranking_metric: str | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> LeaderboardPage:
        rows = [LeaderboardRow.from_json(r) for r in d.get("rows") or []]
        count = _int(d.get("count"))
        return cls(rows=rows, count=len(rows) if count is None else count, next=d.get("next") or None,
                   benchmark=d.get("benchmark"), round=_int(d.get("round")), split=d.get("split"),
                   ranking_metric=d.get("ranking_metric"), raw=d)

    def __iter__(self) -> Iterator[LeaderboardRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class SubmissionReceipt:
    """The 202 answer to an upload. ``replayed``: the server had it already (same idempotency key)."""

    id: int
    status: str
    url: str = ""
    audit_hash: str = ""
    remaining_today: int | None = None
    idempotency_key: str | None = None
    replayed: bool = False
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict, *, idempotency_key: str | None = None, replayed: bool = False) -> SubmissionReceipt:
        return cls(id=d.get("id"), status=d.get("status", ""), url=d.get("url", ""),
                   audit_hash=d.get("audit_hash", ""), remaining_today=_int(d.get("remaining_today")),
                   idempotency_key=idempotency_key, replayed=replayed, raw=d)


@dataclass
class Submission:
    """A submission's state. ``scores`` is ``{split: {metric: value}}``."""

    id: int
    status: str
    benchmark: str = ""
    entrant: str = ""
    status_reason: str = ""
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[ErrorItem] = field(default_factory=list)
    audit_hash: str = ""
    provisional: bool = False
    as_of: dt.date | None = None
    counted: bool | None = None
    truth_version: int | None = None
    note: str | None = None
    is_selected: bool = False
    uploaded_by: str = ""
    late: bool = False  # after the deadline of a benchmark that takes late submissions: never ranked
    created_at: dt.datetime | None = None
    started_at: dt.datetime | None = None
    scored_at: dt.datetime | None = None
    url: str = ""
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> Submission:
        counted = d.get("counted")
        return cls(
            id=d.get("id"), status=d.get("status", ""), benchmark=d.get("benchmark", ""),
            entrant=d.get("entrant", ""), status_reason=d.get("status_reason") or "",
            scores=d.get("scores") or {}, errors=[ErrorItem.from_json(e) for e in d.get("errors") or []],
            audit_hash=d.get("audit_hash", ""), provisional=bool(d.get("provisional")), as_of=_date(d.get("as_of")),
            counted=counted if isinstance(counted, bool) else None, truth_version=_int(d.get("truth_version")),
            note=d.get("note"), is_selected=bool(d.get("is_selected")), uploaded_by=d.get("uploaded_by") or "",
            late=bool(d.get("late")),
            created_at=parse_datetime(d.get("created_at")), started_at=parse_datetime(d.get("started_at")),
            scored_at=parse_datetime(d.get("scored_at")), url=d.get("url", ""), raw=d,
        )

    @property
    def is_final(self) -> bool:
        """Scored or failed: nothing more will happen unless the organiser rescores."""
        return self.status in FINAL_STATUSES


@dataclass
class SubmissionPage:
    """One page of your submissions: ``count`` on all pages, ``next``/``previous`` URLs or None."""

    rows: list[Submission]
    count: int
    next: str | None = None
    previous: str | None = None
    page: int | None = None
    page_size: int | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> SubmissionPage:
        rows = [Submission.from_json(r) for r in d.get("rows") or []]
        count = _int(d.get("count"))
        return cls(rows=rows, count=len(rows) if count is None else count, next=d.get("next") or None,
                   previous=d.get("previous") or None, page=_int(d.get("page")), page_size=_int(d.get("page_size")),
                   raw=d)

    def __iter__(self) -> Iterator[Submission]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class Me:
    """Who a token belongs to (``Client.me()``): may it upload yet, its own entrants, its teams."""

    username: str
    is_staff: bool = False
    can_upload: bool = True
    upload_refusal: str | None = None
    entrants: list[str] = field(default_factory=list)
    teams: list[dict] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> Me:
        return cls(username=d.get("username", ""), is_staff=bool(d.get("is_staff")),
                   can_upload=bool(d.get("can_upload", True)), upload_refusal=d.get("upload_refusal"),
                   entrants=list(d.get("entrants") or []), teams=list(d.get("teams") or []), raw=d)


@dataclass
class VerifyResult:
    """A dry run: metrics and per-case rows over the cases whose truth participants may see."""

    metrics: dict[str, Any]
    results: list[dict[str, Any]]
    direction_confusion_matrix: dict[str, Any] = field(default_factory=dict)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> VerifyResult:
        return cls(metrics=d.get("metrics") or {}, results=d.get("results") or [],
                   direction_confusion_matrix=d.get("direction_confusion_matrix") or {}, raw=d)


@dataclass
class HistoryPoint:
    version: int
    as_of: dt.date | None
    interim: bool
    metrics: dict[str, Any]

    @classmethod
    def from_json(cls, d: dict) -> HistoryPoint:
        return cls(version=d.get("version"), as_of=_date(d.get("as_of")), interim=bool(d.get("interim")),
                   metrics=d.get("metrics") or {})


@dataclass
class EntrantHistory:
    entrant: str
    points: list[HistoryPoint]

    @classmethod
    def from_json(cls, d: dict) -> EntrantHistory:
        return cls(entrant=d.get("entrant", ""), points=[HistoryPoint.from_json(p) for p in d.get("points") or []])


@dataclass
class History:
    """A round's scores per truth version, for every entrant (interim snapshots, then final)."""

    entrants: list[EntrantHistory]
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> History:
        return cls(entrants=[EntrantHistory.from_json(e) for e in d.get("entrants") or []], raw=d)


@dataclass
class ComparisonRow:
    rank: int | None
    entrant: str
    score: float | None
    return_sum: float | None = None
    oracle_sum: float | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> ComparisonRow:
        return cls(rank=_int(d.get("rank")), entrant=d.get("entrant", ""), score=_float(d.get("score")),
                   return_sum=_float(d.get("return_sum")), oracle_sum=_float(d.get("oracle_sum")), raw=d)


@dataclass
class ComparisonSet:
    """Portfolio: entrants compared over the rounds they all completed."""

    members: list[str]
    rounds: list[int]
    rows: list[ComparisonRow]
    count: int | None = None
    next: str | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> ComparisonSet:
        rows = [ComparisonRow.from_json(r) for r in d.get("rows") or []]
        count = _int(d.get("count"))
        return cls(members=list(d.get("members") or []), rounds=list(d.get("rounds") or []), rows=rows,
                   count=len(rows) if count is None else count, next=d.get("next") or None, raw=d)


@dataclass
class TeamEvent:
    """One line of a team's audit log: created, invited, joined, merged, declined, left."""

    kind: str
    user: str | None
    detail: str
    at: dt.datetime | None

    @classmethod
    def from_json(cls, d: dict) -> TeamEvent:
        return cls(kind=d.get("kind", ""), user=d.get("user"), detail=d.get("detail", ""),
                   at=parse_datetime(d.get("at")))


@dataclass
class Team:
    """A team on one benchmark: its name is its entrant on the boards. ``invites`` (pending usernames)
    and ``events`` (the audit log) are given to its members only."""

    id: int
    name: str
    benchmark: str
    members: list[str] = field(default_factory=list)
    created_at: dt.datetime | None = None
    invites: list[str] = field(default_factory=list)
    events: list[TeamEvent] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict) -> Team:
        return cls(id=d.get("id"), name=d.get("name", ""), benchmark=d.get("benchmark", ""),
                   members=list(d.get("members") or []), created_at=parse_datetime(d.get("created_at")),
                   invites=[i.get("username", "") for i in d.get("invites") or []],
                   events=[TeamEvent.from_json(e) for e in d.get("events") or []], raw=d)


@dataclass
class Invite:
    """A pending invite to a team: accept or decline it by ``id``."""

    id: int
    team: str
    team_id: int
    benchmark: str
    invited_by: str | None = None
    created_at: dt.datetime | None = None

    @classmethod
    def from_json(cls, d: dict) -> Invite:
        return cls(id=d.get("id"), team=d.get("team", ""), team_id=d.get("team_id"), benchmark=d.get("benchmark", ""),
                   invited_by=d.get("invited_by"), created_at=parse_datetime(d.get("created_at")))
