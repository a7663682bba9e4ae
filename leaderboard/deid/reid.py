"""The re-identification check of the spec's validation section.

The backend reads each redacted case and guesses the company's ticker and the
stock's price move; the report gives the share of tickers named right, the
share of moves guessed within 2 percentage points, and the MAE and Pearson
correlation of the guessed moves against the actual ones.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from leaderboard.deid.llm import BackendError, OpenAICompatibleBackend, clean_model_text

REID_PROMPT = """You will read a de-identified biotech press release. Placeholders such as [COMPANY]
hide identifying details. Guess which publicly traded company issued it and how its stock price
moved on the day of the announcement. Answer with JSON only, exactly of this shape:
{"ticker": "ABCD", "percent_change": -12.5}
ticker: your best guess of the stock ticker (use null if you have no idea);
percent_change: the one-day price move in percent (a number)."""


@dataclass
class ReidCase:
    case_id: str
    redacted_text: str
    ticker: str | None  # the actual ticker, None when unknown
    percent_change: float  # the actual move, percent


@dataclass
class ReidReport:
    cases: int
    answered: int  # answers that parsed
    ticker_hits: int
    reidentification_rate: float | None  # percent of all cases whose ticker was named right
    price_hits: int
    price_recall_within: float | None  # percent of all cases whose move was guessed within tolerance_pp
    tolerance_pp: float
    mae: float | None  # percentage points, over the answers with a numeric move
    pearson: float | None  # over the answers with a numeric move (None under 3 or if constant)
    rows: list[dict[str, Any]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _norm_ticker(t: Any) -> str | None:
    if not isinstance(t, str):
        return None
    t = t.strip().upper().lstrip("$")
    t = re.sub(r"^[A-Z ]+:\s*", "", t)  # "NASDAQ: ABCD"
    return t or None


def parse_guess(answer: str) -> tuple[str | None, float | None]:
    """(ticker, percent_change) from a model's answer; raises ValueError when it holds no JSON object."""
    text = clean_model_text(answer)
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        raise ValueError("no JSON object in the answer")
    doc = json.loads(m.group(0))
    if not isinstance(doc, dict):
        raise ValueError("the answer is not a JSON object")
    move = doc.get("percent_change")
    if isinstance(move, str):
        try:
            move = float(move.strip().rstrip("%"))
        except ValueError:
            move = None
    if isinstance(move, bool) or not isinstance(move, (int, float)) or not math.isfinite(move):
        move = None
    return _norm_ticker(doc.get("ticker")), (None if move is None else float(move))


def reidentification_check(
    cases: Iterable[ReidCase],
    backend: OpenAICompatibleBackend,
    *,
    tolerance_pp: float = 2.0,
    attempts: int = 1,
) -> ReidReport:
    """Ask ``backend`` to re-identify each case; rates are over all cases given."""
    rows: list[dict[str, Any]] = []
    log: list[str] = []
    for case in cases:
        guess_t: str | None = None
        guess_m: float | None = None
        ok = False
        for i in range(1, max(1, attempts) + 1):
            try:
                answer = backend.chat([
                    {"role": "system", "content": REID_PROMPT},
                    {"role": "user", "content": case.redacted_text},
                ])
                guess_t, guess_m = parse_guess(answer)
                ok = True
                break
            except BackendError as exc:
                log.append(f"{case.case_id}: attempt {i}: backend error: {exc}")
            except ValueError as exc:
                log.append(f"{case.case_id}: attempt {i}: unreadable answer: {exc}")
        actual_t = _norm_ticker(case.ticker)
        rows.append({
            "case_id": case.case_id,
            "answered": ok,
            "guessed_ticker": guess_t,
            "actual_ticker": actual_t,
            "ticker_correct": bool(ok and actual_t and guess_t == actual_t),
            "guessed_percent_change": guess_m,
            "actual_percent_change": float(case.percent_change),
            "within_tolerance": bool(guess_m is not None and abs(guess_m - case.percent_change) <= tolerance_pp),
        })
    n = len(rows)
    moves = [(r["guessed_percent_change"], r["actual_percent_change"]) for r in rows if r["guessed_percent_change"] is not None]
    ticker_hits = sum(r["ticker_correct"] for r in rows)
    price_hits = sum(r["within_tolerance"] for r in rows)
    pearson = None
    if len(moves) >= 3:
        g, a = np.array(moves).T
        if np.std(g) > 0 and np.std(a) > 0:
            pearson = float(np.corrcoef(g, a)[0, 1])
    return ReidReport(
        cases=n,
        answered=sum(r["answered"] for r in rows),
        ticker_hits=ticker_hits,
        reidentification_rate=100.0 * ticker_hits / n if n else None,
        price_hits=price_hits,
        price_recall_within=100.0 * price_hits / n if n else None,
        tolerance_pp=tolerance_pp,
        mae=float(np.mean([abs(g - a) for g, a in moves])) if moves else None,
        pearson=pearson,
        rows=rows,
        log=log,
    )
