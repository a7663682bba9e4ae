import sys

from leaderboard_client.cli import main

sys.exit(main())
