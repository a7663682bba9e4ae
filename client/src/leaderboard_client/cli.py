"""``lb``: the leaderboard from a shell. Reads LEADERBOARD_URL and LEADERBOARD_TOKEN.

Exit codes (stable; scripts may rely on them):

    0  done: listed, uploaded and accepted (with --wait: scored, or accepted waiting for truth)
    1  any other error
    2  usage: bad arguments, no LEADERBOARD_URL, a local file that cannot be read
    3  rejected: the server refused the file or request (400, 413, 422); its row/column messages are printed
    4  limit: the daily submission limit (or a request throttle); the reset time is printed
    5  not found or closed: no such benchmark, round or submission; no round open; a closed round (404, 409)
    6  server or network error: 5xx, or no answer after the retries that were safe
    7  timeout: --wait gave up before a final status
    8  not allowed: missing, invalid or revoked token, or not permitted (401, 403)
    9  failed: the submission was accepted but its scoring failed (the reason is printed)
  141  the reader of the output went away (lb leaderboard X | head), as for any Unix tool
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from leaderboard_client import __version__
from leaderboard_client.client import Client
from leaderboard_client.errors import (
    ApiError,
    AuthenticationFailed,
    Conflict,
    InvalidRequest,
    LeaderboardError,
    NetworkError,
    NoOpenRound,
    NotFound,
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


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


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
        current = b.current_round
        if "current_round" not in b.raw:  # the list does not carry it: ask each benchmark
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
                            idempotency_key=args.idempotency_key)
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
    if any(r.rank_range for r in rows):
        extra.append("could_rank")
    return ["rank", "entrant", "score", *[m for m in metrics if m != "score"], *extra]


def cmd_leaderboard(client: Client, args: argparse.Namespace, out) -> int:
    if args.page is not None:
        rows = client.leaderboard(args.slug, round=args.round, split=args.split, page=args.page,
                                  page_size=args.page_size).rows
    else:
        rows = list(client.iter_leaderboard(args.slug, round=args.round, split=args.split,
                                            page_size=args.page_size or 1000))
    columns = _board_columns(rows)
    table = []
    for r in rows:
        values = {"rank": r.rank, "entrant": r.entrant, "score": r.score, **{k: v for k, v in r.metrics.items()
                                                                              if k != "score"},
                  "rounds": r.rounds, "submissions": r.submissions, "provisional": r.provisional,
                  "as_of": r.as_of, "updated_at": r.updated_at,
                  "could_rank": (f"{r.rank_range[0]}-{r.rank_range[1]}" if r.rank_range and r.rank_range[0] != r.rank_range[1]
                                 else str(r.rank_range[0]) if r.rank_range else None)}
        table.append([values.get(c) for c in columns])
    _emit(columns, table, [r.raw for r in rows], args.format, out)
    return EXIT_OK


def cmd_universe(client: Client, args: argparse.Namespace, out) -> int:
    number = args.round if args.round is not None else client.open_round(args.slug).number
    data = client.universe(args.slug, number)
    if args.output and args.output != "-":
        with open(args.output, "wb") as fh:
            fh.write(data)
        _err(f"wrote round {number}'s universe of {args.slug} to {args.output} ({len(data):,} bytes)")
    else:
        out.flush()
        buffer = getattr(out, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            out.write(data.decode("utf-8"))
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
    out.write(f"created team {team.id}: {team.name} on {team.benchmark}; your uploads there count for it\n")
    return EXIT_OK


def cmd_team_invite(client: Client, args: argparse.Namespace, out) -> int:
    invite_id = client.invite(args.team_id, args.username)
    out.write(f"invited {args.username} (invite {invite_id}); they answer with: lb team accept {invite_id}\n")
    return EXIT_OK


def cmd_team_invites(client: Client, args: argparse.Namespace, out) -> int:
    invites = client.invites()
    _emit(["id", "team", "benchmark", "invited_by"], [[i.id, i.team, i.benchmark, i.invited_by] for i in invites],
          [vars(i) for i in invites], args.format, out)
    return EXIT_OK


def cmd_team_accept(client: Client, args: argparse.Namespace, out) -> int:
    team = client.accept_invite(args.invite_id)
    out.write(f"joined team {team.id}: {team.name} on {team.benchmark} ({', '.join(team.members)})\n")
    return EXIT_OK


def cmd_team_decline(client: Client, args: argparse.Namespace, out) -> int:
    client.decline_invite(args.invite_id)
    out.write(f"declined invite {args.invite_id}\n")
    return EXIT_OK


def cmd_team_leave(client: Client, args: argparse.Namespace, out) -> int:
    team = client.leave_team(args.team_id)
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
    p.set_defaults(func=cmd_team_create)
    p = team.add_parser("invite", help="invite a user to your team")
    p.add_argument("team_id", type=int)
    p.add_argument("username")
    p.set_defaults(func=cmd_team_invite)
    p = team.add_parser("invites", help="your pending invites")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=cmd_team_invites)
    for action, func, what in (("accept", cmd_team_accept, "join the invite's team"),
                               ("decline", cmd_team_decline, "decline the invite")):
        p = team.add_parser(action, help=what)
        p.add_argument("invite_id", type=int)
        p.set_defaults(func=func)
    p = team.add_parser("leave", help="leave a team")
    p.add_argument("team_id", type=int)
    p.set_defaults(func=cmd_team_leave)


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
    parser.add_argument("--url", help="server address (default: $LEADERBOARD_URL)")
    parser.add_argument("--token", help="API token (default: $LEADERBOARD_TOKEN)")
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
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--page", type=int, help="one page only (default: every row)")
    p.add_argument("--page-size", type=int, help="rows per page (server default 100, at most 1000)")
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("universe", help="download a round's universe CSV (the open round by default)")
    p.add_argument("slug")
    p.add_argument("--round", type=int)
    p.add_argument("-o", "--output", help="write to this file (default: standard output)")
    p.set_defaults(func=cmd_universe)
    add_team_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, *, out=None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    url = args.url or os.environ.get("LEADERBOARD_URL")
    if not url:
        parser.print_usage(sys.stderr)
        _err("set LEADERBOARD_URL (or pass --url) to the server's address, e.g. http://127.0.0.1:8000")
        return EXIT_USAGE
    try:
        with Client(url, args.token or os.environ.get("LEADERBOARD_TOKEN") or None) as client:
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


if __name__ == "__main__":  # python -m leaderboard_client.cli
    sys.exit(main())
