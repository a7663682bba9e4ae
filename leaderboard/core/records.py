"""A round's record: the zip anyone can rescore (``GET .../rounds/{n}/record/``).

Once a round is resolved (a static benchmark: once revealed), its record holds everything its
board was computed from, in the forms ``scoring.record`` reads back: the universe (static: the
cases), every truth version, every counted submission in the canonical form its audit hash
covers, the published board(s), and last ``manifest.json`` with the config, the scoring version,
the committed audit list and the SHA-256 of every other file. The zip is written as it is sent
(``record_stream`` yields bytes), so a 10,000 x 5,000 round never sits in memory.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np

import scoring
from scoring.kinds.base import RoundSubmission
from scoring.record import FORMAT, MANIFEST, values_csv

from leaderboard.core import selectors
from leaderboard.core.models import Benchmark, LeaderboardRow, Round, Stake, Submission, TruthVersion
from leaderboard.core.services.casedata import round_caseset, round_truth, round_universe, truth_for
from leaderboard.core.services.round_engine import round_counted_arrays
from leaderboard.core.services.rounds import round_commitment_pairs

# A member is handed on in pieces of about this size (the zip writer's buffer).
CHUNK_BYTES = 1 << 20
BOARD_PAGE = 1000


def record_refusal(round_: Round) -> str | None:
    """Why the round's record is not published (yet), or None when it is."""
    benchmark = round_.benchmark
    if round_.is_permanent:
        if not benchmark.private_revealed:
            return (f"the record of {benchmark.slug} is published once its private split is revealed "
                    "(python manage.py reveal, after the close)")
        return None
    if not benchmark.kind_impl.is_round_kind:
        return f"{benchmark.slug} is a static benchmark: its record is its permanent round's"
    if round_.status != Round.Status.RESOLVED:
        return (f"round {round_.number} is {round_.status}: its record is published once its final truth is "
                "scored (the round is resolved)")
    return None


def record_pending(round_: Round) -> str | None:
    """Why a static benchmark's record cannot be built right now, or None: a board row whose
    submission is waiting to be rescored (the organiser changed the truth or the config) still shows
    its old scores, which the record's latest truth and config would not reproduce. Round kinds
    write a truth version's board at once with the version it was scored with: never pending."""
    if not round_.is_permanent:
        return None
    latest = TruthVersion.objects.filter(round=round_).order_by("-version").values_list("pk", flat=True).first()
    waiting = (LeaderboardRow.objects.filter(round=round_)
               .exclude(submission__status=Submission.Status.SCORED, submission__truth_version_id=latest).count())
    if not waiting:
        return None
    return (f"the boards of {round_.benchmark.slug} are being rescored (the organiser changed its truth or its "
            f"config): {waiting} row{'s' if waiting != 1 else ''} still show{'' if waiting != 1 else 's'} the "
            "earlier scores; the record is built once every row is scored again, try in a few minutes")


def record_filename(round_: Round) -> str:
    return f"{round_.benchmark.slug}-round-{round_.number}-record.zip"


class _Sink:
    """A write-only stream the zip writer fills; ``take`` empties it (no seek: the zip uses data
    descriptors and never goes back)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.written = 0

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        self.size += len(data)
        self.written += len(data)
        return len(data)

    def tell(self) -> int:
        return self.written

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        self.size = 0
        return out


class _Writer:
    def __init__(self) -> None:
        self.sink = _Sink()
        # write, tell and flush are all the zip writer uses of its stream
        self.zip = zipfile.ZipFile(self.sink, "w", compression=zipfile.ZIP_DEFLATED,  # type: ignore[call-overload]
                                   compresslevel=1)
        self.files: dict[str, str] = {}

    def member(self, name: str, data: bytes) -> Iterator[bytes]:
        """Add one file; yields what the zip has ready to send."""
        self.files[name] = hashlib.sha256(data).hexdigest()
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with self.zip.open(info, "w", force_zip64=True) as out:
            for at in range(0, len(data), CHUNK_BYTES):
                out.write(data[at:at + CHUNK_BYTES])
                if self.sink.size >= CHUNK_BYTES:
                    yield self.sink.take()
        if self.sink.size >= CHUNK_BYTES:
            yield self.sink.take()

    def finish(self, manifest: dict[str, Any]) -> Iterator[bytes]:
        manifest["files"] = dict(sorted(self.files.items()))
        data = json.dumps(manifest, indent=1, sort_keys=True, default=str).encode()
        info = zipfile.ZipInfo(MANIFEST, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        self.zip.close()
        yield self.sink.take()


def _json(data: Any) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True, default=str).encode()


def _board_row(row) -> dict[str, Any]:
    out = {"rank": row.rank, "entrant": row.entrant.name, "score": row.score, "metrics": row.metrics,
           "provisional": row.provisional, "as_of": row.as_of, "audit_hash": row.submission.audit_hash,
           "submission": row.submission_id, "submissions": row.submissions_count}
    for extra in ("interval", "rank_range", "late"):  # what the board service adds to its rows
        if hasattr(row, extra):
            out[extra] = getattr(row, extra)
    return out


def _board_rows(page_of) -> list[dict[str, Any]]:
    """Every row of a board, ``page_of(page, board)`` read page by page; ``board``: the previous page's
    ``BoardPage.board``, so the board's intervals (its rank ranges) are read once."""
    rows: list[dict[str, Any]] = []
    page, board = 1, None
    while True:
        out = page_of(page, board)
        rows.extend(_board_row(r) for r in out.rows)
        if page * BOARD_PAGE >= out.count:
            return rows
        page, board = page + 1, out.board


