"""deploy/nginx.conf, as docker-compose.yml mounts it, run by Debian's nginx in front of a local gunicorn."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.server import free_port
from tests.support.worker import ROOT


def nginx_path() -> str:
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nginx is not installed (apt-get install nginx-light); CI=true, so the proxy test must run",
                        pytrace=False)
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    return path


def start_nginx(upstream_port: int, tmp: Path, static_root: Path | None = None) -> tuple[subprocess.Popen, int]:
    """deploy/nginx.conf, as docker-compose.yml mounts it, pointed at a local gunicorn and port (and
    ``static_root`` for the volume's collected static files)."""
    port = free_port()
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    site = site.replace("server web:8000;", f"server 127.0.0.1:{upstream_port};")
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    site = site.replace("/data/staticfiles/", f"{static_root or tmp / 'staticfiles'}/")
    site = site.replace("access_log /dev/stdout leaderboard;", f"access_log {tmp}/access.log leaderboard;")
    for folder in ("staticfiles", "body", "proxy"):
        (tmp / folder).mkdir(exist_ok=True)
    (tmp / "site.conf").write_text(site)
    (tmp / "nginx.conf").write_text(f"""
daemon off;
user root;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 1024; }}  # the nginx image's default
http {{
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/proxy;
    uwsgi_temp_path {tmp}/proxy;
    scgi_temp_path {tmp}/proxy;
    include {tmp}/site.conf;
}}
""")
    check = subprocess.run([nginx_path(), "-t", "-c", str(tmp / "nginx.conf")], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen([nginx_path(), "-c", str(tmp / "nginx.conf")], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("nginx did not listen:\n" + (tmp / "error.log").read_text())
