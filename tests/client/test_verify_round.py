"""``lb verify-round`` where leaderboard-scoring is not installed: it says what to install, exit 2,
before reaching for the network (the full check runs in tests/core/test_round_record.py)."""
from __future__ import annotations


def test_verify_round_without_the_scoring_package_says_what_to_install(venv_run, tmp_path):
    record = tmp_path / "record.zip"
    record.write_bytes(b"not used")
    done = venv_run(["lb", "--url", "http://127.0.0.1:9", "verify-round", "some-benchmark", "3",
                     "--record", str(record)])
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "pip install 'leaderboard-client[verify]'" in stderr
    assert "Traceback" not in stderr
