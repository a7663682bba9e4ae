"""A local OpenAI-compatible chat-completions server for tests.

A real HTTP server on 127.0.0.1 (random port, a thread), so tests exercise the
real client over loopback. It answers ``POST /v1/chat/completions`` in OpenAI's
response shape; what it answers is a behaviour:

* ``"good"``: a redactor: replaces each key of ``redactions`` (str -> token) in
  the last user message and keeps everything else, numbers included;
* ``"drop_number"``: like good, then deletes the first number of the text;
* ``"bogus_token"``: like good, then puts ``[PERSON]`` in front of the text;
* ``"error"``: HTTP 500 with an OpenAI-style error body;
* ``"garbage"``: HTTP 200 whose body is not JSON;
* ``"reidentify"``: answers ``{"ticker": ..., "percent_change": ...}`` from
  ``guesses`` (a substring of the text -> (ticker, move)); no match -> null ticker, 0.0;
* a callable ``(request_json) -> (status, body_dict_or_str)`` for anything else.

``script`` (a list of behaviours) is consumed one per request before falling
back to ``behaviour``. Every request is recorded in ``requests`` (path, headers,
json).
"""
from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: str, model: str = "fake-model") -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class FakeOpenAI:
    def __init__(
        self,
        behaviour: str | Callable[[dict], tuple[int, Any]] = "good",
        *,
        redactions: dict[str, str] | None = None,
        guesses: dict[str, tuple[str | None, float]] | None = None,
        script: list[Any] | None = None,
        api_key: str | None = None,
    ):
        self.behaviour = behaviour
        self.redactions = dict(redactions or {})
        self.guesses = dict(guesses or {})
        self.script = list(script or [])
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with fake._lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    return self._send(401, {"error": {"message": "invalid api key"}})
                if not isinstance(body, dict) or "model" not in body or "messages" not in body:
                    return self._send(400, {"error": {"message": "model and messages are required"}})
                status, payload = fake._answer(body)
                self._send(status, payload)

            def _send(self, status: int, payload: Any) -> None:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that timed out on purpose hangs up mid-answer: expected, not news.
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- behaviours ----------------------------------------------------------------
    def _answer(self, body: dict) -> tuple[int, Any]:
        with self._lock:
            behaviour = self.script.pop(0) if self.script else self.behaviour
        if callable(behaviour):
            return behaviour(body)
        text = next((m.get("content", "") for m in reversed(body["messages"]) if m.get("role") == "user"), "")
        model = body["model"]
        if behaviour == "error":
            return 500, {"error": {"message": "the fake model is down", "type": "server_error"}}
        if behaviour == "garbage":
            return 200, "<html>not json</html>"
        if behaviour == "reidentify":
            for needle, (ticker, move) in self.guesses.items():
                if needle in text:
                    return 200, completion(json.dumps({"ticker": ticker, "percent_change": move}), model)
            return 200, completion(json.dumps({"ticker": None, "percent_change": 0.0}), model)
        redacted = self._redact(text)
        if behaviour == "good":
            return 200, completion(redacted, model)
        if behaviour == "drop_number":
            return 200, completion(re.sub(r"(?<![\w.])\d+(?:\.\d+)?", "", redacted, count=1), model)
        if behaviour == "bogus_token":
            return 200, completion("[PERSON] " + redacted, model)
        raise ValueError(f"unknown behaviour {behaviour!r}")

    def _redact(self, text: str) -> str:
        for original in sorted(self.redactions, key=len, reverse=True):
            text = text.replace(original, self.redactions[original])
        return text
