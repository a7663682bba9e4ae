from django.core.management.base import BaseCommand, CommandError

from leaderboard.core.models import Benchmark
from leaderboard.core.services.deid import cases_deidentify, deid_backend
from leaderboard.core.services.rounds import leaderboard_round


class Command(BaseCommand):
    help = ("Run the de-identification pipeline (regex, model, regex) on a benchmark's case texts. "
            "The model stage uses DEID_LLM_URL / DEID_LLM_MODEL / DEID_LLM_API_KEY; without them it is "
            "skipped and cases are marked 'regex only'.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="an impact benchmark")
        parser.add_argument("--case", action="append", dest="cases", help="only this case id (repeatable)")
        parser.add_argument("--regex-only", action="store_true", help="skip the model stage even if configured")

    def handle(self, *args, slug, cases, regex_only, **options):
        benchmark = Benchmark.objects.filter(slug=slug).first()
        if benchmark is None:
            raise CommandError(f"no benchmark {slug!r}")
        if not benchmark.kind_impl.deidentify_text:
            raise CommandError(f"benchmark {slug!r} (kind {benchmark.kind}) has no texts to de-identify")
        round_ = leaderboard_round(benchmark)
        backend = None if regex_only else deid_backend()
        if backend is None:
            self.stdout.write("no model backend configured: running the regex stages only")
        report = cases_deidentify(round_=round_, backend=backend, case_ids=cases)
        self.stdout.write(f"{report.cases} cases de-identified: {report.with_model} with the model stage, "
                          f"{report.regex_only} regex only")
