"""A signals round of N entrants resolving with every entrant subscribed by mail and by webhook.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/leaderboard_notify_bench \
    REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python benchmarks/notifications.py \
        [--entrants 10000] [--ids 2000]

Give it a scratch database (dropped and created) and a scratch Redis database. N users, each with
an address, one entrant, one counted submission and one webhook (``submission.scored`` and
``round.resolved``) to a receiver on 127.0.0.1 in this process; mail goes to an SMTP server
(aiosmtpd) in this process. Two rounds of the same size resolve, each the first round of its own
benchmark (so that both write their standings afresh), each with a real scoring worker (solo
pool): the first with ``NOTIFICATIONS_ENABLED=false`` (no event written), the second with
notifications on (N ``submission.scored`` events and one ``round.resolved`` written in the scoring
transaction) while a notifications worker (its own queue, 2 processes) runs beside it. Reported:
the resolve's time (truth_load to a complete board) off and on, and from the resolve's commit to
the last webhook answered and the last mail received: 2N deliveries (each user's own
``submission.scored`` and every webhook's ``round.resolved``) and N mails (``round.resolved``
with the user's scores and rank; a round submission's result is not mailed twice).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.scratch import scratch_site

scratch_site("notify-bench-", redis=True)

import django

django.setup()

import numpy as np
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from leaderboard.core.models import (
    Entrant,
    MailDelivery,
    Submission,
    SubmissionArray,
    TruthVersion,
    Webhook,
    WebhookDelivery,
)
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load
from tests.support.receiver import start_receiver
from tests.support.signals import signals_benchmark
from tests.support.smtp import start_smtp
from tests.support.worker import start_worker, stop_worker, wait_until_ready


def make_users(n: int, receiver_url: str) -> list[Entrant]:
    User = get_user_model()
    users = User.objects.bulk_create([User(username=f"user{i:05d}", email=f"user{i:05d}@example.org")
                                      for i in range(n)], batch_size=2000)
    entrants = Entrant.objects.bulk_create([Entrant(owner=u, name=f"model-{i:05d}") for i, u in enumerate(users)],
                                           batch_size=2000)
    Webhook.objects.bulk_create([Webhook(user=u, url=receiver_url, secret=f"secret-of-{u.username}-0123456789",
                                         events=["submission.scored", "round.resolved"]) for u in users],
                                batch_size=2000)
    return entrants


def fill_round(benchmark, round_, entrants: list[Entrant], n_ids: int, signal: np.ndarray, rng) -> None:
    now = timezone.now()
    for start in range(0, len(entrants), 1000):
        chunk = entrants[start:start + 1000]
        raw = rng.uniform(0, 0.3, len(chunk))[:, None] * signal[None, :] + rng.standard_normal((len(chunk), n_ids))
        values = (raw.argsort(axis=1).argsort(axis=1) + 0.5) / n_ids
        subs = Submission.objects.bulk_create([
            Submission(benchmark=benchmark, round=round_, entrant=e, user_id=e.owner_id, original_name="p.csv",
                       size=0, audit_hash=f"{round_.number:08x}{start + i:056x}", status="accepted", is_counted=True,
                       received_at=now, payload={"columns": ["prediction"], "meta": {}})
            for i, e in enumerate(chunk)])
        SubmissionArray.objects.bulk_create([
            SubmissionArray(submission=s, rows=n_ids, columns=["prediction"], data=values[i].tobytes())
            for i, s in enumerate(subs)])


def wait_for(done, workers, what: str, timeout: float = 3600) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        for w in workers:
            if w.poll() is not None:
                raise SystemExit(f"a worker died waiting for {what}:\n" + stop_worker(w)[-3000:])
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        time.sleep(0.2)


def resolve(benchmark, entrants, ids, signal, rng, *, on: bool, workers_env: dict) -> tuple[float, float]:
    """Open, fill, close and resolve one round; the seconds from truth_load to a scored version."""
    data = ("id\n" + "\n".join(ids) + "\n").encode()
    round_ = round_open(benchmark=benchmark, data=data, filename="universe.csv")
    fill_round(benchmark, round_, entrants, len(ids), signal, rng)
    round_close(round_=round_)
    latent = signal + rng.standard_normal(len(ids))
    target = np.digitize(latent, np.quantile(latent, [0.05, 0.25, 0.75, 0.95])) / 4
    truth = ("id,target\n" + "\n".join(f"{cid},{v:g}" for cid, v in zip(ids, target)) + "\n").encode()
    worker = start_worker({**workers_env, "NOTIFICATIONS_ENABLED": "true" if on else "false"})
    try:
        wait_until_ready(worker, timeout=120)
        t0 = time.perf_counter()
        version = round_truth_load(round_=round_, data=truth, filename="truth.csv", final=True)

        def scored() -> bool:
            connection.close()
            return TruthVersion.objects.filter(pk=version.pk, scored_at__isnull=False).exists()

        wait_for(scored, [worker], "the resolve")
        return time.perf_counter() - t0, time.time()
    finally:
        stop_worker(worker)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=10_000)
    parser.add_argument("--ids", type=int, default=2_000)
    parser.add_argument("--deliveries-timeout", type=float, default=1800,
                        help="seconds to wait for every delivery after the resolve")
    args = parser.parse_args()
    n = args.entrants
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
    call_command("migrate", verbosity=0)
    receiver = start_receiver()
    smtp, smtp_controller = start_smtp()
    workers_env = {"WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "EMAIL_URL": smtp.url}
    quiet = signals_benchmark(Path(tempfile.mkdtemp()), slug="notify-off", daily_limit=100_000)
    benchmark = signals_benchmark(Path(tempfile.mkdtemp()), slug="notify-on", daily_limit=100_000)
    rng = np.random.default_rng(0)
    ids = [f"ID{i:05d}" for i in range(args.ids)]
    signal = rng.standard_normal(args.ids)
    t = time.perf_counter()
    entrants = make_users(n, receiver.url)
    print(f"  {n:,} users, entrants and webhooks in {time.perf_counter() - t:.0f} s")

    from leaderboard.celery import app

    with app.connection_for_write() as conn:
        for queue in ("scoring", "notifications"):
            conn.default_channel.queue_purge(queue)
    off_seconds, _ = resolve(quiet, entrants, ids, signal, rng, on=False, workers_env=workers_env)
    load_off = os.getloadavg()[0]
    print(f"resolve of {n:,} entrants x {args.ids:,} ids, notifications off: {off_seconds:.1f} s "
          f"(load {load_off:.2f})")
    receiver.requests.clear()
    smtp.messages.clear()

    notifier = start_worker(workers_env, queues="notifications", pool="prefork", concurrency=2, beat=True)
    try:
        wait_until_ready(notifier, timeout=120)
        on_seconds, committed = resolve(benchmark, entrants, ids, signal, rng, on=True, workers_env=workers_env)
        load_on = os.getloadavg()[0]
        print(f"resolve of {n:,} entrants x {args.ids:,} ids, notifications on: {on_seconds:.1f} s "
              f"(load {load_on:.2f}); {on_seconds / off_seconds:.2f} x off")
        want_hooks, want_mails = 2 * n, n
        try:
            wait_for(lambda: len(receiver.requests) >= want_hooks and len(smtp.messages) >= want_mails, [notifier],
                     "every delivery", timeout=args.deliveries_timeout)
        except SystemExit as exc:
            print(f"  {exc}: {len(receiver.requests):,} of {want_hooks:,} webhook POSTs and "
                  f"{len(smtp.messages):,} of {want_mails:,} mails after {time.time() - committed:.0f} s")
            raise
        done = time.time() - committed
    finally:
        log = stop_worker(notifier)
        receiver.close()
        smtp_controller.stop()
    connection.close()
    delivered = WebhookDelivery.objects.filter(state="delivered").count()
    sent = MailDelivery.objects.filter(sent_at__isnull=False).count()
    ids_seen = [r.json["id"] for r in receiver.requests]
    per_user = {}
    for r in receiver.requests:
        per_user.setdefault(r.json["event"], 0)
        per_user[r.json["event"]] += 1
    assert delivered == want_hooks, (delivered, want_hooks, log[-3000:])
    assert sent == want_mails, (sent, want_mails)
    print(f"  every delivery complete {done:.1f} s after the resolve: {len(receiver.requests):,} webhook POSTs "
          f"({per_user}), {len(set(ids_seen)):,} distinct event ids, {len(smtp.messages):,} mails; "
          f"{delivered:,} deliveries delivered, {sent:,} mails sent, none twice")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
