from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.inputs import date_from_text
from leaderboard.core.management.commands._rounds import read_file, refused_as_command_error, round_or_error
from leaderboard.core.services.round_engine import round_truth_load


class Command(BaseCommand):
    help = ("A new truth version for round N: final (the round resolves once scored) or, with --interim "
            "--as-of, a dated snapshot whose scores are provisional. The whole round is scored asynchronously.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="a round benchmark")
        parser.add_argument("number", type=int, help="the round, closed")
        parser.add_argument("truth_file", help="CSV: id,target (ranking: id,return_<h>...; portfolio: option,end_price)")
        parser.add_argument("--interim", action="store_true", help="a dated snapshot (needs --as-of); the round stays unresolved")
        parser.add_argument("--as-of", help="YYYY-MM-DD: the date the snapshot describes")

    def handle(self, *args, slug, number, truth_file, interim, as_of, **options):
        round_ = round_or_error(slug, number)
        day = None
        if as_of:
            day = date_from_text(as_of)
            if day is None:
                raise CommandError(f"--as-of {as_of!r} is not a date YYYY-MM-DD that exists")
        with refused_as_command_error(f"truth_load {slug} {number}"):
            version = round_truth_load(round_=round_, data=read_file(truth_file), filename=Path(truth_file).name,
                                       final=not interim, as_of=day)
        kind = "interim, as of " + str(day) if interim else "final"
        self.stdout.write(f"round {number} of {slug}: truth version {version.version} ({kind}) stored; "
                          "the round is being scored")
