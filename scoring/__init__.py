"""Pure scoring code: metrics and benchmark kinds. No Django import anywhere below.

Installed on its own as the distribution ``leaderboard-scoring`` (``pip install ./scoring``,
see ``scoring/README.md``); the server installs the same folder and scores with it.
"""

# The version of the scoring code: a round's scores can be re-derived with the release of the
# same version. Change it with any change to what a kind or a metric computes.
__version__ = "0.1.0"
