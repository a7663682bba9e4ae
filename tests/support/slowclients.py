"""Slow clients (issue 19, item 4): connections that send their request head a byte at a time.

``SlowHeaderClients`` holds ``count`` such connections open: each sends a request line, then one
more byte of an endless header every ``every`` seconds; a connection the server drops is opened
again at once, so ``count`` are held for as long as it runs. ``timed_requests`` meanwhile asks for a
page the normal way and returns how long each answer took. Used by tests/core/test_deploy.py and
benchmarks/slow_clients.py.
"""
from __future__ import annotations

import itertools
import socket
import threading
import time
import urllib.request


class SlowHeaderClients:
    def __init__(self, port: int, count: int, *, every: float = 1.0):
        self.port, self.count, self.every = port, count, every
        self.reopened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SlowHeaderClients:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _open(self) -> tuple[socket.socket, itertools.cycle] | None:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            return s, itertools.cycle(b"X-Slow: aaaaaaaa\r\n")
        except OSError:
            return None

    def _run(self) -> None:
        held = [self._open() for _ in range(self.count)]
        while not self._stop.wait(self.every):
            for i, conn in enumerate(held):
                if conn is not None:
                    try:
                        conn[0].send(bytes([next(conn[1])]))
                        continue
                    except OSError:
                        conn[0].close()
                self.reopened += 1
                held[i] = self._open()
        for conn in held:
            if conn is not None:
                conn[0].close()


def timed_requests(url: str, seconds: float, *, pause: float = 0.1, timeout: float = 10) -> tuple[list[float], int]:
    """GET ``url`` again and again for ``seconds``: (seconds each answered request took, failures)."""
    took, failures = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.monotonic()
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                resp.read()
                ok = resp.status == 200
        except OSError:
            ok = False
        if ok:
            took.append(time.monotonic() - started)
        else:
            failures += 1
        time.sleep(pause)
    return took, failures


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else float("inf")
