"""A real HTTP receiver for webhooks: http.server on 127.0.0.1 in a thread.

``Receiver.script`` says how to answer each request in turn (a status code, ``("sleep", seconds)``
then 200, or ``("redirect", path)``); past the script it answers 200. ``requests`` holds what came.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float = 0.0  # unix seconds, the receiver's clock when the request arrived

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def signature_ok(self, secret: str) -> bool:
        """The check a receiver makes, written from the documented rule (not the server's code)."""
        stamp = self.headers["X-Leaderboard-Timestamp"]
        expected = "sha256=" + hmac.new(secret.encode(), f"{stamp}.".encode() + self.body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, self.headers["X-Leaderboard-Signature"])


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    script: list = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hook"

    def events(self) -> list[str]:
        return [r.json["event"] for r in self.requests if r.path == "/hook"]

    def wait(self, count: int, timeout: float = 30.0) -> list[Request]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_receiver(script: list | None = None) -> Receiver:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with receiver.lock:
                receiver.requests.append(Request(self.path, dict(self.headers.items()), body, time.time()))
                step = receiver.script.pop(0) if receiver.script else 200
            if isinstance(step, tuple) and step[0] == "sleep":
                time.sleep(step[1])
                step = 200
            if isinstance(step, tuple) and step[0] == "redirect":
                self.send_response(302)
                self.send_header("Location", step[1])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            payload = b"ok" if 200 <= step < 300 else b"no"
            try:
                self.send_response(step)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the sender gave up waiting

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver = Receiver(server=server, script=list(script or []))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver
