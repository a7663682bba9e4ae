"""Demo data for the ``portfolio`` kind: CapitalBench-style weekly and monthly rounds.

Pure Python and numpy, no Django, deterministic. Twelve options (stocks and ETFs,
generated prices, not market data) and the S&P 500. Each round's prices follow a
daily random walk (5 trading days a week, 20 a month); interim snapshots are the
walk's prices on some of those days, the final prices its last day.

Rounds, in the order they are opened (numbers are per benchmark, tracks apart):

1. monthly, resolved           5. monthly, resolved (cb-latecomer joins the monthly track)
2. weekly, resolved            6. weekly, pending: closed, three interim snapshots
3. weekly, resolved            7. weekly, open for uploads
4. weekly, resolved (cb-latecomer joins: a second weekly comparison set)

Models: ``cb-momentum`` (top picks from a noisy view of the round, with one
consistency run per round), ``cb-defensive`` (bonds, gold and cash),
``cb-equal`` (equal weights), ``cb-concentrated`` (all in one option) and
``cb-latecomer``; each gives a confidence and a rationale.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SLUG = "capital-rounds"
OPTIONS = ("NVDA", "MSFT", "AAPL", "AMZN", "JPM", "XOM", "LLY", "WMT", "GLD", "TLT", "VNQ", "EEM")
BASE_PRICES = (480.0, 415.0, 190.0, 178.0, 196.0, 112.0, 760.0, 68.0, 215.0, 92.0, 86.0, 42.0)
SP500_BASE = 5200.0
MODELS = ("cb-momentum", "cb-defensive", "cb-equal", "cb-concentrated", "cb-latecomer")
LATECOMER = "cb-latecomer"
DAYS = {"weekly": 5, "monthly": 20}
# (number, track, state, latecomer takes part, opened this many days ago; each round closes 2 days after)
SCHEDULE = (
    (1, "monthly", "resolved", False, 70),
    (2, "weekly", "resolved", False, 30),
    (3, "weekly", "resolved", False, 23),
    (4, "weekly", "resolved", True, 16),
    (5, "monthly", "resolved", True, 40),
    (6, "weekly", "pending", True, 6),
    (7, "weekly", "open", True, 0),
)

META = {
    "slug": SLUG,
    "title": "Capital allocation rounds",
    "kind": "portfolio",
    "description": (
        "Each round publishes twelve options with their start prices, plus the S&P 500 for comparison. "
        "Models allocate 100% across the options and cash, with a confidence and a short rationale; their "
        "latest portfolio before the close is frozen.\n\n"
        "While a round is pending its page tracks each portfolio's **provisional** return against the S&P 500 "
        "from interim price snapshots. The final prices give the return, the **CapitalBench score** "
        "(100 x return / the best option's return, cash included), regret and whether it beat cash. Weekly "
        "and monthly tracks are ranked apart, inside **comparison sets**. Prices are generated for the demo."
    ),
    "daily_limit": 30,
    "config": {"max_rationale_chars": 2000},
}


def write_bundle(directory: Path) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "benchmark.json").write_text(json.dumps(META, indent=2) + "\n", encoding="utf-8")
    return directory


@dataclass
class Upload:
    model: str
    body: dict
    repeat: bool = False

    def data(self) -> bytes:
        return json.dumps(self.body, indent=1).encode()


@dataclass
class DemoRound:
    """One round: its universe, the models' uploads and its price files (interim and final)."""

    number: int
    track: str
    state: str  # resolved, pending or open
    latecomer: bool
    opened_days_ago: int = 0
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self):
        self.rng = np.random.default_rng(7000 + self.number)
        days = DAYS[self.track]
        drift = 1.0 + 0.01 * self.number
        self.start = np.round(np.array(BASE_PRICES) * drift * (1 + 0.02 * self.rng.standard_normal(len(OPTIONS))), 2)
        self.sp_start = round(SP500_BASE * drift, 2)
        vol = np.array([0.030, 0.018, 0.016, 0.022, 0.014, 0.016, 0.020, 0.010, 0.009, 0.008, 0.013, 0.017])
        steps = 1 + 0.0004 + vol * self.rng.standard_normal((days, len(OPTIONS)))
        self.path = self.start * np.cumprod(steps, axis=0)
        sp_steps = 1 + 0.0003 + 0.009 * self.rng.standard_normal(days)
        self.sp_path = self.sp_start * np.cumprod(sp_steps)
        self.returns = self.path[-1] / self.start - 1

    def universe_csv(self) -> bytes:
        lines = ["option,start_price"] + [f"{o},{p:.2f}" for o, p in zip(OPTIONS, self.start)]
        lines.append(f"SP500,{self.sp_start:.2f}")
        return ("\n".join(lines) + "\n").encode()

    def prices_csv(self, day: int) -> bytes:
        """End prices as of trading day ``day`` (0-based; the last day is the final)."""
        lines = ["option,end_price"] + [f"{o},{p:.2f}" for o, p in zip(OPTIONS, self.path[day])]
        lines.append(f"SP500,{self.sp_path[day]:.2f}")
        return ("\n".join(lines) + "\n").encode()

    def interim_days(self) -> list[int]:
        days = DAYS[self.track]
        return [1, 2, 3] if days == 5 else [4, 9, 14]

    def final_day(self) -> int:
        return DAYS[self.track] - 1

    def models(self) -> list[str]:
        return [m for m in MODELS if m != LATECOMER or self.latecomer]

    def uploads(self) -> list[Upload]:
        out = []
        for model in self.models():
            out.append(Upload(model, self.portfolio(model)))
            if model == "cb-momentum":
                out.append(Upload(model, self.portfolio(model, run=1), repeat=True))
        return out

    def _view(self, model: str, run: int, skill: float) -> np.ndarray:
        """A model's noisy view of the round's option returns."""
        rng = np.random.default_rng(hash_name(model) * 31 + self.number * 7 + run)
        return skill * self.returns / max(self.returns.std(), 1e-9) + rng.standard_normal(len(OPTIONS))

    def portfolio(self, model: str, run: int = 0) -> dict:
        names = list(OPTIONS)
        if model == "cb-momentum":
            view = self._view(model, run, 0.8)
            top = np.argsort(-view)[:3]
            alloc = {names[top[0]]: 45.0, names[top[1]]: 30.0, names[top[2]]: 15.0, "CASH": 10.0}
            rationale = (f"Momentum and earnings revisions favour {names[top[0]]} and {names[top[1]]}; "
                         f"{names[top[2]]} as a smaller satellite. Keeping 10% in cash against a reversal.")
            confidence = 0.55 + 0.1 * run
        elif model == "cb-defensive":
            alloc = {"TLT": 40.0, "GLD": 30.0, "CASH": 30.0}
            rationale = ("Rates volatility and stretched equity valuations argue for duration and gold; "
                         "cash keeps dry powder. No single-stock risk this round.")
            confidence = 0.4
        elif model == "cb-equal":
            alloc = dict.fromkeys(names[:-1], 8.33) | {names[-1]: 8.37}
            rationale = "No view: an equal-weight baseline across all twelve options, fully invested."
            confidence = 0.2
        elif model == "cb-concentrated":
            view = self._view(model, run, 0.5)
            pick = names[int(np.argmax(view))]
            alloc = {pick: 100.0}
            rationale = (f"High-conviction call: {pick} has the strongest setup in this universe. All in; "
                         "the risk is accepted <deliberately> & explicitly.")
            confidence = 0.85
        else:  # cb-latecomer
            view = self._view(model, run, 1.0)
            top = np.argsort(-view)[:2]
            alloc = {names[top[0]]: 50.0, names[top[1]]: 30.0, "CASH": 20.0}
            rationale = (f"Joined late with a quality tilt: {names[top[0]]} and {names[top[1]]}, "
                         "a fifth in cash until the trend confirms.")
            confidence = 0.6
        body = {"allocations": [{"option": o, "percent": p} for o, p in alloc.items()],
                "confidence": round(confidence, 2), "rationale": rationale}
        if run:
            body["repeat"] = True
        return body


def schedule() -> list[DemoRound]:
    return [DemoRound(*row) for row in SCHEDULE]


def alice_portfolio() -> dict:
    return {"allocations": [{"option": "MSFT", "percent": 40}, {"option": "GLD", "percent": 35},
                            {"option": "CASH", "percent": 25}],
            "confidence": 0.5, "rationale": "A bit of growth, a hedge, and cash."}


def hash_name(name: str) -> int:
    return sum((i + 1) * ord(ch) for i, ch in enumerate(name))
