"""Start `manage.py serve` (the command `make demo` runs) against the test database and broker."""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.server import free_port
from tests.support.worker import ROOT, worker_env


class Serve:
    def __init__(self, proc: subprocess.Popen, base: str, log_path: str):
        self.proc, self.base, self.log_path = proc, base, log_path

    def log(self) -> str:
        return Path(self.log_path).read_text(errors="replace")

    def pids(self, name: str) -> list[int]:
        """Every pid serve reported for a child ("scoring worker", "beat scheduler", "web server"), in order."""
        return [int(m) for m in re.findall(rf"serve: {re.escape(name)}[^\n]* started, pid (\d+)", self.log())]

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(2)  # SIGINT, as Ctrl-C
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"serve did not stop within {timeout} s of SIGINT:\n{self.log()[-4000:]}") from None
        return self.proc.returncode


def start_serve(env_overrides: dict | None = None, *, args: tuple[str, ...] = (), timeout: float = 90) -> Serve:
    """`python manage.py serve 127.0.0.1:PORT`, as the Makefile's demo target runs it."""
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", prefix="serve-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "manage.py", "serve", *args, f"127.0.0.1:{port}"], cwd=ROOT,
                            env=worker_env({"PYTHONUNBUFFERED": "1", **(env_overrides or {})}),
                            stdout=log, stderr=subprocess.STDOUT)
    serve = Serve(proc, f"http://127.0.0.1:{port}", log.name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("serve exited:\n" + serve.log()[-4000:])
        try:
            urllib.request.urlopen(serve.base + "/api/benchmarks/", timeout=2)
            if serve.pids("scoring worker") and serve.pids("beat scheduler"):
                return serve
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("serve did not answer:\n" + serve.log()[-4000:])


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False
