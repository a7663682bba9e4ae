from django.core.management.base import BaseCommand

from leaderboard.core.management.commands._rounds import refused_as_command_error
from leaderboard.core.services.entrants import entrant_flag


class Command(BaseCommand):
    help = "Mark an entrant as a benchmark model (it counts in the benchmark meta model), or not."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the entrant's name, as on the boards")
        parser.add_argument("--benchmark-model", choices=["on", "off"], required=True,
                            help="on: counts in the benchmark meta model (BMC); off: does not")

    def handle(self, *args, name, benchmark_model, **options):
        with refused_as_command_error(f"entrant_flag {name}"):
            entrant = entrant_flag(name=name, benchmark_model=benchmark_model == "on")
        self.stdout.write(f"{entrant.name}: benchmark model {'on' if entrant.is_benchmark_model else 'off'}")
