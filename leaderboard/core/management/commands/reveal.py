"""Reveal (or hide again) a static benchmark's private leaderboard: refused while submissions are open."""
from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.models import Benchmark
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.benchmarks import benchmark_reveal


class Command(BaseCommand):
    help = ("Reveal the private leaderboard of a benchmark: the private split ranks and its per-case truth is "
            "shown. Refused while submissions are open (close the round first, or wait for its deadline).")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="a static benchmark, closed")
        parser.add_argument("--hide", action="store_true", help="hide the private leaderboard again")

    def handle(self, *args, slug, hide, **options):
        benchmark = Benchmark.objects.filter(slug=slug).first()
        if benchmark is None:
            raise CommandError(f"no benchmark {slug!r}")
        try:
            benchmark_reveal(benchmark=benchmark, reveal=not hide)
        except SubmissionRejected as exc:
            raise CommandError("; ".join(e.message for e in exc.errors)) from None
        benchmark.refresh_from_db()
        if hide:
            self.stdout.write(f"{slug}: private leaderboard hidden")
        else:
            self.stdout.write(f"{slug}: private leaderboard revealed at "
                              f"{benchmark.private_revealed_at:%Y-%m-%d %H:%M:%S} UTC")
