"""A round's record, checked and rescored: pure, no Django, no network.

The server publishes, once a round is resolved (a static benchmark: once revealed), a zip
``rounds/{n}/record/``: ``manifest.json`` (the benchmark's config, the scoring version, the
committed audit list, what each file is, the SHA-256 of every other file), every counted
submission in the canonical form its audit hash covers, every truth version, the universe (or
the cases) and the published board. ``verify_record`` checks the hashes and the commitment,
scores the submissions again with this package and compares the result with the board.

The commitment (published when the round closes, before any truth) is the SHA-256 of the sorted
lines ``entrant,audit_hash`` (each ending in a newline, UTF-8) of every counted submission:
``commitment``.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import math
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import scoring
from scoring.kinds import get_kind
from scoring.kinds.base import Case, CaseSet, RoundInputs, RoundKind, RoundSubmission, RoundTruth, Truth, Universe

MANIFEST = "manifest.json"
FORMAT = 1
# How many differences a check lists before it stops (the first ones say what is wrong).
MAX_PROBLEMS = 20


def commitment_lines(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """The committed lines ``entrant,audit_hash``, sorted."""
    return sorted(f"{entrant},{audit_hash}" for entrant, audit_hash in pairs)


def commitment(pairs: Iterable[tuple[str, str]]) -> str:
    """SHA-256 (hex) of the sorted lines ``entrant,audit_hash``, each ending in a newline."""
    return hashlib.sha256("".join(line + "\n" for line in commitment_lines(pairs)).encode()).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the files' forms (the server writes them, the check reads them) -------------------------

def number_text(value: float) -> str:
    """A float as the record writes it: its shortest exact form, empty for NaN."""
    return "" if value != value else repr(float(value))


def values_csv(ids: Sequence[str], columns: Sequence[str], values: np.ndarray) -> bytes:
    """``id,<columns>`` with a row per id (a universe's columns, a truth version)."""
    lines = [",".join(["id", *columns])]
    rows = values.tolist()
    for cid, row in zip(ids, rows):
        lines.append(",".join([cid, *map(number_text, row)]))
    return ("\n".join(lines) + "\n").encode()


def read_values_csv(data: bytes) -> tuple[list[str], list[str], np.ndarray]:
    """(ids, columns, values) of a ``values_csv`` file; empty cells are NaN."""
    lines = data.decode().splitlines()
    header = lines[0].split(",")
    ids: list[str] = []
    rows: list[list[float]] = []
    for line in lines[1:]:
        cells = line.split(",")
        ids.append(cells[0])
        rows.append([float(c) if c else math.nan for c in cells[1:]])
    values = np.array(rows, dtype=np.float64).reshape(len(ids), len(header) - 1)
    return ids, header[1:], values


def read_round_submission(data: bytes, universe: Universe) -> RoundSubmission:
    """A round submission from its canonical form (``RoundKind.round_canonical_bytes``)."""
    text = data.decode()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    meta: dict[str, Any] = {}
    # The header, a row per id, then the meta line if any: told apart by the count, since an id may
    # itself begin with "#".
    if len(lines) == len(universe.ids) + 2:
        last = lines.pop()
        if not last.startswith("#"):
            raise ValueError(f"it has {len(universe.ids) + 2} lines, one more than its header and a row for each "
                             f"of the universe's {len(universe.ids)} ids, and the last is not its meta (a line "
                             "starting with #)")
        meta = json.loads(last[1:])
    columns = tuple(lines[0].split(",")[1:])
    ids = [line.split(",", 1)[0] for line in lines[1:]]
    if tuple(ids) != universe.ids:
        raise ValueError("its ids are not the universe's, in the universe's order")
    values = np.array([[float(c) for c in line.split(",")[1:]] for line in lines[1:]],
                      dtype=np.float64).reshape(len(ids), len(columns))
    return RoundSubmission(values=values, columns=columns, meta=meta)


# -- the check ---------------------------------------------------------------------------------

@dataclass
class RecordCheck:
    """What ``verify_record`` found: ``ok`` only when nothing differs.

    ``problems``: the first differences, in words; ``version_needed``: the scoring version the
    record was made with, when it is not the installed one (install it and check again).
    """

    problems: list[str] = field(default_factory=list)
    version_needed: str | None = None
    checked_files: int = 0
    rescored: int = 0
    board_rows: int = 0
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems and self.version_needed is None

    def add(self, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)
        elif len(self.problems) == MAX_PROBLEMS:
            self.problems.append("... and more differences (only the first ones are listed)")

    def summary(self) -> str:
        m = self.manifest
        what = f"{m.get('benchmark', {}).get('slug', '?')} round {m.get('round', {}).get('number', '?')}"
        if self.ok:
            return (f"{what}: the record reproduces: {self.checked_files} files match their SHA-256, the "
                    f"commitment matches its {len(m.get('audit', []))} audit hashes, {self.rescored} submissions "
                    f"rescored with leaderboard-scoring {scoring.__version__} give the published board "
                    f"({self.board_rows} rows) exactly")
        return f"{what}: the record does NOT reproduce"


def _same(published: Any, rescored: Any) -> bool:
    """Exact equality of a published value and a rescored one (None and NaN are both 'no value')."""
    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and v != v)
    if missing(published) or missing(rescored):
        return missing(published) and missing(rescored)
    if isinstance(published, bool) or isinstance(rescored, bool):
        return bool(published) == bool(rescored) and type(published) is type(rescored)
    if isinstance(published, (int, float)) and isinstance(rescored, (int, float, np.floating, np.integer)):
        return float(published) == float(rescored)
    return bool(published == rescored)


