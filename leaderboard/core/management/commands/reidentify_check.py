from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.models import Benchmark
from leaderboard.core.services.deid import deid_backend, round_reidentification_check
from leaderboard.core.services.rounds import leaderboard_round


def _pct(value) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


class Command(BaseCommand):
    help = ("Ask the configured model to name the ticker and price move of each redacted case and report the "
            "re-identification rate, price recall within 2 points, and the MAE and Pearson of its guesses.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="an impact benchmark")
        parser.add_argument("--limit", type=int, default=None, help="check only the first N cases")

    def handle(self, *args, slug, limit, **options):
        benchmark = Benchmark.objects.filter(slug=slug).first()
        if benchmark is None:
            raise CommandError(f"no benchmark {slug!r}")
        if not benchmark.kind_impl.deidentify_text:
            raise CommandError(f"benchmark {slug!r} (kind {benchmark.kind}) has no texts to check")
        backend = deid_backend()
        if backend is None:
            raise CommandError("no model backend: set DEID_LLM_URL and DEID_LLM_MODEL (and DEID_LLM_API_KEY)")
        report = round_reidentification_check(round_=leaderboard_round(benchmark), backend=backend, limit=limit)
        self.stdout.write(
            f"cases checked: {report.cases} ({report.answered} answers parsed)\n"
            f"ticker re-identification: {report.ticker_hits}/{report.cases} = {_pct(report.reidentification_rate)}\n"
            f"price recall within {report.tolerance_pp:g} points: {report.price_hits}/{report.cases} = "
            f"{_pct(report.price_recall_within)}\n"
            f"MAE of guessed moves: {'n/a' if report.mae is None else f'{report.mae:.1f} points'}\n"
            f"Pearson of guessed moves: {'n/a' if report.pearson is None else f'{report.pearson:.3f}'}"
        )
        for line in report.log:
            self.stdout.write(f"  {line}")
