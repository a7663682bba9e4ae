from pathlib import Path

from django.core.management.base import BaseCommand

from leaderboard.core.management.commands._rounds import read_file, refused_as_command_error, round_or_error
from leaderboard.core.services.round_engine import stakes_load


class Command(BaseCommand):
    help = ("Replace round N's stakes from a CSV entrant,stake (entrant names, stakes >= 0); signals rounds only "
            "(stakes weigh the meta model).")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="a signals benchmark")
        parser.add_argument("number", type=int, help="the round")
        parser.add_argument("stakes_csv", help="CSV: entrant,stake")

    def handle(self, *args, slug, number, stakes_csv, **options):
        round_ = round_or_error(slug, number)
        with refused_as_command_error(f"stakes_load {slug} {number}"):
            n = stakes_load(round_=round_, data=read_file(stakes_csv), filename=Path(stakes_csv).name)
        self.stdout.write(f"round {number} of {slug}: {n} stakes stored")