def _order_key(value: Any, higher_is_better: bool, received_at: str, sub_id: int) -> tuple[bool, float, dt.datetime, int]:
    missing = value is None or (isinstance(value, float) and not math.isfinite(value))
    v = 0.0 if missing else (-float(value) if higher_is_better else float(value))
    return (missing, v, dt.datetime.fromisoformat(received_at), sub_id)


def verify_record(data: bytes | str | Any, *, commitment_published: str | None = None,
                  audit_hash: str | None = None) -> RecordCheck:
    """Check a record (the zip's bytes, or a path or file object): every file's SHA-256, every
    submission's audit hash, the commitment (and ``commitment_published``, what the round's page
    shows, when given; ``audit_hash``: one's own, which must be in the committed list), then
    rescore every counted submission with the installed ``scoring`` and compare with the board."""
    check = RecordCheck()
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        check.add(f"the record is not a readable zip: {exc}")
        return check
    with archive:
        names = set(archive.namelist())
        if MANIFEST not in names:
            check.add(f"the record has no {MANIFEST}")
            return check
        try:
            manifest = json.loads(archive.read(MANIFEST))
        except (ValueError, zipfile.BadZipFile, OSError) as exc:
            check.add(f"{MANIFEST} cannot be read: {exc}")
            return check
        check.manifest = manifest
        files: dict[str, bytes] = {}
        listed = manifest.get("files", {})
        for name in sorted(names - {MANIFEST}):
            if name not in listed:
                check.add(f"{name}: in the zip but not in the manifest's list of files")
        for name, digest in sorted(listed.items()):
            if name not in names:
                check.add(f"{name}: listed in the manifest but missing from the zip")
                continue
            try:
                content = archive.read(name)
            except (zipfile.BadZipFile, OSError) as exc:  # a damaged member fails its CRC check
                check.add(f"{name}: cannot be read ({exc})")
                continue
            if sha256(content) != digest:
                check.add(f"{name}: SHA-256 {sha256(content)} differs from the manifest's {digest}")
                continue
            files[name] = content
            check.checked_files += 1
        # Every truth version is in the record (interim ones too), not only the one the board was scored with.
        for v in manifest.get("truth_versions", []):
            if isinstance(v, dict) and v.get("file") not in listed:
                check.add(f"truth version {v.get('version')} ({'final' if v.get('final') else 'interim'}) is listed "
                          f"in the manifest but its file {v.get('file')} is not in the record, which holds every "
                          "truth version")

    version = manifest.get("scoring_version")
    if version != scoring.__version__:
        check.version_needed = str(version)
        check.add(f"the record was scored with leaderboard-scoring {version}, this is {scoring.__version__}: "
                  f"pip install 'leaderboard-scoring=={version}' and check again")

    _check_commitment(check, manifest, files, commitment_published, audit_hash)
    if check.problems:
        return check  # rescoring damaged or mismatched inputs would only repeat what is said above
    try:
        if manifest.get("round", {}).get("static"):
            _rescore_static(check, manifest, files)
        else:
            _rescore_round(check, manifest, files)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        check.add(f"the record cannot be rescored: {type(exc).__name__}: {exc}")
    return check


