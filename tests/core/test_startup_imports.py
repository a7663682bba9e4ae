"""What a web process imports when it starts: every gunicorn worker, ``manage.py`` command and test
server pays for it, so libraries only scoring needs wait until something scores."""
from __future__ import annotations

import subprocess
import sys

from tests.support.worker import ROOT, worker_env


def test_a_web_process_starts_without_scipy_stats_and_still_ranks_when_asked(tmp_path):
    code = ("import django, sys; django.setup(); import leaderboard.wsgi; print('scipy.stats' in sys.modules); "
            "from scoring.metrics_properties import spearman; print(spearman([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=worker_env({"DATA_DIR": str(tmp_path)}),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded_at_start, rho = out.stdout.split()
    assert loaded_at_start == "False"
    # Spearman by hand: rank differences 0, 1, 1, so 1 - 6 * 2 / (3 * (9 - 1)) = 0.5.
    assert float(rho) == 0.5