def _manifest(round_: Round) -> dict[str, Any]:
    b: Benchmark = round_.benchmark
    return {
        "format": FORMAT, "scoring_version": scoring.__version__,
        "benchmark": {"slug": b.slug, "title": b.title, "kind": b.kind, "config": b.config},
        "round": {"number": round_.number, "track": round_.track, "static": round_.is_permanent,
                  "status": round_.status, "closes_at": round_.closes_at},
        "commitment": round_.commitment,
        # In the order of the committed lines, from the pairs themselves: a name may hold a comma.
        "audit": [{"entrant": entrant, "audit_hash": audit_hash} for entrant, audit_hash
                  in sorted(round_commitment_pairs(round_), key=lambda pair: f"{pair[0]},{pair[1]}")],
    }


def record_stream(round_: Round) -> Iterator[bytes]:
    """The round's record as zip bytes, written while they are read (``record_refusal`` first)."""
    if round_.is_permanent:
        return _static_record(round_)
    return _round_record(round_)


def _round_record(round_: Round) -> Iterator[bytes]:
    kind = round_.benchmark.kind_impl
    writer = _Writer()
    manifest = _manifest(round_)
    universe = round_universe(round_, columns=True)
    names = list(universe.columns)
    values = (np.column_stack([universe.columns[n] for n in names]) if names
              else np.empty((len(universe), 0)))
    yield from writer.member("universe.csv", values_csv(universe.ids, names, values))
    manifest["universe"] = "universe.csv"
    versions = []
    for tv in TruthVersion.objects.filter(round=round_).select_related("round__benchmark").order_by("version"):
        truth = round_truth(tv, universe)
        name = f"truth/v{tv.version}.csv"
        yield from writer.member(name, values_csv(universe.ids, truth.columns, truth.values))
        versions.append({"version": tv.version, "final": tv.is_final, "as_of": tv.as_of, "extra": tv.extra,
                         "sha256_uploaded": tv.sha256, "scored": tv.scored_at is not None, "file": name})
    manifest["truth_versions"] = versions
    manifest["scored_version"] = (round_.data or {}).get("scored_version")
    stakes = dict(Stake.objects.filter(round=round_).values_list("entrant_id", "amount"))
    manifest["stakes_loaded"] = bool(stakes)
    facts = {pk: (h, name) for pk, h, name in Submission.objects.filter(round=round_, is_counted=True)
             .values_list("pk", "audit_hash", "entrant__name")}
    subs = []
    # The flags the board was scored with (rounds scored before they were kept: the entrants' flags now).
    scored_models = (round_.data or {}).get("benchmark_models")
    for pk, entrant_id, received_at, payload, rows, columns, blob, is_bm in round_counted_arrays(round_):
        if scored_models is not None:
            is_bm = pk in scored_models
        array = np.frombuffer(blob, dtype=np.float64).reshape(rows, len(columns))
        parsed = RoundSubmission(values=array, columns=tuple(columns), meta=(payload or {}).get("meta") or {})
        name = f"submissions/{pk}.csv"
        yield from writer.member(name, kind.round_canonical_bytes(parsed, universe))
        audit_hash, entrant = facts[pk]
        subs.append({"id": pk, "entrant": entrant, "audit_hash": audit_hash, "received_at": received_at,
                     "file": name, "benchmark_model": bool(is_bm),
                     "stake": str(stakes[entrant_id]) if entrant_id in stakes else None})
    manifest["submissions"] = subs
    board = _board_rows(lambda page, intervals: selectors.round_board_page(round_, page=page, page_size=BOARD_PAGE,
                                                                           board=intervals))
    yield from writer.member("board.json", _json({"round": round_.number, "rows": board}))
    manifest["boards"] = {"public": "board.json"}
    yield from writer.finish(manifest)


def _static_record(round_: Round) -> Iterator[bytes]:
    benchmark = round_.benchmark
    kind = benchmark.kind_impl
    writer = _Writer()
    manifest = _manifest(round_)
    cases = round_caseset(round_)
    yield from writer.member("cases.json", _json([{"case_id": c.case_id, "split": c.split, "public": c.public}
                                                  for c in cases.cases]))
    manifest["cases"] = "cases.json"
    versions = []
    for tv in TruthVersion.objects.filter(round=round_).order_by("version"):
        truth = truth_for(tv)
        name = f"truth/v{tv.version}.json"
        yield from writer.member(name, _json({"values": truth.values}))
        versions.append({"version": tv.version, "final": tv.is_final, "extra": tv.extra, "file": name})
    manifest["truth_versions"] = versions
    boards: dict[str, list[dict[str, Any]]] = {}
    for split in kind.splits:
        boards[split] = _board_rows(lambda page, intervals, split=split: selectors.leaderboard_page(
            benchmark, split=split, round_=round_, page=page, page_size=BOARD_PAGE, board=intervals))
    on_boards = sorted({row["submission"] for rows in boards.values() for row in rows})
    subs = []
    for sub in Submission.objects.filter(pk__in=on_boards).select_related("entrant").order_by("id"):
        name = f"submissions/{sub.pk}.json"
        yield from writer.member(name, kind.canonical_bytes(kind.load_submission(sub.payload)))
        subs.append({"id": sub.pk, "entrant": sub.entrant.name, "audit_hash": sub.audit_hash,
                     "received_at": sub.received_at, "file": name, "selected": sub.is_selected})
    manifest["submissions"] = subs
    manifest["boards"] = {}
    for split, rows in boards.items():
        name = f"board-{split}.json"
        yield from writer.member(name, _json({"split": split, "rows": rows}))
        manifest["boards"][split] = name
    yield from writer.finish(manifest)
