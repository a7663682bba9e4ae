"""Demo data for the ``portfolio`` kind: CapitalBench's twelve official rounds, as published.

Pure Python, no Django. The rounds, prices and portfolios are CapitalBench's
public round artifacts (github.com/ishtiaqrahman/capitalbench, CC BY 4.0); the
copy this module reads and what it holds are described in
``published/capitalbench/README.md`` beside it.

Each round (``RealRound``) gives what the site needs, in the site's formats:

- its universe, ``option,start_price``: every option of ``prices/entry_prices.csv``
  at its adjusted close, ``SP500`` (SPY) included, ``CASH`` left out (the site
  adds it);
- each published model's frozen portfolio (``runs/<official run>/submissions/parsed``)
  as an upload: its allocations, confidence and its rationale (summary, portfolio
  rationale, each holding's reason and the key risks, as plain text);
- interim price snapshots from ``prices/weekly_prices.csv``, one per price date
  after the entry date and before the exit date (only the options someone holds,
  the S&P 500 and cash are priced there: exactly what the provisional returns
  need). CapitalBench measures an interim return on that daily series alone,
  from its own price on the entry date (which may differ from the entry
  adjusted close: other source, other rounding), so each snapshot price is
  written in start-price units, ``start x price(day) / price(entry date)``: the
  site's provisional returns are then CapitalBench's published interim returns;
- the final prices from ``prices/exit_prices.csv``.

The published results (``results/leaderboard.csv``) stay beside them for the
replay test. One more round, ``practice_universe_csv``, is ours: an open weekly
round priced at the last published closes, for trying the upload; no prices will
follow it.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

DEMO = "published_rounds"  # how demo_setup loads this module (leaderboard/demo/__init__.py)
SLUG = "capital-rounds"
SOURCE = Path(__file__).resolve().parent / "published" / "capitalbench"
CASH = "CASH"
TRACKS = {"1W": "weekly", "1M": "monthly"}

META = {
    "slug": SLUG,
    "title": "Capital allocation rounds: frontier models, real prices",
    "kind": "portfolio",
    "description": (
        "Frontier language models each allocate a portfolio over about seventy ETFs and cash (the S&P 500 "
        "itself among the options), with a confidence and a rationale, for a week (weekly track) or a month "
        "(monthly track). Each portfolio is frozen when its round closes and scored against the real closing "
        "prices.\n\n"
        "While a round is pending its page tracks each portfolio's **provisional** return against the S&P 500 "
        "from interim price snapshots. The final prices give the return, the **score** (100 x return / the "
        "best option's return, at most 100), regret and whether it beat cash. Weekly and monthly tracks are "
        "ranked apart, inside **comparison sets** of the models that took part in the same rounds.\n\n"
        "**Real data.** The twelve resolved rounds, their prices and the models' portfolios and rationales are "
        "CapitalBench's official rounds of June and July 2026, as published by CapitalBench "
        "([github.com/ishtiaqrahman/capitalbench](https://github.com/ishtiaqrahman/capitalbench)) under "
        "[CC BY 4.0](https://creativecommons.org/licenses/by/4.0/): data from CapitalBench "
        "(github.com/ishtiaqrahman/capitalbench), CC BY 4.0. We changed its form (prices as universe and "
        "price files, portfolios as uploads), not its values. This benchmark is a replay on our site, not "
        "CapitalBench itself. The open practice round is ours: its start prices are the last published "
        "closes, and no prices will follow."
    ),
    "credit": ("CapitalBench ([github.com/ishtiaqrahman/capitalbench](https://github.com/ishtiaqrahman/capitalbench)), "
               "[CC BY 4.0](https://creativecommons.org/licenses/by/4.0/): the official rounds' prices, portfolios "
               "and rationales, replayed here (the practice round is ours)"),
    "daily_limit": 30,
    "config": {"max_rationale_chars": 8000},
}


def write_bundle(directory: Path) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "benchmark.json").write_text(json.dumps(META, indent=2) + "\n", encoding="utf-8")
    return directory


def _top_level(path: Path) -> dict[str, str]:
    """The one-line top-level ``key: value`` pairs of a manifest (quotes stripped); enough for the
    dates and times read here, without a YAML parser."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line[:1].isspace() or ": " not in line:
            continue
        key, value = line.split(": ", 1)
        out[key] = value.strip().strip("'\"")
    return out


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _prices_csv(header: str, prices: list[tuple[str, str]]) -> bytes:
    return ("\n".join([header, *(f"{option},{price}" for option, price in prices)]) + "\n").encode()


