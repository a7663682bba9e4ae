"""Helpers shared by the round commands: find the benchmark and round, turn errors into CommandError."""
from __future__ import annotations

from contextlib import contextmanager

from django.core.management.base import CommandError

from leaderboard.core.models import Benchmark, Round
from leaderboard.core.services.answers import SubmissionRejected


def benchmark_or_error(slug: str) -> Benchmark:
    benchmark = Benchmark.objects.filter(slug=slug).first()
    if benchmark is None:
        raise CommandError(f"no benchmark {slug!r}")
    return benchmark


def round_or_error(slug: str, number: int) -> Round:
    round_ = Round.objects.filter(benchmark=benchmark_or_error(slug), number=number).first()
    if round_ is None:
        raise CommandError(f"{slug} has no round {number}")
    return round_


# The services name their inputs as the API's fields do; on the command line they are these options.
OPTION_OF_FIELD = {"as_of": "--as-of", "closes_at": "--closes-at", "track": "--track", "interim": "--interim"}


@contextmanager
def refused_as_command_error(what: str):
    try:
        yield
    except SubmissionRejected as exc:
        lines = [f"  {e}" for e in exc.errors]
        options = sorted({OPTION_OF_FIELD[e.column] for e in exc.errors
                          if e.file is None and e.row is None and e.column in OPTION_OF_FIELD})
        lines += [f"  (set it with {option})" for option in options]
        raise CommandError(f"{what} refused, nothing changed:\n" + "\n".join(lines)) from None


def read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
