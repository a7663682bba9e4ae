from django.core.management.base import BaseCommand

from leaderboard.core.management.commands._rounds import refused_as_command_error, round_or_error
from leaderboard.core.models import Submission
from leaderboard.core.services.round_engine import round_close


class Command(BaseCommand):
    help = ("Close round N now (a static benchmark: round 1, before its deadline if you wish): no submission "
            "is accepted after it; each entrant's counted submission is frozen and the commitment published.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the benchmark")
        parser.add_argument("number", type=int, help="the round (a static benchmark: 1)")

    def handle(self, *args, slug, number, **options):
        round_ = round_or_error(slug, number)
        with refused_as_command_error(f"round_close {slug} {number}"):
            round_ = round_close(round_=round_)
        line = f"{slug} round {number}: {round_.status} at {round_.closes_at:%Y-%m-%d %H:%M:%S} UTC"
        if not round_.is_permanent:
            counted = Submission.objects.filter(round=round_, is_counted=True).count()
            line += f"; {counted} counted submission{'' if counted == 1 else 's'} frozen"
        self.stdout.write(line)
