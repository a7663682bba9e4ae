# PYTHON_ARGCOMPLETE_OK
"""``lb``: the leaderboard from a shell. Reads LEADERBOARD_URL and LEADERBOARD_TOKEN, then what
``lb login`` saved (the environment wins). Every command takes ``--format json``.

Exit codes (stable; scripts may rely on them):

    0  done: listed, uploaded and accepted (with --wait: scored, or accepted waiting for truth)
    1  any other error
    2  usage: bad arguments, no LEADERBOARD_URL, a local file that cannot be read or written
    3  rejected: the server refused the file or request (400, 413, 422); its row/column messages are printed
    4  limit: the daily submission limit (or a request throttle); the reset time is printed
    5  not found or closed: no such benchmark, round or submission; no round open; a closed round (404, 409)
    6  server or network error: 5xx, or no answer after the retries that were safe
    7  timeout: --wait gave up before a final status
    8  not allowed: missing, invalid or revoked token, or not permitted (401, 403)
    9  failed: the submission was accepted but its scoring failed (the reason is printed)
   10  verify-round: the record does not reproduce the board or the commitment (the first differences
       are printed), or it was scored with another leaderboard-scoring version (which one is printed)
  141  the reader of the output went away (lb leaderboard X | head), as for any Unix tool
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import getpass
import io
import json
import os
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from leaderboard_client import __version__
from leaderboard_client.client import DOWNLOADS, Client
from leaderboard_client.config import config_path, config_read, config_write, credentials, normalise_url
from leaderboard_client.errors import (
    ApiError,
    AuthenticationFailed,
    Conflict,
    InvalidRequest,
    LeaderboardError,
    NetworkError,
    NoOpenRound,
    NotFound,
    OutdatedClientWarning,
    PermissionDenied,
    RateLimited,
    ServerError,
    WaitTimeout,
)
from leaderboard_client.models import LeaderboardRow, Submission

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REJECTED = 3
EXIT_LIMIT = 4
EXIT_NOT_FOUND = 5
EXIT_SERVER = 6
EXIT_TIMEOUT = 7
EXIT_AUTH = 8
EXIT_FAILED = 9
EXIT_MISMATCH = 10
EXIT_PIPE = 141  # 128 + SIGPIPE, what a Unix tool killed by a closed pipe reports


class UsageError(Exception):
    pass


def _err(message: str) -> None:
    print(f"lb: {message}", file=sys.stderr)


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


# A text cell starting with one of these is run as a formula by spreadsheets (CSV injection) unless it
# is a plain number: written with a leading ' as the server's CSV downloads do (names are anybody's).
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    text = str(value)
    if isinstance(value, str) and text.startswith(_FORMULA_PREFIXES) and not _PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def _table(columns: list[str], rows: list[list[Any]], out) -> None:
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) and rows
               for i in range(len(columns))]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))]
        return "  ".join(parts).rstrip()

    print(line(columns), file=out)
    print(line(["-" * w for w in widths]), file=out)
    for row in cells:
        print(line(row), file=out)


def _emit(columns: list[str], rows: list[list[Any]], raw: list[Any], fmt: str, out) -> None:
    if fmt == "json":
        json.dump(raw, out, indent=2, default=str)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_csv_value(v) for v in row] for row in rows])
    else:
        _table(columns, rows, out)


# -- commands -------------------------------------------------------------------
def cmd_benchmarks(client: Client, args: argparse.Namespace, out) -> int:
    summaries = client.benchmarks()
    rows, raw = [], []
    for b in summaries:
        if "open_round" in b.raw:  # one request for the whole list
            number = b.open_round
        else:  # a server from before the list said it: ask each benchmark
            try:
                current = client.benchmark(b.slug).current_round
            except ApiError:
                current = None
            number = current.number if current is not None and current.status == "open" else None
        rows.append([b.slug, b.kind, b.title, number])
        raw.append({**b.raw, "open_round": number})
    _emit(["slug", "kind", "title", "open round"], rows, raw, args.format, out)
    return EXIT_OK


def _print_receipt(receipt, out) -> None:
    print(f"id: {receipt.id}", file=out)
    print(f"status: {receipt.status}", file=out)
    print(f"audit_hash: {receipt.audit_hash}", file=out)
    print(f"remaining_today: {_fmt(receipt.remaining_today)}", file=out)
    if receipt.replayed:
        print("replayed: yes (the server already had this upload; nothing new was counted)", file=out)


def _print_submission(sub: Submission, out) -> None:
    print(f"id: {sub.id}", file=out)
    print(f"benchmark: {sub.benchmark}", file=out)
    print(f"entrant: {sub.entrant}", file=out)
    print(f"status: {sub.status}", file=out)
    if sub.status_reason:
        print(f"reason: {sub.status_reason}", file=out)
    print(f"audit_hash: {sub.audit_hash}", file=out)
    if sub.note:
        print(f"note: {sub.note}", file=out)
    if sub.late:
        print("late: yes (received after the deadline: scored, never ranked)", file=out)
    if sub.counted is not None:
        print(f"counted: {_fmt(sub.counted)}", file=out)
    if sub.as_of is not None:
        print(f"as_of: {sub.as_of.isoformat()}", file=out)
    if sub.scores:
        label = "scores (provisional)" if sub.provisional else "scores"
        print(f"{label}:", file=out)
        width = max(len(m) for metrics in sub.scores.values() for m in metrics) if any(sub.scores.values()) else 0
        for split, metrics in sub.scores.items():
            for metric, value in metrics.items():
                print(f"  {split:<8} {metric:<{width}}  {_fmt(value)}", file=out)
    for error in sub.errors:
        print(f"  {error}", file=out)


class Progress:
    """The waiting line on stderr: rewritten in place on a terminal, one line per change otherwise."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last = None
        self.width = 0

    def __call__(self, sub: Submission, elapsed: float) -> None:
        text = f"submission {sub.id}: {sub.status} ({elapsed:.0f} s)"
        if self.tty:
            pad = max(0, self.width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()
            self.width = len(text)
        elif sub.status != self.last:
            self.stream.write(f"lb: {text}\n")
            self.stream.flush()
        self.last = sub.status

    def done(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()


def _wait(client: Client, submission_id: int, timeout: float, interval: float, out, fmt: str) -> int:
    progress = Progress()
    try:
        sub = client.wait(submission_id, timeout=timeout, interval=interval, progress=progress)
    finally:
        progress.done()
    if fmt == "json":
        json.dump(sub.raw, out, indent=2, default=str)
        out.write("\n")
    else:
        _print_submission(sub, out)
    if sub.status == "failed":
        _err(f"submission {sub.id} failed: {sub.status_reason}")
        for error in sub.errors:
            print(f"  {error}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_submit(client: Client, args: argparse.Namespace, out) -> int:
    if args.file == "-":
        predictions: Any = sys.stdin.buffer.read()
    else:
        if not os.path.isfile(args.file):
            raise UsageError(f"no such file: {args.file}")
        predictions = args.file
    receipt = client.submit(args.slug, predictions, entrant=args.entrant, round=args.round,
                            idempotency_key=args.idempotency_key, note=args.note)
    if args.format == "json" and not args.wait:
        json.dump({**receipt.raw, "replayed": receipt.replayed}, out, indent=2)
        out.write("\n")
        return EXIT_OK
    if args.format != "json":
        _print_receipt(receipt, out)
    if not args.wait:
        return EXIT_OK
    if args.format != "json":
        print(file=out)  # the receipt above, the final state below
    out.flush()
    return _wait(client, receipt.id, args.timeout, args.interval, out, args.format)


def cmd_status(client: Client, args: argparse.Namespace, out) -> int:
    if args.wait:
        return _wait(client, args.id, args.timeout, args.interval, out, args.format)
    sub = client.submission(args.id)
    if args.format == "json":
        json.dump(sub.raw, out, indent=2, default=str)
        out.write("\n")
    else:
        _print_submission(sub, out)
    return EXIT_FAILED if sub.status == "failed" else EXIT_OK


def _board_columns(rows: list[LeaderboardRow]) -> list[str]:
    metrics: list[str] = []
    for row in rows:
        metrics.extend(m for m in row.metrics if m not in metrics)
    extra = [name for name in ("rounds", "submissions", "provisional", "as_of", "updated_at")
             if any(getattr(r, name) not in (None, False) for r in rows)]
    if any(r.interval for r in rows):  # the 95% bootstrap interval of score, named as the server's CSV names it
        extra += ["interval_low", "interval_high"]
    if any(r.rank_range for r in rows):
        extra.append("could_rank")
    return ["rank", "entrant", "score", *[m for m in metrics if m != "score"], *extra]


def cmd_leaderboard(client: Client, args: argparse.Namespace, out) -> int:
    if args.page is not None:
        rows = client.leaderboard(args.slug, round=args.round, split=args.split, page=args.page,
                                  page_size=args.page_size, track=args.track).rows
    else:
        rows = list(client.iter_leaderboard(args.slug, round=args.round, split=args.split,
                                            page_size=args.page_size or 1000, track=args.track))
    columns = _board_columns(rows)
    table = []
    for r in rows:
        values = {"rank": r.rank, "entrant": r.entrant, "score": r.score, **{k: v for k, v in r.metrics.items()
                                                                              if k != "score"},
                  "rounds": r.rounds, "submissions": r.submissions, "provisional": r.provisional,
                  "as_of": r.as_of, "updated_at": r.updated_at,
                  "interval_low": r.interval[0] if r.interval else None,
                  "interval_high": r.interval[1] if r.interval else None,
                  "could_rank": (f"{r.rank_range[0]}-{r.rank_range[1]}" if r.rank_range and r.rank_range[0] != r.rank_range[1]
                                 else str(r.rank_range[0]) if r.rank_range else None)}
        table.append([values.get(c) for c in columns])
    _emit(columns, table, [r.raw for r in rows], args.format, out)
    return EXIT_OK


def _json_out(data: Any, out) -> None:
    json.dump(data, out, indent=2, default=str)
    out.write("\n")


def _write_stdout(data: bytes, out) -> None:
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        out.write(data.decode("utf-8"))


def cmd_universe(client: Client, args: argparse.Namespace, out) -> int:
    number = args.round if args.round is not None else client.open_round(args.slug).number
    data = client.universe(args.slug, number)
    if args.output and args.output != "-":
        with open(args.output, "wb") as fh:
            fh.write(data)
        _err(f"wrote round {number}'s universe of {args.slug} to {args.output} ({len(data):,} bytes)")
        if args.format == "json":
            _json_out({"benchmark": args.slug, "round": number, "path": args.output, "bytes": len(data)}, out)
    elif args.format == "json":
        _json_out(list(csv.DictReader(io.StringIO(data.decode("utf-8")))), out)
    else:
        _write_stdout(data, out)
    return EXIT_OK


LARGE_DOWNLOAD = 1 << 20  # bytes: a bar for files from 1 MiB


class BytesProgress:
    """A download's progress bar on stderr, drawn only on a terminal and only for large files."""

    def __init__(self, label: str, stream=None, *, width: int = 30):
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.drawn = False

    def __call__(self, done: int, total: int | None) -> None:
        if not self.tty or (total or done) < LARGE_DOWNLOAD:
            return
        if total:
            filled = int(self.width * done / total)
            bar = "#" * filled + "-" * (self.width - filled)
            text = f"{self.label} [{bar}] {100 * done / total:3.0f}% {done / 1e6:.1f}/{total / 1e6:.1f} MB"
        else:
            text = f"{self.label} {done / 1e6:.1f} MB"
        self.stream.write("\r" + text)
        self.stream.flush()
        self.drawn = True

    def done(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def cmd_download(client: Client, args: argparse.Namespace, out) -> int:
    progress = BytesProgress(f"{args.slug} {args.what}")
    try:
        if args.output and args.output != "-":
            size = client.download(args.slug, args.what, args.output, round=args.round, progress=progress)
        elif args.format == "json":
            data = client.download_bytes(args.slug, args.what, round=args.round)
            text = data.decode("utf-8")
            _json_out(json.loads(text) if args.what == "example" and text.lstrip()[:1] in "{[" else
                      list(csv.DictReader(io.StringIO(text))), out)
            return EXIT_OK
        else:
            out.flush()
            sink = getattr(out, "buffer", None)
            if sink is None:
                data = client.download_bytes(args.slug, args.what, round=args.round)
                out.write(data.decode("utf-8"))
                return EXIT_OK
            size = client.download(args.slug, args.what, sink, round=args.round, progress=progress)
            sink.flush()
            return EXIT_OK
    finally:
        progress.done()
    _err(f"wrote {args.slug}'s {args.what} to {args.output} ({size:,} bytes)")
    if args.format == "json":
        _json_out({"benchmark": args.slug, "what": args.what, "path": args.output, "bytes": size}, out)
    return EXIT_OK


def cmd_submissions(client: Client, args: argparse.Namespace, out) -> int:
    if args.page is not None:
        page = client.submissions_page(args.slug, page=args.page, page_size=args.page_size)
        subs, count = page.rows, page.count
    else:
        subs = list(client.iter_submissions(args.slug, page_size=args.page_size or 1000))
        count = len(subs)
    if args.format == "json":
        _json_out([s.raw for s in subs], out)
        return EXIT_OK
    metric = client.benchmark(args.slug).ranking_metric if subs else ""
    splits: list[str] = []
    for sub in subs:
        splits.extend(split for split in sub.scores if split not in splits)
    columns = ["id", "received", "entrant", "status", *[f"{split} {metric}" for split in splits], "final", "note"]
    rows = [[s.id, s.created_at, s.entrant, s.status, *[s.scores.get(split, {}).get(metric) for split in splits],
             "selected" if s.is_selected else ("counted" if s.counted else ("late" if s.late else "")), s.note or ""]
            for s in subs]
    _emit(columns, rows, [s.raw for s in subs], args.format, out)
    if args.format == "table" and args.page is not None and count > len(subs):
        _err(f"page {args.page}: {len(subs)} of {count} submissions (--page N for another, or leave --page out "
             "for all)")
    return EXIT_OK


def cmd_select(client: Client, args: argparse.Namespace, out) -> int:
    sub = client.select(args.id)
    if args.format == "json":
        _json_out(sub.raw, out)
    else:
        out.write(f"selected submission {sub.id} as {sub.entrant}'s final submission on {sub.benchmark}: the "
                  "private leaderboard ranks it\n")
    return EXIT_OK


def cmd_verify(client: Client, args: argparse.Namespace, out) -> int:
    if not os.path.isfile(args.file):
        raise UsageError(f"no such file: {args.file}")
    result = client.verify(args.slug, args.file)
    if args.format == "json":
        _json_out(result.raw, out)
        return EXIT_OK
    out.write("dry run: nothing was saved and nothing counted against your daily limit\n")
    width = max((len(k) for k in result.metrics), default=0)
    for name, value in result.metrics.items():
        out.write(f"  {name:<{width}}  {_fmt(value)}\n")
    out.write(f"{len(result.results)} case{'s' if len(result.results) != 1 else ''} scored "
              "(--format json shows each one)\n")
    return EXIT_OK


def cmd_login(client: Client | None, args: argparse.Namespace, out) -> int:
    token = args.login_token or args.token or os.environ.get("LEADERBOARD_TOKEN")
    if not token:
        if sys.stdin.isatty():
            token = getpass.getpass("API token (from your profile page): ")
        else:
            token = sys.stdin.readline()
        token = token.strip()
    if not token:
        raise UsageError("no token: pass --token, set LEADERBOARD_TOKEN or type it when asked")
    assert args.resolved_url  # main() refuses to go on without one
    with Client(args.resolved_url, token) as checked:
        me = checked.me()  # an invalid token stops here (exit 8) and nothing is saved
    path = config_write(url=args.resolved_url, token=token)
    if args.format == "json":
        _json_out({"url": args.resolved_url, "username": me.username, "config": str(path)}, out)
    else:
        out.write(f"logged in to {args.resolved_url} as {me.username}; saved to {path} (readable by you alone)\n")
        if os.environ.get("LEADERBOARD_TOKEN") and os.environ["LEADERBOARD_TOKEN"] != token:
            _err("LEADERBOARD_TOKEN is set and wins over the saved token while it is")
    return EXIT_OK


def cmd_logout(client: Client | None, args: argparse.Namespace, out) -> int:
    saved = config_read()
    path = config_path()
    if saved.get("token"):
        config_write(url=saved.get("url", ""), token=None)
    if args.format == "json":
        _json_out({"config": str(path), "removed": bool(saved.get("token"))}, out)
    else:
        out.write(f"removed the saved token from {path}\n" if saved.get("token") else f"no token saved in {path}\n")
    return EXIT_OK


def cmd_whoami(client: Client, args: argparse.Namespace, out) -> int:
    me = client.me()
    creds = client.credentials
    if args.format == "json":
        _json_out({**me.raw, "url": client.url, "url_from": creds.url_from, "token_from": creds.token_from}, out)
        return EXIT_OK
    out.write(f"{me.username} on {client.url}{' (staff)' if me.is_staff else ''}\n")
    out.write(f"token from: {creds.token_from}\n")
    out.write(f"entrants: {', '.join(me.entrants) or f'(none yet: your first upload makes one named {me.username})'}\n")
    for team in me.teams:
        out.write(f"team: {team.get('name')} on {team.get('benchmark')} (id {team.get('id')})\n")
    out.write("may upload: yes\n" if me.can_upload else f"may upload: no: {me.upload_refusal}\n")
    return EXIT_OK


# -- teams (lb team ...) --------------------------------------------------------------
def cmd_team_list(client: Client, args: argparse.Namespace, out) -> int:
    teams = client.teams(args.slug)
    _emit(["id", "name", "members"], [[t.id, t.name, ", ".join(t.members)] for t in teams],
          [t.raw for t in teams], args.format, out)
    return EXIT_OK


def _print_team(team, out) -> None:
    out.write(f"team {team.id}: {team.name} on {team.benchmark}\n")
    out.write(f"members: {', '.join(team.members) or '(none left)'}\n")
    if team.invites:
        out.write(f"invited, no answer yet: {', '.join(team.invites)}\n")
    for e in team.events:
        out.write(f"  {_fmt(e.at)}  {e.kind:<8} {e.detail}\n")


def cmd_team_show(client: Client, args: argparse.Namespace, out) -> int:
    team = client.team(args.team_id)
    if args.format == "json":
        out.write(json.dumps(team.raw, indent=2) + "\n")
    else:
        _print_team(team, out)
    return EXIT_OK


def cmd_team_create(client: Client, args: argparse.Namespace, out) -> int:
    team = client.create_team(args.slug, args.name)
    if args.format == "json":
        _json_out(team.raw, out)
        return EXIT_OK
    out.write(f"created team {team.id}: {team.name} on {team.benchmark}; your uploads there count for it\n")
    return EXIT_OK


def cmd_team_invite(client: Client, args: argparse.Namespace, out) -> int:
    invite_id = client.invite(args.team_id, args.username)
    if args.format == "json":
        _json_out({"id": invite_id, "team": args.team_id, "username": args.username}, out)
        return EXIT_OK
    out.write(f"invited {args.username} (invite {invite_id}); they answer with: lb team accept {invite_id}\n")
    return EXIT_OK


def cmd_team_invites(client: Client, args: argparse.Namespace, out) -> int:
    invites = client.invites()
    _emit(["id", "team", "benchmark", "invited_by"], [[i.id, i.team, i.benchmark, i.invited_by] for i in invites],
          [vars(i) for i in invites], args.format, out)
    return EXIT_OK


def cmd_team_accept(client: Client, args: argparse.Namespace, out) -> int:
    team = client.accept_invite(args.invite_id)
    if args.format == "json":
        _json_out(team.raw, out)
        return EXIT_OK
    out.write(f"joined team {team.id}: {team.name} on {team.benchmark} ({', '.join(team.members)})\n")
    return EXIT_OK


def cmd_team_decline(client: Client, args: argparse.Namespace, out) -> int:
    client.decline_invite(args.invite_id)
    if args.format == "json":
        _json_out({"id": args.invite_id, "status": "declined"}, out)
        return EXIT_OK
    out.write(f"declined invite {args.invite_id}\n")
    return EXIT_OK


def cmd_team_leave(client: Client, args: argparse.Namespace, out) -> int:
    team = client.leave_team(args.team_id)
    if args.format == "json":
        _json_out(team.raw, out)
        return EXIT_OK
    out.write(f"left team {team.id}: {team.name}; your next uploads to {team.benchmark} are your own\n")
    return EXIT_OK


def add_team_parser(sub) -> None:
    """``lb team ...``: create, list, show, invite, invites, accept, decline, leave."""
    team = sub.add_parser("team", help="teams: create, invite, accept, decline, leave, list").add_subparsers(
        dest="team_command", required=True, metavar="ACTION")
    p = team.add_parser("list", help="a benchmark's teams and their members")
    p.add_argument("slug")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=cmd_team_list)
    p = team.add_parser("show", help="one team (members see its pending invites and audit log)")
    p.add_argument("team_id", type=int)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_team_show)
    p = team.add_parser("create", help="create a team on a benchmark; you are its first member")
    p.add_argument("slug")
    p.add_argument("name")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_team_create)
    p = team.add_parser("invite", help="invite a user to your team")
    p.add_argument("team_id", type=int)
    p.add_argument("username")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_team_invite)
    p = team.add_parser("invites", help="your pending invites")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=cmd_team_invites)
    for action, func, what in (("accept", cmd_team_accept, "join the invite's team"),
                               ("decline", cmd_team_decline, "decline the invite")):
        p = team.add_parser(action, help=what)
        p.add_argument("invite_id", type=int)
        p.add_argument("--format", choices=["text", "json"], default="text")
        p.set_defaults(func=func)
    p = team.add_parser("leave", help="leave a team")
    p.add_argument("team_id", type=int)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_team_leave)


