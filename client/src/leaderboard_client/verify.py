"""``lb verify-round SLUG N`` and ``verify_round``: download a round's record and rescore it.

The record (``GET /api/benchmarks/{slug}/rounds/{n}/record/``, published once the round is resolved,
a static benchmark's round 1 once revealed) holds the committed audit list, every counted
submission, every truth version and the published board. The check itself is the scoring
package's (``scoring.record.verify_record``, pure, no Django), installed as ``leaderboard-scoring``
(``pip install 'leaderboard-client[verify]'``, or ``pip install ./scoring`` from a checkout): it
checks the files' SHA-256, the audit hashes and the commitment, and rescores the submissions.
Here the commitment published at the close and the live board are compared with the record too.
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leaderboard_client.client import Client
from leaderboard_client.errors import LeaderboardError

INSTALL_HINT = ("pip install 'leaderboard-client[verify]' (or pip install ./scoring from a checkout of the "
                "server), in the version the record names")


class ScoringNotInstalled(LeaderboardError):
    """``leaderboard-scoring`` (the module ``scoring``) is not installed: nothing can be rescored."""


@dataclass
class RoundVerification:
    """The outcome: ``ok`` only on an exact match. ``problems``: the first differences, in words;
    ``version_needed``: the leaderboard-scoring version to install when it is not the one installed."""

    slug: str
    number: int
    problems: list[str] = field(default_factory=list)
    version_needed: str | None = None
    summary: str = ""
    record_path: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.version_needed is None


def _scoring_record() -> Any:
    try:
        from scoring import record
    except ImportError as exc:
        raise ScoringNotInstalled(f"verify-round rescores with the scoring package, which is not installed "
                                  f"({exc}): {INSTALL_HINT}") from None
    return record


def _live_board(client: Client, slug: str, number: int, split: str | None) -> list[Any]:
    return list(client.iter_leaderboard(slug, round=None if split else number, split=split))


def _compare_live(problems: list[str], live: list[Any], recorded: list[dict[str, Any]], label: str) -> None:
    """The board the server shows now against the record's (rank, entrant, score, audit hash)."""
    if len(live) != len(recorded):
        problems.append(f"{label}: the server shows {len(live)} rows, the record {len(recorded)}")
    for row, rec in zip(live, recorded):
        mine = (row.rank, row.entrant, row.score, row.audit_hash or rec.get("audit_hash"))
        theirs = (rec.get("rank"), rec.get("entrant"), rec.get("score"), rec.get("audit_hash"))
        if mine != theirs:
            problems.append(f"{label}: the server shows rank {row.rank} {row.entrant} score {row.score!r}, "
                            f"the record rank {rec.get('rank')} {rec.get('entrant')} score {rec.get('score')!r}")
            return


def _manifest(path: Path) -> dict[str, Any]:
    """The record's manifest, or {} when it cannot be read (the check then says why)."""
    try:
        with zipfile.ZipFile(path) as archive:
            found = json.loads(archive.read("manifest.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return {}
    return found if isinstance(found, dict) else {}


def verify_round(client: Client, slug: str, number: int, *, record: str | os.PathLike | None = None,
                 audit_hash: str | None = None, keep: str | os.PathLike | None = None) -> RoundVerification:
    """Download round ``number``'s record of ``slug`` (or read ``record``, a file downloaded before),
    check it and rescore it with the installed leaderboard-scoring; compare the commitment the
    server published at close and the board it shows now. ``audit_hash``: your own, which must be
    in the committed list. ``keep``: where to save the downloaded record."""
    rec = _scoring_record()
    out = RoundVerification(slug=slug, number=int(number))
    with tempfile.TemporaryDirectory(prefix="lb-record-") as tmp:
        path = Path(record) if record is not None else Path(keep or Path(tmp) / "record.zip")
        if record is None:
            client.round_record(slug, number, path=path)
        out.record_path = str(path)
        static = _manifest(path).get("round", {}).get("static")
        published = (client.benchmark(slug).raw.get("commitment") if static
                     else client.round(slug, number).raw.get("commitment"))
        check = rec.verify_record(str(path), commitment_published=published, audit_hash=audit_hash)
        out.problems = list(check.problems)
        out.version_needed = check.version_needed
        out.summary = check.summary()
        if not check.problems and check.manifest:
            with zipfile.ZipFile(path) as archive:
                for split, name in check.manifest.get("boards", {}).items():
                    recorded = json.loads(archive.read(name))["rows"]
                    live = _live_board(client, slug, number, split if check.manifest["round"].get("static")
                                       else None)
                    _compare_live(out.problems, live, recorded, f"{split} board")
    return out
