"""Demo modules are discovered as kinds are: every kind has one, each declares how it is loaded."""
from __future__ import annotations

from scoring.kinds import get_kind, kind_names

from leaderboard.demo import DEMO_STYLES, demo_modules


def test_demo_modules_cover_every_kind_of_the_registry_in_the_style_its_kind_needs():
    modules = {m.__name__.rpartition(".")[2]: m for m in demo_modules()}
    assert sorted(modules) == kind_names()
    for name, module in modules.items():
        assert module.DEMO in DEMO_STYLES
        # A static kind's demo is a bundle with baselines; a round kind's runs rounds.
        assert (module.DEMO == "bundle") == (not get_kind(name).is_round_kind), name


def test_demo_modules_by_style_keep_the_load_order():
    assert [m.DEMO for m in demo_modules()] == sorted((m.DEMO for m in demo_modules()), key=DEMO_STYLES.index)
    assert {m.__name__ for m in demo_modules("rounds")} == {"leaderboard.demo.signals", "leaderboard.demo.ranking"}