# -- webhooks (lb webhook ...) ------------------------------------------------------------
WEBHOOK_EVENTS = ("submission.scored", "submission.failed", "round.opened", "round.closed", "round.interim",
                  "round.resolved", "benchmark.revealed")


def cmd_webhook_add(client: Client, args: argparse.Namespace, out) -> int:
    events = [e.strip() for e in args.events.split(",") if e.strip()] if args.events else list(WEBHOOK_EVENTS)
    made = client.add_webhook(args.target, events, secret=args.secret)
    if args.format == "json":
        _json_out(made, out)
        return EXIT_OK
    out.write(f"webhook {made['id']}: {made['url']} for {', '.join(made['events'])}\n")
    if made.get("secret"):
        out.write(f"secret (shown once; verify X-Leaderboard-Signature with it): {made['secret']}\n")
    return EXIT_OK


def cmd_webhook_list(client: Client, args: argparse.Namespace, out) -> int:
    hooks = client.webhooks()
    _emit(["id", "url", "events", "active", "disabled_reason"],
          [[h["id"], h["url"], ",".join(h["events"]), h["active"], h.get("disabled_reason") or ""] for h in hooks],
          hooks, args.format, out)
    return EXIT_OK


def cmd_webhook_remove(client: Client, args: argparse.Namespace, out) -> int:
    client.remove_webhook(args.webhook_id)
    if args.format == "json":  # the server answers 204 with no body: say what was done
        _json_out({"id": args.webhook_id, "removed": True}, out)
        return EXIT_OK
    out.write(f"webhook {args.webhook_id} removed\n")
    return EXIT_OK