def _check_commitment(check: RecordCheck, manifest: Mapping[str, Any], files: Mapping[str, bytes],
                      published: str | None, own: str | None) -> None:
    audit = [(a["entrant"], a["audit_hash"]) for a in manifest.get("audit", [])]
    digest = commitment(audit)
    if digest != manifest.get("commitment"):
        check.add(f"the commitment {manifest.get('commitment')} is not the SHA-256 of the audit list "
                  f"in the manifest ({digest})")
    if published is not None and published != manifest.get("commitment"):
        check.add(f"the commitment published at close ({published}) differs from the record's "
                  f"({manifest.get('commitment')})")
    committed = set(audit)
    if own is not None and own not in {h for _, h in audit}:
        check.add(f"your audit hash {own} is not in the committed list")
    for sub in manifest.get("submissions", []):
        content = files.get(sub["file"])
        if content is not None and sha256(content) != sub["audit_hash"]:
            check.add(f"{sub['file']} ({sub['entrant']}): its SHA-256 {sha256(content)} is not its audit hash "
                      f"{sub['audit_hash']}")
        if (sub["entrant"], sub["audit_hash"]) not in committed:
            check.add(f"{sub['file']} ({sub['entrant']}, {sub['audit_hash']}) is not in the committed list")
    if not manifest.get("round", {}).get("static"):
        # A round scores every counted submission: each committed one must be in the record (a static
        # benchmark commits to every upload, and its record holds those on a board).
        held = {(sub["entrant"], sub["audit_hash"]) for sub in manifest.get("submissions", [])}
        for entrant, digest in sorted(committed - held):
            check.add(f"{entrant}'s committed submission {digest} is not in the record, which must hold every "
                      "counted submission of the round")


def _compare_board(check: RecordCheck, board: Sequence[Mapping[str, Any]], rescored: Mapping[Any, Mapping[str, Any]],
                   subs: Mapping[Any, Mapping[str, Any]], *, ranking: str, higher: bool, label: str,
                   every: bool = False) -> None:
    """Each published row against the rescored metrics of its submission, then the ranks; an
    entrant has one row at most, and with ``every`` (a round's board) each submission has one.

    ``subs`` and ``rescored`` are keyed by submission id: two entrants who uploaded the same file
    share an audit hash, so a row names its submission by ``submission`` (its id), and its audit
    hash must be that submission's."""
    rows_of = Counter(row.get("entrant") for row in board)
    for entrant, count in sorted(rows_of.items(), key=lambda item: str(item[0])):
        if count > 1:
            check.add(f"{label}: {entrant} has {count} rows (one at most)")
    if every:
        on_board = Counter(row.get("submission") for row in board)
        for sub_id, held in subs.items():
            if not on_board[sub_id]:
                check.add(f"{label}: {held['entrant']}'s submission {held['file']} has no row (every counted "
                          "submission of a round is ranked)")
    keys = []
    for row in board:
        check.board_rows += 1
        where = f"{label} rank {row.get('rank')} ({row.get('entrant')})"
        sub = subs.get(row.get("submission"))
        if sub is None:
            check.add(f"{where}: no submission of the record is its submission {row.get('submission')!r}")
            continue
        if sub["audit_hash"] != row.get("audit_hash"):
            check.add(f"{where}: its audit hash {row.get('audit_hash')} is not its submission's {sub['audit_hash']}")
        if sub["entrant"] != row.get("entrant"):
            check.add(f"{where}: its submission is {sub['entrant']}'s")
        mine = rescored.get(sub["id"]) or {}
        published = row.get("metrics") or {}
        for name in sorted(set(published) | {k for k, v in mine.items() if v is not None}):
            if not _same(published.get(name), mine.get(name)):
                check.add(f"{where}: {name} published {published.get(name)!r}, rescored {mine.get(name)!r}")
        if not _same(row.get("score"), mine.get(ranking)):
            check.add(f"{where}: score published {row.get('score')!r}, rescored {mine.get(ranking)!r}")
        keys.append((_order_key(mine.get(ranking), higher, sub["received_at"], sub["id"]), row))
    for rank, (_, row) in enumerate(sorted(keys, key=lambda k: k[0]), start=1):
        if row.get("rank") is not None and row.get("rank") != rank:
            check.add(f"{label}: {row.get('entrant')} is ranked {row.get('rank')}, the rescored board ranks it {rank}")