def _when(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Upload:
    model: str
    body: dict

    def data(self) -> bytes:
        return json.dumps(self.body, indent=1, ensure_ascii=False).encode()


def rationale_text(parsed: dict) -> str:
    """A published portfolio's reasons as one plain text: summary, portfolio rationale, each
    holding's reason, the key risks."""
    parts = [parsed.get("rationale_summary", "").strip(), parsed.get("portfolio_rationale", "").strip()]
    holdings = [f"- {h['option_id']} ({h['allocation_pct']:g}%): {h.get('rationale', '').strip()}"
                for h in parsed["portfolio"]]
    parts.append("Holdings:\n" + "\n".join(holdings))
    risks = [f"- {r.strip()}" for r in parsed.get("key_risks", []) if r.strip()]
    if risks:
        parts.append("Key risks:\n" + "\n".join(risks))
    return "\n\n".join(p for p in parts if p)


@dataclass(frozen=True)
class RealRound:
    """One official round as published: ``round_id`` like ``CB-2026-06-02-1W``."""

    round_id: str

    @property
    def folder(self) -> Path:
        return SOURCE / self.round_id

    @property
    def track(self) -> str:
        return TRACKS[self.round_id.rsplit("-", 1)[1]]

    @cached_property
    def manifest(self) -> dict[str, str]:
        return _top_level(self.folder / "manifest.yaml")

    @cached_property
    def run(self) -> Path:
        """The official run: the one whose results were published."""
        (results,) = sorted(self.folder.glob("runs/*/results/leaderboard.csv"))
        return results.parent.parent

    @cached_property
    def run_manifest(self) -> dict[str, str]:
        return _top_level(self.run / "run_manifest.yaml")

    @property
    def opened_at(self) -> dt.datetime:
        return _when(self.manifest["created_at"])

    @property
    def closes_at(self) -> dt.datetime:
        return _when(self.manifest["decision_deadline"])

    @property
    def submitted_at(self) -> dt.datetime:
        return _when(self.run_manifest["completed_at_utc"])

    @property
    def entry_date(self) -> dt.date:
        return dt.date.fromisoformat(self.manifest["entry_date"])

    @property
    def exit_date(self) -> dt.date:
        return dt.date.fromisoformat(self.manifest["exit_date"])

    def universe_csv(self) -> bytes:
        """``option,start_price``: every option at its entry adjusted close, cash left out."""
        rows = _csv_rows(self.folder / "prices" / "entry_prices.csv")
        return _prices_csv("option,start_price", [(r["option_id"], r["adj_close"]) for r in rows
                                                  if r["option_id"] != CASH])

    def final_csv(self) -> bytes:
        """``option,end_price``: every option at its exit adjusted close, cash left out."""
        rows = _csv_rows(self.folder / "prices" / "exit_prices.csv")
        return _prices_csv("option,end_price", [(r["option_id"], r["adj_close"]) for r in rows
                                                if r["option_id"] != CASH])

    def snapshots(self) -> list[tuple[dt.date, bytes]]:
        """``(price date, option,end_price)`` per interim snapshot after the entry date and before the
        exit date: the options priced that day (held ones and the S&P 500), cash left out, each as
        ``start x price(day) / price(entry date)`` of the daily series (see the module docstring)."""
        start = {r["option_id"]: float(r["adj_close"]) for r in _csv_rows(self.folder / "prices" / "entry_prices.csv")}
        series: dict[dt.date, dict[str, float]] = {}
        for r in _csv_rows(self.folder / "prices" / "weekly_prices.csv"):
            series.setdefault(dt.date.fromisoformat(r["price_date"]), {})[r["option_id"]] = float(r["price"])
        base = series[self.entry_date]
        return [(day, _prices_csv("option,end_price", [(o, repr(start[o] * p / base[o])) for o, p in prices.items()
                                                      if o != CASH]))
                for day, prices in sorted(series.items()) if self.entry_date < day < self.exit_date]

    def parsed_portfolios(self) -> list[dict]:
        return [json.loads(p.read_text(encoding="utf-8"))
                for p in sorted((self.run / "submissions" / "parsed").glob("*.json"))]

    def uploads(self) -> list[Upload]:
        """Each published model's frozen portfolio as an upload to this site."""
        out = []
        for parsed in self.parsed_portfolios():
            body = {"allocations": [{"option": h["option_id"], "percent": h["allocation_pct"]}
                                    for h in parsed["portfolio"]],
                    "confidence": parsed["confidence"], "rationale": rationale_text(parsed)}
            out.append(Upload(parsed["model_id"], body))
        return out

    def leaderboard(self) -> list[dict[str, str]]:
        """The published results, one row per model (``results/leaderboard.csv``)."""
        return _csv_rows(self.run / "results" / "leaderboard.csv")


def rounds() -> list[RealRound]:
    """The official rounds in the order they opened (decision deadline, weekly before monthly)."""
    found = [RealRound(p.name) for p in SOURCE.iterdir() if p.is_dir() and p.name.startswith("CB-")]
    return sorted(found, key=lambda r: (r.closes_at, r.track != "weekly", r.round_id))


def models() -> list[tuple[str, str]]:
    """``(model id, provider)`` of every published model, in order of first appearance."""
    seen: dict[str, str] = {}
    for r in rounds():
        for parsed in r.parsed_portfolios():
            seen.setdefault(parsed["model_id"], parsed["provider"])
    return list(seen.items())


def practice_universe_csv() -> bytes:
    """An open round of our own: the last official round's options at their last published closes."""
    last = max(rounds(), key=lambda r: (r.exit_date, r.round_id))
    rows = _csv_rows(last.folder / "prices" / "exit_prices.csv")
    return _prices_csv("option,start_price", [(r["option_id"], r["adj_close"]) for r in rows
                                              if r["option_id"] != CASH])


def alice_portfolio() -> dict:
    return {"allocations": [{"option": "SP500", "percent": 40}, {"option": "GOLD", "percent": 35},
                            {"option": "CASH", "percent": 25}],
            "confidence": 0.5, "rationale": "The index as the core, a hedge in gold, and cash."}
