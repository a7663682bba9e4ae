"""Close a round (a static benchmark's permanent round too): no submission is accepted after it."""
from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.models import Round
from leaderboard.core.services.rounds import round_set_status
from leaderboard.core.services.submissions import SubmissionRejected


class Command(BaseCommand):
    help = "Close round N of a benchmark: no submission is accepted after it (a static benchmark's round is 1)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("number", type=int)

    def handle(self, *args, slug, number, **options):
        round_ = Round.objects.filter(benchmark__slug=slug, number=number).first()
        if round_ is None:
            raise CommandError(f"benchmark {slug!r} has no round {number}")
        try:
            round_ = round_set_status(round_=round_, status=Round.Status.CLOSED)
        except SubmissionRejected as exc:
            raise CommandError("; ".join(e.message for e in exc.errors)) from None
        self.stdout.write(f"{slug} round {number}: {round_.status} at {round_.closes_at:%Y-%m-%d %H:%M:%S} UTC")
