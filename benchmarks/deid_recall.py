"""Recall of the regex de-identification stages on press releases with known identifiers.

Runs the pipeline with no model backend (regex pre- and post-processing only)
and reports, per identifier type, the share of identifier mentions removed
(target >= 95%) and the share of scientific numbers kept (target 100%), on two
corpora:

1. the generated corpus of ``leaderboard.demo.impact.known_identifier_corpus``
   (the regexes were written against its phrasing: an optimistic figure);
2. the independent, hand-annotated corpus in ``tests/deid/corpus/`` (41 press
   releases in varied real-world styles; see its README for the annotation
   conventions). Each output is aligned with its input word by word: a
   mention occurrence is removed when none of its distinctive words survives,
   a number is kept when all of its digits and words survive.

Each corpus is run with each case's identifier columns (company, ticker,
drugs, executives), as a bundle gives them, and without them (lists and
generic patterns only).

    .venv/bin/python benchmarks/deid_recall.py [--seed 5] [--n 200] [--corpus DIR] [--json]

Exit status 1 when a run with identifiers misses a target.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leaderboard.deid import deidentify, load_lists
from leaderboard.deid import tokens as T
from leaderboard.demo.impact import known_identifier_corpus


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
    return _summary(len(texts), per_type_total, per_type_left, numbers_total, numbers_kept, elapsed,
                    sorted(per_type_total)) | {
        "examples_left": {k: [s for s, _ in v.most_common(5)] for k, v in leftovers.items()},
    }


def _summary(texts: int, total, left, numbers: int, kept: int, elapsed: float, categories) -> dict:
    """The figures both corpora report: mentions removed, numbers kept, time, per category."""
    n_total, n_left = sum(total.values()), sum(left.values())
    return {
        "texts": texts,
        "mentions": n_total,
        "mentions_removed": n_total - n_left,
        "removed_pct": 100.0 * (n_total - n_left) / n_total if n_total else None,
        "numbers": numbers,
        "numbers_kept": kept,
        "numbers_kept_pct": 100.0 * kept / numbers if numbers else None,
        "ms_per_text": 1000.0 * elapsed / max(1, texts),
        "by_type": {k: {"mentions": total[k], "removed_pct": 100.0 * (total[k] - left[k]) / total[k]}
                    for k in categories if total[k]},
    }


# -- the independent, annotated corpus --------------------------------------------------

CORPUS_DIR = ROOT / "tests" / "deid" / "corpus"
CATEGORIES = (
    "company", "ticker", "exchange", "drug", "executive", "investigator", "trial_name", "trial_id",
    "institution", "location", "conference", "date", "url", "email", "phone", "wire", "financial",
)
# Words that do not identify by themselves: a mention whose only survivors are these is removed
# ("Dr. [EXECUTIVE]", "[COMPANY], Inc.", "second half of [DATE]"). Compared in lower case.
GENERIC_WORDS = frozenset("""
    a an and at by de del der des di du for from in of on the to van von den
    dr prof professor pr mr ms mrs med md phd mbbs frcpath pharmd mph
    inc corp corporation co ltd limited llc plc ag sa se nv gmbh ab publ
    therapeutics pharmaceuticals pharmaceutical pharma bio biosciences bioscience biotherapeutics
    biopharma biopharmaceuticals biologics biotech oncology hematology immunotherapeutics radiopharma
    group partners communications capital management securities strategies cell
    university hospital hospitals medical medicine center centre cancer institute institutet school
    health clinic college comprehensive research national sciences science
    annual meeting congress symposium conference exposition hybrid society association american
    european international world
    stock exchange market global select code
    first second third fourth half quarter end year fiscal mid early late
    per share shares unit units https http www com