def cmd_webhook_deliveries(client: Client, args: argparse.Namespace, out) -> int:
    if args.redeliver is not None:
        answer = client.redeliver(args.webhook_id, args.redeliver)
        if args.format == "json":
            _json_out(answer, out)
            return EXIT_OK
        out.write(f"delivery {args.redeliver} queued to be sent again\n")
        return EXIT_OK
    rows = client.webhook_deliveries(args.webhook_id)
    _emit(["delivery", "event", "attempt", "status_code", "delivered_at", "error"],
          [[r["delivery"], r["event"], r["attempt"], r["status_code"], r["delivered_at"], r["error"]] for r in rows],
          rows, args.format, out)
    return EXIT_OK


def add_webhook_parser(sub) -> None:
    """``lb webhook ...``: add, list, remove, deliveries (and --redeliver)."""
    hook = sub.add_parser("webhook", help="webhooks: add, list, remove, deliveries").add_subparsers(
        dest="webhook_command", required=True, metavar="ACTION")
    p = hook.add_parser("add", help="signed POSTs of events to a URL of yours")
    p.add_argument("target", metavar="URL", help="where the POSTs go (not --url, the server's address)")
    p.add_argument("--events", help=f"comma-separated, from {','.join(WEBHOOK_EVENTS)} (default: all)")
    p.add_argument("--secret", help="16 to 200 characters (default: the server makes one and prints it once)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_webhook_add)
    p = hook.add_parser("list", help="your webhooks")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=cmd_webhook_list)
    p = hook.add_parser("remove", help="remove a webhook")
    p.add_argument("webhook_id", type=int)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_webhook_remove)
    p = hook.add_parser("deliveries", help="every attempt of a webhook, newest first")
    p.add_argument("webhook_id", type=int)
    p.add_argument("--redeliver", type=int, metavar="DELIVERY", help="send this delivery again now")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=cmd_webhook_deliveries)


