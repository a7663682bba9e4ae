"""Load the demo: one benchmark of every kind that has a demo, users and scored baselines.

The antibody and portfolio benchmarks are real published data (leaderboard/demo/published/: Ginkgo's
GDPa1 and CapitalBench's official rounds, with their licences); the other kinds' demos are generated.
"""
from __future__ import annotations

import datetime as dt
import json

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils import timezone

from leaderboard.core.models import Benchmark, Entrant, Round, Submission, TruthVersion
from leaderboard.core.services.accounts import email_mark_verified
from leaderboard.core.services.benchmarks import benchmark_load_bundle, parse_deadline
from leaderboard.core.services.entrants import entrant_default, entrant_flag
from leaderboard.core.services.round_engine import (
    round_close,
    round_open,
    round_truth_load,
    round_version_score,
    stakes_load,
)
from leaderboard.core.services.rounds import round_set_deadline, round_takes_submissions
from leaderboard.core.services.submissions import submission_score
from leaderboard.core.services.uploads import submission_create
from leaderboard.demo import demo_modules
from leaderboard.demo import properties as properties_demo

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
                email_mark_verified(user=user, email=f"{username}@example.org")  # demo users may upload at once
            entrant_default(user)
        baseline_owner, _ = User.objects.get_or_create(username="baselines")
        root = settings.DATA_DIR / "demo"
        # Every module of leaderboard/demo that declares DEMO, as scoring.kinds finds kinds.
        for module in demo_modules("bundle"):
            name = module.__name__.rpartition(".")[2]
            directory = root / name
            directory.mkdir(parents=True, exist_ok=True)
            module.write_bundle(directory)
            report = benchmark_load_bundle(directory)
            self.stdout.write(str(report))
            benchmark = report.benchmark
            if Submission.objects.filter(benchmark=benchmark, user=baseline_owner).exists():
                continue
            baselines = module.baseline_submissions(directory)
            described = getattr(module, "BASELINES", None)
            for label, data in baselines.items():
                name, description = f"baseline-{label}", f"Baseline: {label}"
                if isinstance(described, dict) and label in described:  # published baselines keep their names
                    name, description = label, f"Published baseline: {described[label]}"
                entrant, _ = Entrant.objects.get_or_create(
                    name=name, defaults={"owner": baseline_owner, "description": description})
                self._submit(baseline_owner, benchmark, data, entrant.pk)
            # Alice has a submission of her own, so "My submissions" shows something: a model made
            # from the downloads where the module has one, else the last baseline's file.
            alice = User.objects.get(username="alice")
            own = getattr(module, "composition_submission", None)
            self._submit(alice, benchmark, own(directory) if own else list(baselines.values())[-1], None)
            self.stdout.write(f"  baselines scored on {benchmark.slug}")
        # Round kinds: generated rounds are opened, submitted to and scored here; published ones replayed.
        for module in demo_modules("rounds"):
            self._round_demo(module, root / module.__name__.rpartition(".")[2])
        for module in demo_modules("published_rounds"):
            self._published_rounds_demo(module, root / module.__name__.rpartition(".")[2])
        benchmark = late_demo_load(root / "late")
        self.stdout.write(f"  {benchmark.slug}: ended {properties_demo.LATE_CLOSED_AT[:10]}, late uploads scored "
                          "and marked late")

    def _round_demo(self, module, directory) -> None:
        """Resolved rounds (standings), one resolving through daily snapshots, one open round.

        Baselines each have their own owner (the daily limit is per user); alice takes part in
        two rounds. Every truth version is scored here, so the pages are full at start.
        """
        User = get_user_model()
        benchmark = self._round_benchmark(module, directory, module.BASELINES, "Baseline")
        if benchmark is None:
            return
        if getattr(module, "BENCHMARK_MODEL", None):
            entrant_flag(name=module.BENCHMARK_MODEL, benchmark_model=True)
        alice = User.objects.get(username="alice")
        today = timezone.now().date()
        for number in range(1, module.ROUNDS + 1):
            demo = module.DemoRound(number)
            weeks_ago = module.ROUNDS - number
            last = number == module.ROUNDS
            closes_at = timezone.now() + dt.timedelta(days=6) if last else None
            round_ = round_open(benchmark=benchmark, data=demo.universe_csv(), filename=f"universe-round-{number}.csv",
                                closes_at=closes_at)
            for label in module.BASELINES:
                submission_create(user=User.objects.get(username=label), benchmark=benchmark,
                                  data=demo.submission_csv(label), filename=f"{label}.csv", entrant=label)
            if number in (module.ROUNDS - 2, module.ROUNDS - 1):
                submission_create(user=alice, benchmark=benchmark, data=demo.submission_csv("alice"),
                                  filename="alice.csv", entrant="alice",
                                  note=f"round {number}: the baseline with my own features (a note only alice sees)")
            if last:
                self.stdout.write(f"  {benchmark.slug}: round {number} open until {closes_at:%Y-%m-%d %H:%M} UTC")
                break
            if hasattr(demo, "stakes_csv"):
                stakes_load(round_=round_, data=demo.stakes_csv())
            round_close(round_=round_)
            opened = timezone.now() - dt.timedelta(weeks=weeks_ago + 1)
            Round.objects.filter(pk=round_.pk).update(opens_at=opened, closes_at=opened + dt.timedelta(days=6))
            start = today - dt.timedelta(weeks=weeks_ago) - dt.timedelta(days=module.INTERIM_DAYS)
            resolving = number == module.ROUNDS - 1
            window = getattr(module, "WINDOW_DAYS", 20)  # days until the final truth
            for day in range(module.INTERIM_DAYS):
                progress = (day + 1) / window
                round_truth_load(round_=round_, data=demo.truth_csv(progress), filename=f"targets-day-{day + 1}.csv",
                                 final=False, as_of=start + dt.timedelta(days=day))
            if not resolving:
                round_truth_load(round_=round_, data=demo.truth_csv(1.0), filename="targets-final.csv", final=True,
                                 as_of=min(start + dt.timedelta(days=window), today))
            self._score_versions(round_)
            self.stdout.write(f"  {benchmark.slug}: round {number} "
                              + ("resolving (daily snapshots)" if resolving else "resolved"))

    def _published_rounds_demo(self, module, directory) -> None:
        """Published rounds replayed as they happened (``module.rounds()``): each opened with its
        universe, every published model's portfolio uploaded, closed, its dates set to the real ones,
        then its interim price snapshots and final prices loaded and scored here, in order, so the
        pages are full at start. Then one open practice round of our own, where alice has a portfolio.
        Each model has its own owner (the daily limit is per user)."""
        User = get_user_model()
        benchmark = self._round_benchmark(module, directory, [model for model, _ in module.models()],
                                          "Published model, its official portfolios")
        if benchmark is None:
            return
        for real in module.rounds():
            round_ = round_open(benchmark=benchmark, data=real.universe_csv(), filename=f"{real.round_id}.csv",
                                track=real.track)
            for upload in real.uploads():
                submission_create(user=User.objects.get(username=upload.model), benchmark=benchmark,
                                  data=upload.data(), filename=f"{upload.model}.json", entrant=upload.model)
            round_close(round_=round_)
            Round.objects.filter(pk=round_.pk).update(opens_at=real.opened_at, closes_at=real.closes_at)
            Submission.objects.filter(round=round_).update(received_at=real.submitted_at)
            for day, data in real.snapshots():
                round_truth_load(round_=round_, data=data, filename=f"prices-{day}.csv", final=False, as_of=day)
            round_truth_load(round_=round_, data=real.final_csv(), filename=f"prices-{real.exit_date}.csv",
                             final=True, as_of=real.exit_date)
            self._score_versions(round_)
            self.stdout.write(f"  {benchmark.slug}: round {round_.number} ({real.round_id}, {real.track}) resolved")
        round_ = round_open(benchmark=benchmark, data=module.practice_universe_csv(), filename="practice.csv",
                            track="weekly", closes_at=timezone.now() + dt.timedelta(days=5))
        submission_create(user=User.objects.get(username="alice"), benchmark=benchmark, filename="portfolio.json",
                          entrant=None, data=json.dumps(module.alice_portfolio()).encode())
        self.stdout.write(f"  {benchmark.slug}: round {round_.number} (practice, weekly) open until "
                          f"{round_.closes_at:%Y-%m-%d %H:%M} UTC")

    @staticmethod
    def _round_benchmark(module, directory, labels, description: str):
        """A round demo's benchmark, loaded from the module's bundle, with an entrant (and owner)
        per label; None when its rounds already exist (the demo was set up before)."""
        module.write_bundle(directory)
        benchmark = benchmark_load_bundle(directory).benchmark
        if Round.objects.filter(benchmark=benchmark).exists():
            return None
        User = get_user_model()
        for label in labels:
            owner, _ = User.objects.get_or_create(username=label)
            Entrant.objects.get_or_create(name=label, defaults={"owner": owner, "description": f"{description}: {label}"})
        return benchmark

    @staticmethod
    def _score_versions(round_) -> None:
        """Score a round's truth versions not yet scored, in order, so the pages are full at start."""
        for tv in TruthVersion.objects.filter(round=round_, scored_at__isnull=True).order_by("version"):
            round_version_score(round_id=round_.pk, version=tv.version)

    @staticmethod
    def _submit(user, benchmark, data: bytes, entrant) -> None:
        filename = "predictions.json" if data.lstrip()[:1] in (b"{", b"[") else "predictions.csv"
        accepted = submission_create(user=user, benchmark=benchmark, data=data, filename=filename, entrant=entrant)
        # Score now so the leaderboard is filled before the server starts.
        submission_score(submission_id=accepted.submission.pk)


