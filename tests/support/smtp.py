"""A real SMTP server in the test process (aiosmtpd on 127.0.0.1, a random port, its own thread).

``smtp_server`` (tests/conftest.py) starts one and points Django's mail at it through the same
``EMAIL_URL`` parsing the settings use; ``server.messages`` holds what it received, parsed.
"""
from __future__ import annotations

import email
import email.policy
import re
import socket
import time
from dataclasses import dataclass, field

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: email.message.EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def text(self) -> str:
        part = self.message.get_body(preferencelist=("plain",)) or self.message
        return part.get_content()

    def links(self) -> list[str]:
        return re.findall(r"https?://\S+", self.text)


@dataclass
class SmtpServer:
    host: str
    port: int
    user: str = ""
    password: str = ""
    messages: list[Received] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        creds = f"{self.user}:{self.password}@" if self.user else ""
        return f"smtp://{creds}{self.host}:{self.port}"

    def to(self, address: str) -> list[Received]:
        return [m for m in self.messages if address in m.rcpt_tos]

    def wait_for(self, address: str, count: int = 1, timeout: float = 10.0) -> list[Received]:
        """The messages to ``address`` once there are ``count`` of them (the server runs in a thread)."""
        deadline = time.monotonic() + timeout
        while len(self.to(address)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        found = self.to(address)
        assert len(found) >= count, f"{len(found)} messages to {address}, expected {count}: {self.messages}"
        return found

    # aiosmtpd handler hooks
    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.original_content or envelope.content,
                                           policy=email.policy.default)
        self.messages.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"

    def authenticate(self, server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login.decode() == self.user
              and auth_data.password.decode() == self.password)
        if ok:
            self.logins.append(self.user)
        return AuthResult(success=ok)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_smtp(*, user: str = "", password: str = "") -> tuple[SmtpServer, Controller]:
    server = SmtpServer("127.0.0.1", _free_port(), user=user, password=password)
    options = {}
    if user:  # AUTH over plain text on loopback, for the test only
        options = {"authenticator": server.authenticate, "auth_require_tls": False, "auth_required": True}
    controller = Controller(server, hostname=server.host, port=server.port, **options)
    controller.start()
    return server, controller