def cmd_verify_round(client: Client, args: argparse.Namespace, out) -> int:
    """``lb verify-round SLUG N``: exit 0 only when the record reproduces the board and the commitment."""
    from leaderboard_client.verify import ScoringNotInstalled, verify_round

    try:
        result = verify_round(client, args.slug, args.number, record=args.record, audit_hash=args.audit_hash,
                              keep=args.output)
    except ScoringNotInstalled as exc:
        _err(str(exc))
        return EXIT_USAGE
    if args.format == "json":  # the outcome as data; the exit code says the same as without it
        _json_out({"slug": result.slug, "number": result.number, "ok": result.ok, "problems": result.problems,
                   "version_needed": result.version_needed, "summary": result.summary,
                   "record_path": result.record_path}, out)
        return EXIT_OK if result.ok else EXIT_MISMATCH
    if result.ok:
        out.write(result.summary + "\n")
        return EXIT_OK
    _err(f"{args.slug} round {args.number}: the record does NOT reproduce; first differences:")
    for problem in result.problems:
        print(f"  {problem}", file=sys.stderr)
    if result.version_needed:
        _err(f"install the version it was scored with: pip install 'leaderboard-scoring=={result.version_needed}'")
    return EXIT_MISMATCH


def add_verify_parser(sub) -> None:
    """``lb verify-round SLUG N``."""
    p = sub.add_parser("verify-round", help="download a resolved round's record and rescore it with the installed "
                                            "leaderboard-scoring: exit 0 only on an exact match")
    p.add_argument("slug")
    p.add_argument("number", type=int, help="the round (a static benchmark: 1)")
    p.add_argument("--record", help="check this record file instead of downloading it")
    p.add_argument("-o", "--output", help="keep the downloaded record in this file")
    p.add_argument("--audit-hash", help="your submission's audit hash: it must be in the committed list")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_verify_round)


