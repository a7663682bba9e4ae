from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.services.benchmarks import BundleError, benchmark_load_bundle


class Command(BaseCommand):
    help = ("Create or update a benchmark from a bundle folder (benchmark.json plus the kind's data files). "
            "Idempotent; truth that changed rescores what it affects; a bad bundle changes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("directory", help="the bundle: benchmark.json and the kind's files")

    def handle(self, *args, directory, **options):
        try:
            report = benchmark_load_bundle(directory)
        except BundleError as exc:
            lines = "\n".join(f"  {e}" for e in exc.errors)
            raise CommandError(f"bundle {directory} rejected, nothing changed:\n{lines}") from None
        self.stdout.write(str(report))
