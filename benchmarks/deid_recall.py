"""Recall of the regex de-identification stages on press releases with known identifiers.

Runs the pipeline with no model backend (regex pre- and post-processing only) on
the generated corpus of ``leaderboard.demo.impact.known_identifier_corpus`` and
reports, per identifier type, the share of identifier mentions removed (target
>= 95%) and the share of scientific numbers kept (target 100%). Two runs: with
each case's identifier columns (company, ticker, drugs, executives), as a bundle
gives them, and without them (lists and generic patterns only).

    .venv/bin/python benchmarks/deid_recall.py [--seed 5] [--n 200] [--json]

Exit status 1 when the first run misses a target.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from leaderboard.deid import deidentify, load_lists  # noqa: E402
from leaderboard.deid import tokens as T  # noqa: E402
from leaderboard.demo.impact import known_identifier_corpus  # noqa: E402


def count(s: str, text: str) -> int:
    left = r"(?<!\w)" if s[:1].isalnum() else ""
    right = r"(?!\w)" if s[-1:].isalnum() else ""
    return len(re.findall(left + re.escape(s) + right, text))


def measure(texts, ids, *, with_identifiers: bool) -> dict:
    lists = load_lists()
    per_type_total: Counter = Counter()
    per_type_left: Counter = Counter()
    leftovers: dict[str, Counter] = defaultdict(Counter)
    numbers_total = numbers_kept = 0
    t0 = time.perf_counter()
    for text, info in zip(texts, ids):
        identifiers = {k: info[k] for k in ("company", "ticker", "drugs", "executives")} if with_identifiers else None
        red = deidentify(text, identifiers, lists).redacted_text
        for kind, s in sorted(set(info["mentions"])):
            n = count(s, text)
            left = count(s, red)
            per_type_total[kind] += n
            per_type_left[kind] += min(n, left)
            if left:
                leftovers[kind][s] += left
        have = T.numbers(red)
        for num, k in info["numbers"].items():
            numbers_total += k
            numbers_kept += min(k, have.get(num, 0))
    elapsed = time.perf_counter() - t0
    total = sum(per_type_total.values())
    left = sum(per_type_left.values())
    return {
        "texts": len(texts),
        "mentions": total,
        "mentions_removed": total - left,
        "removed_pct": 100.0 * (total - left) / total if total else None,
        "numbers": numbers_total,
        "numbers_kept": numbers_kept,
        "numbers_kept_pct": 100.0 * numbers_kept / numbers_total if numbers_total else None,
        "ms_per_text": 1000.0 * elapsed / max(1, len(texts)),
        "by_type": {
            k: {"mentions": per_type_total[k], "removed_pct": 100.0 * (per_type_total[k] - per_type_left[k]) / per_type_total[k]}
            for k in sorted(per_type_total)
        },
        "examples_left": {k: [s for s, _ in v.most_common(5)] for k, v in leftovers.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    texts, ids = known_identifier_corpus(args.seed, args.n)
    runs = {
        "with_identifiers": measure(texts, ids, with_identifiers=True),
        "without_identifiers": measure(texts, ids, with_identifiers=False),
    }
    if args.json:
        print(json.dumps(runs, indent=2))
    else:
        for name, r in runs.items():
            print(f"== regex stages only, {name.replace('_', ' ')} ({r['texts']} press releases, {r['ms_per_text']:.1f} ms each)")
            print(f"identifier mentions removed: {r['mentions_removed']}/{r['mentions']} = {r['removed_pct']:.2f}%  (target >= 95%)")
            print(f"scientific numbers kept:     {r['numbers_kept']}/{r['numbers']} = {r['numbers_kept_pct']:.2f}%  (target 100%)")
            for k, v in r["by_type"].items():
                print(f"  {k:<12} {v['mentions']:>5} mentions, {v['removed_pct']:6.2f}% removed")
            if r["examples_left"]:
                print("  left in the text, e.g.:", json.dumps(r["examples_left"]))
    main_run = runs["with_identifiers"]
    ok = main_run["removed_pct"] >= 95.0 and main_run["numbers_kept"] == main_run["numbers"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
