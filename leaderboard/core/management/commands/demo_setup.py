"""Load the demo: one benchmark of every kind that has a demo, users and scored baselines."""
from __future__ import annotations

import importlib

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from leaderboard.core.models import Entrant, Submission
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from leaderboard.core.services.submissions import entrant_default, submission_create, submission_score

DEMO_MODULES = ("properties", "impact")
DEMO_PASSWORD = "demo-password"
DEMO_USERS = [
    # (username, staff)
    ("admin", True),
    ("alice", False),
    ("bob", False),
]


class Command(BaseCommand):
    help = "Generate and load the demo benchmarks, users and baseline submissions (idempotent)."

    def handle(self, *args, **options):
        User = get_user_model()
        for username, staff in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username, defaults={"is_staff": staff,
                                                                                   "is_superuser": staff})
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save()
            entrant_default(user)
        baseline_owner, _ = User.objects.get_or_create(username="baselines")
        root = settings.DATA_DIR / "demo"
        for name in DEMO_MODULES:
            try:
                module = importlib.import_module(f"leaderboard.demo.{name}")
            except ModuleNotFoundError:
                continue
            directory = root / name
            directory.mkdir(parents=True, exist_ok=True)
            module.write_bundle(directory)
            report = benchmark_load_bundle(directory)
            self.stdout.write(str(report))
            benchmark = report.benchmark
            if Submission.objects.filter(benchmark=benchmark, user=baseline_owner).exists():
                continue
            baselines = module.baseline_submissions(directory)
            for label, data in baselines.items():
                entrant, _ = Entrant.objects.get_or_create(
                    name=f"baseline-{label}", defaults={"owner": baseline_owner,
                                                        "description": f"Baseline: {label}"})
                self._submit(baseline_owner, benchmark, data, entrant.pk)
            # Alice has a submission of her own, so "My submissions" shows something.
            alice = User.objects.get(username="alice")
            self._submit(alice, benchmark, list(baselines.values())[-1], None)
            self.stdout.write(f"  baselines scored on {benchmark.slug}")

    @staticmethod
    def _submit(user, benchmark, data: bytes, entrant) -> None:
        filename = "predictions.json" if data.lstrip()[:1] in (b"{", b"[") else "predictions.csv"
        accepted = submission_create(user=user, benchmark=benchmark, data=data, filename=filename, entrant=entrant)
        # Score now so the leaderboard is filled before the server starts.
        submission_score(submission_id=accepted.submission.pk)
