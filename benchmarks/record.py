"""A round's record at scale: its size and the time and memory it takes to stream.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/SCRATCH .venv/bin/python benchmarks/record.py \
        [--submissions 10000] [--ids 5000] [--check]

Give it a scratch PostgreSQL database (dropped and created). A signals round of
``--submissions`` counted submissions x ``--ids`` ids is stored directly (entrants, submissions
and their float64 arrays, as the upload service stores them, with stakes), closed, given its
final truth and resolved in this process (``round_version_score``). Then, timed, the record is
read from ``record_stream`` as the API streams it (each piece counted and dropped, as a client
socket would take it): bytes, seconds, and this process' peak memory while it streams (VmHWM,
reset before). ``--check`` also keeps the zip in a temporary file and rescores it with
``scoring.record.verify_record`` (the audit hashes are then real: each is the SHA-256 of the
submission's canonical form, computed while storing; without ``--check`` they are placeholders).
The machine may be shared: the load average is printed.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.scratch import scratch_site

scratch_site("record-bench-")

import django

django.setup()

import numpy as np
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from scoring.kinds.base import RoundSubmission, Universe
from scoring.record import verify_record

from leaderboard.core.models import Entrant, Round, Stake, Submission, SubmissionArray, TruthVersion
from leaderboard.core.records import record_stream
from leaderboard.core.services.round_engine import round_close, round_open, round_truth_load, round_version_score
from tests.support.signals import signals_benchmark


def vm_hwm_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def vm_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--ids", type=int, default=5_000)
    parser.add_argument("--check", action="store_true", help="real audit hashes, and rescore the record")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at start")
    call_command("migrate", verbosity=0)
    benchmark = signals_benchmark(Path(tempfile.mkdtemp()), slug="bench-record", daily_limit=100_000)
    kind = benchmark.kind_impl
    rng = np.random.default_rng(0)
    n_ids, n_subs = args.ids, args.submissions
    ids = [f"ID{i:05d}" for i in range(n_ids)]
    feats = rng.standard_normal((n_ids, 2))
    universe = ("id,feature_0,feature_1\n" + "".join(f"{c},{a:.4f},{b:.4f}\n" for c, (a, b) in zip(ids, feats)))
    round_ = round_open(benchmark=benchmark, data=universe.encode(), filename="universe.csv")
    owner, _ = get_user_model().objects.get_or_create(username="bench-owner")
    signal = feats[:, 0] + rng.standard_normal(n_ids)
    now = timezone.now()
    t = time.perf_counter()
    for start in range(0, n_subs, 500):
        count = min(500, n_subs - start)
        entrants = Entrant.objects.bulk_create([Entrant(owner=owner, name=f"model-{start + i:05d}")
                                                for i in range(count)])
        raw = rng.uniform(-0.05, 0.3, count)[:, None] * signal[None, :] + rng.standard_normal((count, n_ids))
        values = (raw.argsort(axis=1).argsort(axis=1) + 0.5) / n_ids
        hashes = [f"{start + i:064x}" for i in range(count)]
        if args.check:
            u = Universe(tuple(ids))
            hashes = [hashlib.sha256(kind.round_canonical_bytes(
                RoundSubmission(values[i][:, None], ("prediction",)), u)).hexdigest() for i in range(count)]
        subs = Submission.objects.bulk_create([
            Submission(benchmark=benchmark, round=round_, entrant=e, user=owner, original_name="p.csv", size=0,
                       audit_hash=hashes[i], status="accepted", is_counted=True, received_at=now,
                       payload={"columns": ["prediction"], "meta": {}}) for i, e in enumerate(entrants)])
        SubmissionArray.objects.bulk_create([
            SubmissionArray(submission=s, rows=n_ids, columns=["prediction"], data=values[i].tobytes())
            for i, s in enumerate(subs)])
        Stake.objects.bulk_create([Stake(entrant=e, round=round_, amount=float(rng.gamma(1.0, 100.0)))
                                   for e in entrants])
        print(f"\r  {start + count:,} submissions stored", end="", flush=True)
    print(f" in {time.perf_counter() - t:.0f} s")
    round_close(round_=round_)
    latent = signal + rng.standard_normal(n_ids)
    target = np.digitize(latent, np.quantile(latent, [0.05, 0.25, 0.75, 0.95])) / 4
    truth = ("id,target\n" + "".join(f"{c},{v:g}\n" for c, v in zip(ids, target))).encode()
    version = round_truth_load(round_=round_, data=truth, filename="truth.csv", final=True)
    if not TruthVersion.objects.filter(pk=version.pk, scored_at__isnull=False).exists():
        t = time.perf_counter()
        round_version_score(round_id=round_.pk, version=version.version)
        print(f"  resolved in {time.perf_counter() - t:.0f} s")
    round_ = Round.objects.select_related("benchmark").get(pk=round_.pk)
    assert round_.status == "resolved", round_.status

    keep = tempfile.NamedTemporaryFile(suffix=".zip", delete=False) if args.check else None
    with open("/proc/self/clear_refs", "w") as fh:  # VmHWM from here on: the streaming's peak
        fh.write("5")
    before = vm_rss_mb()
    load = os.getloadavg()[0]
    t, cpu = time.perf_counter(), time.process_time()
    size = pieces = 0
    for piece in record_stream(round_):
        size += len(piece)
        pieces += 1
        if keep is not None:
            keep.write(piece)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    peak = vm_hwm_mb()
    print(f"record of {n_subs:,} submissions x {n_ids:,} ids: {size / 1e6:,.1f} MB in {pieces:,} pieces, "
          f"{seconds:.1f} s wall, {cpu:.1f} s CPU of this process (the database's is apart); memory while streaming: peak {peak:,.0f} MB "
          f"(RSS {before:,.0f} MB before, +{peak - before:,.0f} MB); load average {load:.2f} -> "
          f"{os.getloadavg()[0]:.2f}")
    if keep is not None:
        keep.close()
        t = time.perf_counter()
        check = verify_record(keep.name)
        print(f"verify_record: {'ok' if check.ok else check.problems[:3]} in {time.perf_counter() - t:.1f} s")
        os.unlink(keep.name)


if __name__ == "__main__":
    main()
