from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.inputs import aware_datetime_from_text
from leaderboard.core.management.commands._rounds import benchmark_or_error, read_file, refused_as_command_error
from leaderboard.core.services.round_engine import round_open


class Command(BaseCommand):
    help = "Open the benchmark's next round with a universe file; prints the new round's number."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="a round benchmark (kinds signals, ranking, portfolio)")
        parser.add_argument("universe_file", help="CSV: id (portfolio: option,start_price) plus the kind's columns")
        parser.add_argument("--closes-at", help="ISO 8601, e.g. 2026-01-09T18:00:00Z; the round closes by itself then")
        parser.add_argument("--track", default="", help="portfolio: weekly or monthly")

    def handle(self, *args, slug, universe_file, closes_at, track, **options):
        benchmark = benchmark_or_error(slug)
        when = None
        if closes_at:
            when = aware_datetime_from_text(closes_at)
            if when is None:
                raise CommandError(f"--closes-at {closes_at!r} is not an ISO 8601 time with a zone (e.g. ...Z)")
        with refused_as_command_error(f"round_open {slug} {universe_file}"):
            round_ = round_open(benchmark=benchmark, data=read_file(universe_file), filename=Path(universe_file).name,
                                closes_at=when, track=track)
        self.stdout.write(str(round_.number))
        self.stderr.write(f"round {round_.number} of {slug} is open with {round_.universe_size} ids"
                          + (f", closes at {round_.closes_at:%Y-%m-%d %H:%M} UTC" if round_.closes_at else ""))
