"""Portfolio rounds for tests: a benchmark, universe and price files, portfolios as JSON."""
from __future__ import annotations

import json
from pathlib import Path

from leaderboard.core.services.benchmarks import benchmark_load_bundle


def portfolio_benchmark(tmp_path: Path, *, slug: str = "cap", config: dict | None = None, daily_limit: int = 50):
    bundle = tmp_path / slug
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "benchmark.json").write_text(json.dumps({
        "slug": slug, "title": "Portfolio test", "kind": "portfolio", "description": "Hand-made rounds.",
        "daily_limit": daily_limit, "config": config or {}}))
    return benchmark_load_bundle(bundle).benchmark


def universe_csv(start_prices: dict[str, float]) -> bytes:
    return ("option,start_price\n" + "".join(f"{o},{p!r}\n" for o, p in start_prices.items())).encode()


def prices_csv(end_prices: dict[str, float]) -> bytes:
    return ("option,end_price\n" + "".join(f"{o},{p!r}\n" for o, p in end_prices.items())).encode()


def portfolio(allocations: dict[str, float], confidence: float = 0.5, rationale: str = "", **extra) -> dict:
    return {"allocations": [{"option": o, "percent": p} for o, p in allocations.items()],
            "confidence": confidence, "rationale": rationale, **extra}


def portfolio_json(allocations: dict[str, float], confidence: float = 0.5, rationale: str = "", **extra) -> bytes:
    return json.dumps(portfolio(allocations, confidence, rationale, **extra)).encode()