# -- errors ---------------------------------------------------------------------
def _report(exc: LeaderboardError) -> int:
    """Print what went wrong, the server's row/column messages included; return the exit code."""
    if isinstance(exc, RateLimited):
        _err(exc.detail)
        if exc.reset_at is not None:
            wait = f" (Retry-After: {exc.retry_after:.0f} s)" if exc.retry_after is not None else ""
            _err(f"resets at {exc.reset_at.strftime('%Y-%m-%d %H:%M:%S')} UTC{wait}")
        return EXIT_LIMIT
    if isinstance(exc, WaitTimeout):
        _err(str(exc))
        return EXIT_TIMEOUT
    if isinstance(exc, NetworkError):
        _err(str(exc))
        return EXIT_SERVER
    if isinstance(exc, NoOpenRound):
        _err(str(exc))
        return EXIT_NOT_FOUND
    if isinstance(exc, ApiError):
        prefix = "rejected: " if isinstance(exc, InvalidRequest) else ""
        _err(f"{prefix}{exc.detail} (HTTP {exc.status})")
        if len(exc.errors) > 1 or (exc.errors and str(exc.errors[0]) != exc.detail):
            for item in exc.errors:
                print(f"  {item}", file=sys.stderr)
        if any(item.column == "round" for item in exc.errors):  # the server's field is this command's option
            _err("name the round with --round N")
        if isinstance(exc, InvalidRequest):
            return EXIT_REJECTED
        if isinstance(exc, (NotFound, Conflict)):
            return EXIT_NOT_FOUND
        if isinstance(exc, (AuthenticationFailed, PermissionDenied)):
            return EXIT_AUTH
        if isinstance(exc, ServerError):
            return EXIT_SERVER
        return EXIT_ERROR
    _err(str(exc))
    return EXIT_ERROR


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lb", description="The leaderboard server from a shell (LEADERBOARD_URL, LEADERBOARD_TOKEN).",
        epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="server address (default: $LEADERBOARD_URL, then what lb login saved)")
    parser.add_argument("--token", help="API token (default: $LEADERBOARD_TOKEN, then what lb login saved)")
    parser.add_argument("--version", action="version", version=f"lb {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("benchmarks", help="slug, kind, title and open round of every benchmark")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=cmd_benchmarks)

    def waiting(p: argparse.ArgumentParser) -> None:
        p.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits (default 600)")
        p.add_argument("--interval", type=float, default=1.0, help="seconds between polls (default 1)")
        p.add_argument("--format", choices=["text", "json"], default="text")

    p = sub.add_parser("submit", help="upload a file of predictions")
    p.add_argument("slug")
    p.add_argument("file", help="the CSV or JSON file ('-' reads standard input)")
    p.add_argument("--round", type=int, help="the round, when several are open")
    p.add_argument("--entrant", help="one of your entrants (default: your first)")
    p.add_argument("--wait", action="store_true", help="follow it to a final status and print the scores")
    p.add_argument("-m", "--note", help="your words about this upload (at most 1,000 characters), shown to you alone")
    p.add_argument("--idempotency-key", metavar="KEY",
                   help="send this key (default: a new one per run); run again with the same key and file "
                        "after a lost answer, and the server returns the first upload instead of counting another")
    waiting(p)
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("status", help="one submission")
    p.add_argument("id", type=int)
    p.add_argument("--wait", action="store_true", help="follow it to a final status")
    waiting(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("leaderboard", help="a benchmark's board (standings for round benchmarks) or a round's")
    p.add_argument("slug")
    p.add_argument("--round", type=int, help="that round's board")
    p.add_argument("--split", choices=["public", "private"], help="static kinds: private after the reveal")
    p.add_argument("--track", help="a round benchmark's standings of that track (portfolio: weekly, monthly)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--page", type=int, help="one page only (default: every row)")
    p.add_argument("--page-size", type=int, help="rows per page (server default 100, at most 1000)")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("universe", help="download a round's universe CSV (the open round by default)")
    p.add_argument("slug")
    p.add_argument("--round", type=int)
    p.add_argument("-o", "--output", help="write to this file (default: standard output)")
    p.add_argument("--format", choices=["csv", "json"], default="csv",
                   help="csv: the file as served; json: its rows (or, with -o, what was written)")
    p.set_defaults(func=cmd_universe)

    p = sub.add_parser("download", help="download a benchmark's cases, training set, example file or universe")
    p.add_argument("slug")
    p.add_argument("what", choices=DOWNLOADS)
    p.add_argument("--round", type=int, help="universe: that round's (default: the open round)")
    p.add_argument("-o", "--output", help="write to this file (default: standard output); a bar shows the "
                                          "progress of large files on a terminal")
    p.add_argument("--format", choices=["csv", "json"], default="csv",
                   help="csv: the file as served; json: its rows (or, with -o, what was written)")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("submissions", help="your submissions to a benchmark: status, scores, note")
    p.add_argument("slug")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--page", type=int, help="one page only (default: every submission)")
    p.add_argument("--page-size", type=int, help="submissions per page (server default 100, at most 1000)")
    p.set_defaults(func=cmd_submissions)

    p = sub.add_parser("select", help="select a scored submission as your final one (the private board's)")
    p.add_argument("id", type=int)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_select)

    p = sub.add_parser("verify", help="dry run: score a file on the cases whose truth you may see; nothing saved")
    p.add_argument("slug")
    p.add_argument("file")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("login", help="check a token and save it with the server's address (mode 0600)")
    p.add_argument("--url", dest="login_url", help="the server (default: --url before the command, "
                                                   "$LEADERBOARD_URL, or the saved one)")
    p.add_argument("--token", dest="login_token", help="the token (default: $LEADERBOARD_TOKEN, else asked)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_login, offline=True)

    p = sub.add_parser("logout", help="remove the saved token")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_logout, offline=True)

    p = sub.add_parser("whoami", help="who the token belongs to, where it came from, entrants and teams")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_whoami)
    add_team_parser(sub)
    add_webhook_parser(sub)


    add_verify_parser(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, OutdatedClientWarning):
        _err(f"warning: {message}")
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), file=sys.stderr, end="")


