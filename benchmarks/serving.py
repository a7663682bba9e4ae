"""What the benchmarks that drive `manage.py serve` share: start it and wait, stop it, build an upload."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def serve_start(*, port: int, env: dict, log_path: Path, timeout: float = 120) -> subprocess.Popen:
    """`manage.py serve 127.0.0.1:PORT` with its output in ``log_path``; returns once the API answers."""
    with open(log_path, "w") as log:
        serve = subprocess.Popen([sys.executable, "manage.py", "serve", f"127.0.0.1:{port}"], cwd=ROOT, env=env,
                                 stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/benchmarks/", timeout=2)
            return serve
        except OSError:
            if time.monotonic() > deadline or serve.poll() is not None:
                serve.kill()
                sys.exit("serve did not answer:\n" + log_path.read_text()[-3000:])
            time.sleep(0.5)


def serve_stop(serve: subprocess.Popen) -> None:
    """Ctrl-C, as a person stops it; killed if it has not stopped after 90 s."""
    if serve.poll() is None:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(timeout=90)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()


def multipart_file(text: str, filename: str = "p.csv") -> tuple[bytes, str]:
    """(body, Content-Type) of a multipart upload with ``text`` as its field ``file``."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: text/csv\r\n\r\n{text}\r\n--{boundary}--\r\n").encode()
    return body, f"multipart/form-data; boundary={boundary}"
