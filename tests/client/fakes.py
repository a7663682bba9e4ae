"""A scripted local HTTP server and a response-dropping proxy, for the client's own tests.

``FakeServer`` answers each (method, path) with the responses it was given, in
order (the last one repeats), and records every request it received. A
response may be ``DROP``: the request is read in full, then the connection is
closed without an answer, as when an answer is lost on the way back.

``DroppingProxy`` sits in front of a real server and forwards requests one by
one; it drops the answers to the first ``drop`` POSTs after the server has
handled them, so the server did the work and the client never hears of it.
"""
from __future__ import annotations

import email.parser
import email.policy
import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

DROP = "drop"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return {k.lower(): v for k, v in self.headers.items()}.get(name.lower())

    def multipart(self) -> dict[str, tuple[str | None, bytes]]:
        """Form fields: name -> (filename or None, content)."""
        ctype = self.header("Content-Type") or ""
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + self.body)
        fields = {}
        for part in message.iter_parts():
            fields[part.get_param("name", header="content-disposition")] = (
                part.get_filename(), part.get_payload(decode=True))
        return fields


@dataclass
class Reply:
    status: int = 200
    json: object = None
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class FakeServer:
    def __init__(self):
        self.requests: list[Recorded] = []
        self.routes: dict[tuple[str, str], list] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                server.requests.append(Recorded(self.command, parts.path, parse_qs(parts.query),
                                                dict(self.headers.items()), body))
                reply = server._next(self.command, parts.path)
                if reply == DROP:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = reply.body if reply.json is None else json.dumps(reply.json).encode()
                self.send_response(reply.status)
                content_type = "application/json" if reply.json is not None else "text/plain"
                headers = {"Content-Type": content_type, **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def add(self, method: str, path: str, *replies) -> None:
        """Answer ``method path`` with these replies in order; the last repeats."""
        self.routes[(method, path)] = [r if r == DROP or isinstance(r, Reply) else Reply(json=r) for r in replies]

    def _next(self, method: str, path: str):
        with self._lock:
            queue = self.routes.get((method, path))
            if not queue:
                return Reply(404, {"detail": "Not found.", "errors": [{"row": None, "column": None,
                                                                        "message": "Not found."}]})
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def calls(self, method: str | None = None, path: str | None = None) -> list[Recorded]:
        return [r for r in self.requests if (method is None or r.method == method)
                and (path is None or r.path == path)]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _read_message(sock: socket.socket, buffered: bytes = b"") -> tuple[bytes, bytes] | None:
    """One HTTP message framed by Content-Length; returns (message, bytes read past it) or None at EOF."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return head + b"\r\n\r\n" + rest[:length], rest[length:]


class DroppingProxy:
    def __init__(self, upstream: str, *, drop: int = 1):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.drop_left = drop
        self.posts: list[dict] = []  # {"key": Idempotency-Key or None, "dropped": bool}
        self._lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffered = b""
        try:
            while True:
                got = _read_message(conn, buffered)
                if got is None:
                    return
                request, buffered = got
                with socket.create_connection(self.upstream, timeout=60) as up:
                    up.sendall(request)
                    answer = _read_message(up)
                drop = False
                if request.startswith(b"POST "):
                    key = None
                    for line in request.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"idempotency-key":
                            key = value.strip().decode()
                    with self._lock:
                        drop = self.drop_left > 0
                        self.drop_left -= drop
                        self.posts.append({"key": key, "dropped": drop})
                if drop or answer is None:
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                conn.sendall(answer[0])
        except OSError:
            return
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def closed_port_url() -> str:
    """The address of a port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
