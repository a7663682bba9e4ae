"""`python manage.py help CMD` of the organisers' commands (docs/organisers.md): every argument says what it is."""
from __future__ import annotations

import pytest
from django.core.management import load_command_class

COMMANDS = ("apitoken", "deidentify", "entrant_flag", "load_benchmark", "reidentify_check", "reveal", "round_close",
            "round_open", "stakes_load", "truth_load")


@pytest.mark.parametrize("name", COMMANDS)
def test_every_argument_of_an_organiser_command_has_a_help_text(name):
    parser = load_command_class("leaderboard.core", name).create_parser("manage.py", name)
    own = [a for a in parser._actions if a.dest not in {
        "help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color",
        "skip_checks"}]
    assert own and [a.dest for a in own if not a.help] == []


def test_round_close_help_says_how_a_static_benchmark_is_closed():
    # docs/organisers.md: `python manage.py round_close SLUG 1` closes a static benchmark early
    parser = load_command_class("leaderboard.core", "round_close").create_parser("manage.py", "round_close")
    assert "static benchmark: 1" in parser.format_help()