def late_demo_load(directory) -> Benchmark:
    """The ended benchmark with late submissions (``properties_demo.LATE_SLUG``): three baselines in
    on time, then the deadline (in the past), then bob's upload, scored and marked late. Each step
    runs only while not done yet, so a second run (or a run after an interrupted one) changes nothing."""
    User = get_user_model()
    owner, _ = User.objects.get_or_create(username="baselines")
    done = Submission.objects.filter(benchmark__slug=properties_demo.LATE_SLUG, late=True).exists()
    benchmark = benchmark_load_bundle(properties_demo.write_late_bundle(directory, closed=done)).benchmark
    if done:
        return benchmark
    baselines = properties_demo.baseline_submissions(directory)
    if not Submission.objects.filter(benchmark=benchmark).exists():
        for label in properties_demo.LATE_ON_TIME:
            entrant, _ = Entrant.objects.get_or_create(
                name=label, defaults={"owner": owner,
                                      "description": f"Published baseline: {properties_demo.BASELINES[label]}"})
            Command._submit(owner, benchmark, baselines[label], entrant.pk)
    round_ = Round.objects.get(benchmark=benchmark, number=1)
    if round_takes_submissions(round_):
        round_set_deadline(round_=round_, closes_at=parse_deadline(properties_demo.LATE_CLOSED_AT))
    properties_demo.write_late_bundle(directory, closed=True)  # the bundle says what the round now does
    Command._submit(User.objects.get(username="bob"), benchmark, baselines[properties_demo.LATE_UPLOAD], None)
    return benchmark
