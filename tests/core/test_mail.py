"""Mail: EMAIL_URL selects an SMTP server; unset, one .eml file per message in $DATA_DIR/mail/."""
from __future__ import annotations

import email
import email.policy
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail

from leaderboard.env import email_url
from tests.support.smtp import start_smtp

ROOT = Path(__file__).resolve().parents[2]


def test_email_url_reads_scheme_credentials_port_and_timeout():
    assert email_url("smtp+tls://ada%40lab.org:p%3Ass@smtp.example.org") == {
        "EMAIL_HOST": "smtp.example.org", "EMAIL_PORT": 587, "EMAIL_HOST_USER": "ada@lab.org",
        "EMAIL_HOST_PASSWORD": "p:ss", "EMAIL_USE_TLS": True, "EMAIL_USE_SSL": False, "EMAIL_TIMEOUT": 10.0}
    ssl = email_url("smtps://mail.example.org:2465?timeout=3")
    assert (ssl["EMAIL_PORT"], ssl["EMAIL_USE_SSL"], ssl["EMAIL_USE_TLS"], ssl["EMAIL_TIMEOUT"]) == (2465, True, False, 3.0)
    plain = email_url("smtp://localhost")
    assert (plain["EMAIL_PORT"], plain["EMAIL_HOST_USER"], plain["EMAIL_USE_TLS"]) == (25, "", False)


@pytest.mark.parametrize("value, says", [("http://mail.example.org", "scheme 'http'"),
                                         ("smtp://", "no host"), ("smtp://h:port", "bad port"),
                                         ("smtp://h?timeout=soon", "timeout")])
def test_email_url_refuses_what_it_cannot_use(value, says):
    with pytest.raises(ValueError, match=says):
        email_url(value)


def _settings_of(env: dict) -> str:
    code = ("import django; from django.conf import settings as s; django.setup(); "
            "print(s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_USE_TLS, getattr(s, 'EMAIL_FILE_PATH', '-'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "DJANGO_SETTINGS_MODULE": "leaderboard.settings", **env})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_settings_send_by_smtp_with_email_url_and_to_files_without(tmp_path):
    assert _settings_of({"EMAIL_URL": "smtp+tls://u:p@smtp.example.org", "DATA_DIR": str(tmp_path)}) == (
        "django.core.mail.backends.smtp.EmailBackend smtp.example.org 587 True -")
    assert _settings_of({"EMAIL_URL": "", "DATA_DIR": str(tmp_path)}) == (
        f"leaderboard.core.mailfiles.EmlFileBackend localhost 25 False {tmp_path / 'mail'}")


def test_without_email_url_each_message_is_one_eml_file(settings, tmp_path):
    settings.EMAIL_BACKEND = "leaderboard.core.mailfiles.EmlFileBackend"
    settings.EMAIL_FILE_PATH = tmp_path / "outbox"
    sent = mail.send_mass_mail([("First", "one body", None, ["a@example.org"]),
                                ("Second", "two body ünïcode", None, ["b@example.org", "c@example.org"])])
    assert sent == 2
    files = sorted((tmp_path / "outbox").iterdir())
    assert [f.suffix for f in files] == [".eml", ".eml"]
    parsed = [email.message_from_bytes(f.read_bytes(), policy=email.policy.default) for f in files]
    assert sorted((m["Subject"], m["To"], m.get_content().strip()) for m in parsed) == [
        ("First", "a@example.org", "one body"), ("Second", "b@example.org, c@example.org", "two body ünïcode")]
    assert all(m["From"] == settings.DEFAULT_FROM_EMAIL for m in parsed)


def test_email_url_delivers_to_the_smtp_server_with_its_credentials(settings):
    server, controller = start_smtp(user="mailer", password="s3cret:pw")
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        for name, value in email_url(f"smtp://mailer:s3cret%3Apw@{server.host}:{server.port}").items():
            setattr(settings, name, value)
        assert mail.send_mail("Hello", "over SMTP", None, ["ada@example.org"]) == 1
        (received,) = server.wait_for("ada@example.org")
        assert (received.subject, received.text.strip(), server.logins) == ("Hello", "over SMTP", ["mailer"])
    finally:
        controller.stop()