def _autocomplete(parser: argparse.ArgumentParser) -> None:
    """Shell completion through argcomplete, when the shell asks (``eval "$(register-python-argcomplete lb)"``)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete  # only when completing: it is not needed to run a command
    except ImportError:
        return
    argcomplete.autocomplete(parser)


def main(argv: Sequence[str] | None = None, *, out=None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    _autocomplete(parser)
    args = parser.parse_args(argv)
    creds = credentials(getattr(args, "login_url", None) or args.url, args.token or None)
    if not creds.url and args.func is not cmd_logout:
        parser.print_usage(sys.stderr)
        _err("set LEADERBOARD_URL (or pass --url, or run lb login --url URL) to the server's address, "
             "e.g. http://127.0.0.1:8000")
        return EXIT_USAGE
    args.resolved_url = normalise_url(creds.url)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            if getattr(args, "offline", False):  # login and logout make their own client, or none
                return args.func(None, args, out)
            with Client(creds.url, creds.token) as client:
                client.credentials = creds  # where each came from, as resolved here
                return args.func(client, args, out)
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except LeaderboardError as exc:
        return _report(exc)
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (``lb leaderboard X | head``): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    except OSError as exc:  # a local file: -o into a folder that does not exist, a full disk, no permission
        where = f"{exc.filename}: " if exc.filename else ""
        _err(f"{where}{exc.strerror or exc}")
        return EXIT_USAGE


if __name__ == "__main__":  # python -m leaderboard_client.cli
    sys.exit(main())
