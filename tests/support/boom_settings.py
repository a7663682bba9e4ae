"""The project's settings with one extra URL that fails, for the logging tests' live server."""
from leaderboard.settings import *  # noqa: F403

ROOT_URLCONF = "tests.support.boom_urls"