def _board(files: Mapping[str, bytes], name: str) -> list[dict[str, Any]]:
    return json.loads(files[name])["rows"]


def _rescore_round(check: RecordCheck, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> None:
    bench = manifest["benchmark"]
    kind = get_kind(bench["kind"])
    if not isinstance(kind, RoundKind):
        raise ValueError(f"kind {bench['kind']!r} has no rounds, but the record is a round's")
    config = bench["config"]
    ids, columns, values = read_values_csv(files[manifest["universe"]])
    universe = Universe(tuple(ids), {c: values[:, j].copy() for j, c in enumerate(columns)})
    scored = manifest.get("scored_version")
    version = next((v for v in manifest["truth_versions"] if v["version"] == scored), None)
    if version is None:
        check.add(f"the manifest names no truth version {scored} (the one its board was scored with)")
        return
    t_ids, t_columns, t_values = read_values_csv(files[version["file"]])
    if tuple(t_ids) != universe.ids:
        check.add(f"{version['file']}: its ids are not the universe's")
        return
    truth = RoundTruth(t_values, tuple(t_columns), final=version["final"],
                       as_of=dt.date.fromisoformat(version["as_of"]) if version.get("as_of") else None,
                       extra=version.get("extra") or {})
    subs = sorted(manifest["submissions"], key=lambda s: s["id"])
    parsed = []
    for sub in subs:
        try:
            parsed.append(read_round_submission(files[sub["file"]], universe))
        except ValueError as exc:
            check.add(f"{sub['file']} ({sub['entrant']}): {exc}")
            return
    width = len(parsed[0].columns) if parsed else 1
    matrix = (np.stack([p.values for p in parsed]) if parsed else np.full((0, len(universe), width), np.nan))
    stakes = (np.array([float(s["stake"]) if s.get("stake") is not None else 0.0 for s in subs])
              if manifest.get("stakes_loaded") else None)
    inputs = RoundInputs(universe=universe, keys=[s["id"] for s in subs], values=matrix,
                         meta=[p.meta for p in parsed], stakes=stakes,
                         benchmark_models=np.array([bool(s.get("benchmark_model")) for s in subs], dtype=bool),
                         truth=truth)
    outcome = kind.score_round_version(inputs, config)
    check.rescored = len(subs)
    rescored = {s["id"]: m for s, m in zip(subs, outcome.metrics)}
    ranking = kind.ranking_metric_for(config)
    _compare_board(check, _board(files, manifest["boards"]["public"]), rescored,
                   {s["id"]: s for s in subs}, ranking=ranking,
                   higher=kind.metric(ranking).higher_is_better, label="board", every=True)


def _rescore_static(check: RecordCheck, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> None:
    bench = manifest["benchmark"]
    kind = get_kind(bench["kind"])
    config = bench["config"]
    cases = CaseSet([Case(c["case_id"], c["split"], c.get("public") or {})
                     for c in json.loads(files[manifest["cases"]])])
    latest = max(manifest["truth_versions"], key=lambda v: v["version"])
    stored = json.loads(files[latest["file"]])
    truth = Truth(values=stored["values"], final=latest["final"], extra=latest.get("extra") or {})
    subs = {s["id"]: s for s in manifest["submissions"]}
    results: dict[Any, dict[str, dict[str, Any]]] = {}
    for sub_id, sub in subs.items():
        parsed = kind.load_submission(json.loads(files[sub["file"]]))
        results[sub_id] = kind.score(parsed, cases=cases, truth=truth, config=config).metrics
    check.rescored = len(subs)
    ranking = kind.ranking_metric_for(config)
    higher = kind.metric(ranking).higher_is_better
    for split, name in manifest["boards"].items():
        _compare_board(check, _board(files, name), {i: r.get(split, {}) for i, r in results.items()}, subs,
                       ranking=ranking, higher=higher, label=f"{split} board")
