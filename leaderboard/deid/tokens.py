"""The spec's placeholder tokens and the numbers de-identification must keep."""
from __future__ import annotations

import re
from collections import Counter

COMPANY = "[COMPANY]"
DRUG = "[DRUG]"
TICKER = "[TICKER]"
DATE = "[DATE]"
EXECUTIVE = "[EXECUTIVE]"
TRIAL_NAME = "[TRIAL_NAME]"
LOCATION = "[LOCATION]"
INSTITUTION = "[INSTITUTION]"
TRIAL_ID = "[TRIAL_ID]"
CONFERENCE = "[CONFERENCE]"
FINANCIAL_DETAIL = "[FINANCIAL_DETAIL]"

# Exactly the eleven tokens of spec/impact-benchmark.txt, in the spec's order.
TOKENS: tuple[str, ...] = (
    COMPANY, DRUG, TICKER, DATE, EXECUTIVE, TRIAL_NAME,
    LOCATION, INSTITUTION, TRIAL_ID, CONFERENCE, FINANCIAL_DETAIL,
)
TOKEN_RE = re.compile("|".join(re.escape(t) for t in TOKENS))
# Any bracketed expression short enough to be meant as a placeholder.
BRACKETED_RE = re.compile(r"\[[^\[\]\n]{1,40}\]")

# A "scientific" number: a figure standing on its own (45%, 0.62, p<0.001,
# 11.2 months, 95% CI 0.51-0.75, n=412). Digits glued to letters are part of an
# identifier and do not count: KEYNOTE-189, MK-3475, AZD9291, HER2, 22C3, Q3.
# Money (after a currency sign or before million/billion) is a financial detail
# the pipeline may replace with [FINANCIAL_DETAIL], so it does not count either.
_NUMBER_RE = re.compile(
    r"(?<![A-Za-z0-9.,$€£¥])(?<![A-Za-z]-)(?<![A-Za-z]‑)"
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?![A-Za-z]\d)(?!\d)"
)
_MONEY_AFTER_RE = re.compile(r"\s*(?:million|billion|thousand|trillion|[MB]n?\b|bn\b|mm\b)", re.I)
_MONEY_BEFORE_RE = re.compile(r"(?:US\$|\$|€|£|¥|USD|EUR|GBP|CHF)\s*$")


def numbers(text: str) -> Counter[str]:
    """The scientific numbers of a text (as normalised strings, with counts)."""
    out: Counter[str] = Counter()
    for m in _NUMBER_RE.finditer(text):
        if _MONEY_BEFORE_RE.search(text[max(0, m.start() - 5) : m.start()]):
            continue
        if _MONEY_AFTER_RE.match(text, m.end()):
            continue
        out[m.group(1).replace(",", "")] += 1
    return out


def missing_numbers(source: str, output: str) -> list[str]:
    """Numbers of ``source`` that ``output`` has fewer of (one entry per missing occurrence)."""
    have = numbers(output)
    missing: list[str] = []
    for n, k in numbers(source).items():
        missing.extend([n] * max(0, k - have.get(n, 0)))
    return missing


def foreign_tokens(source: str, output: str) -> list[str]:
    """Bracketed expressions of ``output`` that are not spec tokens and were not in ``source``."""
    allowed = Counter(m.group(0) for m in BRACKETED_RE.finditer(source))
    out = []
    for m in BRACKETED_RE.finditer(output):
        tok = m.group(0)
        if tok in TOKENS:
            continue
        if allowed[tok] > 0:
            allowed[tok] -= 1
            continue
        out.append(tok)
    return out