""".split())

# Titles and degrees go with the name they stand next to ("Jane Doe, M.D." -> "[EXECUTIVE]"): not over-redaction.
_TITLE_WORDS = frozenset("m d ph md phd mbbs frcpath pharmd mph dr prof professor pr med".split())


def load_corpus(directory: str | Path = CORPUS_DIR) -> list[dict[str, Any]]:
    """The annotated cases of ``directory`` (one JSON file each), sorted by id."""
    cases = []
    for path in sorted(Path(directory).glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        for m in case["mentions"]:
            if m["category"] not in CATEGORIES:
                raise ValueError(f"{path.name}: unknown category {m['category']!r}")
        cases.append(case)
    return cases


def occurrences(s: str, text: str) -> list[tuple[int, int]]:
    """Whole-word, case-sensitive occurrences of ``s`` (a number does not match inside 10.5 or 0.51)."""
    left = r"(?<![\w.])" if s[:1].isalnum() else ""
    right = r"(?!\w)(?!\.\d)" if s[-1:].isalnum() else ""
    return [m.span() for m in re.finditer(left + re.escape(s) + right, text)]


def mention_spans(text: str, mentions: list[dict[str, str]]) -> list[tuple[int, int, str, str]]:
    """(start, end, category, string) of every annotated occurrence; the longest string takes an overlap."""
    taken = bytearray(len(text))
    out = []
    for m in sorted(mentions, key=lambda m: -len(m["text"])):
        for s, e in occurrences(m["text"], text):
            if any(taken[s:e]):
                continue
            taken[s:e] = b"\x01" * (e - s)
            out.append((s, e, m["category"], m["text"]))
    return sorted(out)


def surviving_words(source: str, output: str) -> list[tuple[int, int, bool]]:
    """Each word of ``source`` as (start, end, survives).

    Redaction only replaces spans by a placeholder or by nothing, so the words of ``output``
    between two placeholders are a contiguous run of ``source`` words, in order. Each run is
    matched at its first occurrence after the previous one (split where a stripped span, which
    leaves no placeholder, broke it); the source words it covers survive, all others do not.
    """
    src = list(re.finditer(r"\w+", source))
    words = [m.group(0) for m in src]
    alive = [False] * len(src)
    runs: list[list[str]] = [[]]
    for m in re.finditer(rf"{T.TOKEN_RE.pattern}|\w+", output):
        if m.group(0) in T.TOKENS:
            runs.append([])
        else:
            runs[-1].append(m.group(0))
    pos = 0
    for run in runs:
        i = 0
        while i < len(run):
            found = None
            for k in range(len(run) - i, 0, -1):  # the longest piece of the run found in order
                piece = run[i:i + k]
                for q in range(pos, len(words) - k + 1):
                    if words[q:q + k] == piece:
                        found = (q, k)
                        break
                if found:
                    break
            if not found:  # a word the source does not have after pos (should not happen): skip it
                i += 1
                continue
            q, k = found
            for j in range(q, q + k):
                alive[j] = True
            pos, i = q + k, i + k
    return [(m.start(), m.end(), ok) for m, ok in zip(src, alive)]


def _words_in(words, s: int, e: int):
    return [(ws, we, ok) for ws, we, ok in words if ws >= s and we <= e and (ws, we) != (s, s)]


def score_case(case: dict[str, Any], redacted: str) -> dict[str, Any]:
    """What the redaction of one annotated case removed and kept, from the annotations alone."""
    text = case["text"]
    words = surviving_words(text, redacted)
    spans = mention_spans(text, case["mentions"])
    total: Counter = Counter()
    left: Counter = Counter()
    residual: list[dict[str, str]] = []
    for s, e, cat, string in spans:
        inside = _words_in(words, s, e)
        distinctive = [(ws, we, ok) for ws, we, ok in inside
                       if len(text[ws:we]) > 1 and text[ws:we].lower() not in GENERIC_WORDS] or inside
        total[cat] += 1
        survivors = [text[ws:we] for ws, we, ok in distinctive if ok]
        if survivors:
            left[cat] += 1
            residual.append({"case": case["id"], "category": cat, "mention": string, "left": " ".join(survivors)})
    in_mention = bytearray(len(text))
    for s, e, _, _ in spans:
        in_mention[s:e] = b"\x01" * (e - s)
    numbers = kept = 0
    lost: list[dict[str, str]] = []
    for n in dict.fromkeys(case["numbers"]):
        for s, e in occurrences(n, text):
            if any(in_mention[s:e]):
                continue
            numbers += 1
            if all(ok for ws, we, ok in _words_in(words, s, e) if text[ws:we][0].isalnum()):
                kept += 1
            else:
                lost.append({"case": case["id"], "number": n})
    # Over-redaction: words outside every annotated mention that did not survive.
    over = [text[ws:we] for ws, we, ok in words if not ok and not any(in_mention[ws:we])
            and text[ws:we][0].isalnum() and text[ws:we].lower() not in _TITLE_WORDS]
    # Cross-check with the model stage's own number check, identifiers masked out of the source.
    masked = "".join(" " if in_mention[i] else ch for i, ch in enumerate(text))
    return {"total": total, "left": left, "residual": residual, "numbers": numbers, "kept": kept, "lost": lost,
            "over_redacted": over, "tokens_missing_numbers": T.missing_numbers(masked, redacted)}


def measure_corpus(cases: list[dict[str, Any]], *, with_identifiers: bool, lists=None) -> dict[str, Any]:
    """The regex stages alone (no model backend) on the annotated cases, scored from the annotations."""
    lists = lists if lists is not None else load_lists()
    total: Counter = Counter()
    left: Counter = Counter()
    residual: list[dict[str, str]] = []
    lost: list[dict[str, str]] = []
    numbers = kept = 0
    cross_check: list[str] = []
    over: Counter = Counter()
    words_total = 0
    elapsed = 0.0
    for case in cases:
        identifiers = case.get("identifiers") if with_identifiers else None
        t0 = time.perf_counter()
        red = deidentify(case["text"], identifiers or None, lists).redacted_text
        elapsed += time.perf_counter() - t0
        sc = score_case(case, red)
        total += sc["total"]
        left += sc["left"]
        residual += sc["residual"]
        lost += sc["lost"]
        numbers += sc["numbers"]
        kept += sc["kept"]
        cross_check += [f"{case['id']}:{n}" for n in sc["tokens_missing_numbers"]]
        over.update(f"{case['id']}:{w}" for w in sc["over_redacted"])
        words_total += len(re.findall(r"\w+", case["text"]))
    return _summary(len(cases), total, left, numbers, kept, elapsed, CATEGORIES) | {
        "residual": residual,
        "numbers_lost": lost,
        "tokens_missing_numbers": cross_check,
        "over_redacted_words": sum(over.values()),
        "words": words_total,
        "over_redacted": [w for w, _ in over.most_common()],
    }


def _print_run(title: str, r: dict[str, Any], *, list_residuals: bool) -> None:
    print(f"== {title} ({r['texts']} press releases, {r['ms_per_text']:.1f} ms each)")
    print(f"identifier mentions removed: {r['mentions_removed']}/{r['mentions']} = {r['removed_pct']:.2f}%  (target >= 95%)")
    print(f"scientific numbers kept:     {r['numbers_kept']}/{r['numbers']} = {r['numbers_kept_pct']:.2f}%  (target 100%)")
    for k, v in r["by_type"].items():
        print(f"  {k:<12} {v['mentions']:>5} mentions, {v['removed_pct']:6.2f}% removed")
    if "residual" not in r:  # the generated corpus
        if r["examples_left"]:
            print("  left in the text, e.g.:", json.dumps(r["examples_left"]))
        return
    if list_residuals and r["residual"]:
        print(f"  residual mentions ({len(r['residual'])}):")
        for x in r["residual"]:
            extra = "" if x["left"] == x["mention"] else f"  (left: {x['left']})"
            print(f"    {x['case']}  {x['category']:<12} {x['mention']}{extra}")
    elif r["residual"]:
        print(f"  residual mentions: {len(r['residual'])} (listed for the run with identifiers)")
    if r["numbers_lost"]:
        print("  numbers lost:", ", ".join(f"{x['case']}:{x['number']}" for x in r["numbers_lost"]))
    if r["tokens_missing_numbers"]:
        print("  tokens.missing_numbers also reports:", ", ".join(r["tokens_missing_numbers"]))
    print(f"  over-redaction: {r['over_redacted_words']} of {r['words']} words outside annotated mentions removed"
          + (f" ({', '.join(r['over_redacted'][:40])})" if r["over_redacted"] and list_residuals else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--corpus", default=str(CORPUS_DIR), help="the annotated corpus (default: tests/deid/corpus)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    texts, ids = known_identifier_corpus(args.seed, args.n)
    cases = load_corpus(args.corpus)
    runs = {
        "generated": {
            "with_identifiers": measure(texts, ids, with_identifiers=True),
            "without_identifiers": measure(texts, ids, with_identifiers=False),
        },
        "independent": {
            "with_identifiers": measure_corpus(cases, with_identifiers=True),
            "without_identifiers": measure_corpus(cases, with_identifiers=False),
        },
    }
    if args.json:
        print(json.dumps(runs, indent=2))
    else:
        for corpus, title in (("generated", "generated corpus"), ("independent", "independent annotated corpus")):
            for name, r in runs[corpus].items():
                _print_run(f"{title}, regex stages only, {name.replace('_', ' ')}", r,
                           list_residuals=name == "with_identifiers")
                print()
    ok = True
    for corpus in runs.values():
        r = corpus["with_identifiers"]
        ok = ok and r["removed_pct"] >= 95.0 and r["numbers_kept"] == r["numbers"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
