"""Prove the runtime dependencies are complete: serve and score from an install without the dev extras.

Run by `make runtime-check` (and by `make test` when CI=true) with the Python of
`.venv-runtime`, made as the image is made: the runtime lock (`requirements.lock`,
hashes checked), then the project installed as a wheel, not editable. It runs
from a folder laid out as the image's /app (manage.py, templates/, static/ and
PROJECT_DIR pointing there), so the code it runs is the installed package, not
this checkout. It uses the
standard library and the project's own runtime dependencies, nothing from the
dev extras (pytest brings `packaging`, for one, which once hid a missing
dependency of kombu's Redis transport).

With DATABASE_URL set it works in a database of its own (the name with
`_runtime` appended, dropped and created afresh); with REDIS_URL set the broker
and cache are Redis. Neither set: SQLite and the file broker in a temporary
folder. First, the scoring code the server imports is the distribution ``leaderboard-scoring``
built from this checkout's ``scoring/`` (at the version the server pins, every file the same). Steps: migrate, collectstatic, a user and token, a small benchmark, the
demo data (`demo_setup`); then `manage.py serve` (gunicorn, a Celery worker and beat, as `make demo`
runs it) with DEBUG off; one upload over HTTP must end `scored`; a page and a
static file must answer; Ctrl-C (SIGINT) must stop it all cleanly.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

PROPERTIES = [{"name": "A", "higher_is_better": True, "recall": True},
              {"name": "B", "higher_is_better": False, "recall": False}]
ROWS = [(f"ab{i:02d}", i % 5, "public" if i < 7 else "private", float(i + 1), float(10 - i)) for i in range(10)]


def say(message: str) -> None:
    print(f"runtime-check: {message}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scoring_distribution_check() -> str:
    """The environment's ``scoring`` is leaderboard-scoring, built from this checkout's scoring/.

    Installed as a wheel (as the image installs it), so it is compared file by file with the
    checkout: the server scores with exactly the code a participant installs as leaderboard-scoring.
    """
    import importlib.metadata

    import scoring

    installed = importlib.metadata.version("leaderboard-scoring")
    if installed != scoring.__version__:
        raise SystemExit(f"leaderboard-scoring {installed} is installed, but scoring/ is {scoring.__version__}")
    where = Path(scoring.__file__).resolve().parent
    if where == ROOT / "scoring":
        raise SystemExit(f"scoring was imported from the checkout ({where}), not the installed wheel")
    for source in sorted((ROOT / "scoring").rglob("*.py")):
        relative = source.relative_to(ROOT / "scoring")
        if "build" in relative.parts:
            continue
        copy = where / relative
        if not copy.is_file() or copy.read_bytes() != source.read_bytes():
            raise SystemExit(f"the installed scoring/{relative} differs from this checkout's")
    return installed


def fresh_postgres_database(url: str) -> str:
    """DATABASE_URL of a new, empty database beside the one in ``url``."""
    import psycopg

    parts = urllib.parse.urlsplit(url)
    name = parts.path.lstrip("/") + "_runtime"
    admin = urllib.parse.urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


def drop_postgres_database(url: str) -> None:
    import psycopg

    parts = urllib.parse.urlsplit(url)
    admin = urllib.parse.urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def site_folder(work: Path) -> Path:
    """What the image's /app holds beside the installed package (Dockerfile)."""
    site = work / "site"
    site.mkdir()
    shutil.copy2(ROOT / "manage.py", site / "manage.py")
    for folder in ("templates", "static"):
        shutil.copytree(ROOT / folder, site / folder)
    return site


def manage(env: dict, *args: str) -> str:
    result = subprocess.run([PY, "manage.py", *args], cwd=env["PROJECT_DIR"], env=env, capture_output=True,
                            text=True, timeout=300)
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def write_bundle(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "benchmark.json").write_text(json.dumps({
        "slug": "runtime-check", "title": "Runtime check", "kind": "properties", "description": "Smoke test.",
        "daily_limit": 5, "config": {"properties": PROPERTIES, "weights": {"spearman": 0.6, "recall": 0.4},
                                     "recall_fraction": 0.1},
    }))
    lines = ["sequence_id,fold,split,A,B"] + [f"{i},{f},{s},{a},{b}" for i, f, s, a, b in ROWS]
    (folder / "cases.csv").write_text("\n".join(lines) + "\n")
    return folder


def request(method: str, url: str, *, token: str | None = None, body: bytes | None = None,
            content_type: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Token {token}"} if token else {}
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="runtime-check-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    site = site_folder(work)
    env.update({"DJANGO_SETTINGS_MODULE": "leaderboard.settings", "DATA_DIR": str(work / "data"),
                "PROJECT_DIR": str(site),
                "DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
                "SESSION_COOKIE_SECURE": "false", "CSRF_COOKIE_SECURE": "false", "PYTHONUNBUFFERED": "1"})
    database_url = os.environ.get("DATABASE_URL", "")
    if database_url:
        env["DATABASE_URL"] = fresh_postgres_database(database_url)
    if os.environ.get("REDIS_URL"):
        env["REDIS_URL"] = os.environ["REDIS_URL"]
    say(f"python {PY}; database {'PostgreSQL' if database_url else 'SQLite'}; "
        f"broker {'Redis' if env.get('REDIS_URL') else 'file'}; leaderboard-scoring {scoring_distribution_check()}")
    serve = None
    log_path = work / "serve.log"
    try:
        where = subprocess.run([PY, "-c", "import leaderboard; print(leaderboard.__file__)"], cwd=site, env=env,
                               capture_output=True, text=True, check=True).stdout.strip()
        if Path(where).resolve().parent == ROOT / "leaderboard":
            raise SystemExit(f"the package was imported from the checkout ({where}), not the installed wheel")
        say(f"leaderboard imported from {where}")
        manage(env, "migrate", "--noinput")
        manage(env, "collectstatic", "--noinput")
        token = manage(env, "apitoken", "runtime-check", "--create").strip()
        manage(env, "load_benchmark", str(write_bundle(work / "bundle")))
        manage(env, "demo_setup")  # what `make demo` loads, from the same runtime-only install

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with open(log_path, "w") as log:
            serve = subprocess.Popen([PY, "manage.py", "serve", f"127.0.0.1:{port}"], cwd=site, env=env,
                                     stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while True:
            if serve.poll() is not None:
                raise SystemExit(f"serve exited with {serve.returncode} before answering")
            try:
                if request("GET", f"{base}/api/benchmarks/")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("serve did not answer within 90 s")
            time.sleep(0.3)
        say(f"serving on {base}")

        for path in ("/", "/b/runtime-check/", "/b/antibody-developability/", "/b/oncology-catalysts/",
                     "/static/core/site.css", "/api/schema/"):
            status, _ = request("GET", base + path)
            if status != 200:
                raise SystemExit(f"GET {path} answered {status}")

        boundary = uuid.uuid4().hex
        csv_body = "sequence_id,A,B,fold\n" + "".join(f"{i},{a},{b},{f}\n" for i, f, _, a, b in ROWS)
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.csv\"\r\n"
                f"Content-Type: text/csv\r\n\r\n{csv_body}\r\n--{boundary}--\r\n").encode()
        t0 = time.monotonic()
        status, payload = request("POST", f"{base}/api/benchmarks/runtime-check/submissions/", token=token,
                                  body=body, content_type=f"multipart/form-data; boundary={boundary}")
        if status != 202:
            raise SystemExit(f"upload answered {status}: {payload[:500]!r}")
        sub_id = json.loads(payload)["id"]
        while True:
            status, payload = request("GET", f"{base}/api/submissions/{sub_id}/", token=token)
            data = json.loads(payload)
            if data["status"] in ("scored", "failed"):
                break
            if time.monotonic() - t0 > 60:
                raise SystemExit(f"submission {sub_id} still {data['status']} after 60 s")
            time.sleep(0.3)
        if data["status"] != "scored":
            raise SystemExit(f"submission {sub_id} failed: {data['status_reason']}")
        score = data["scores"]["public"]["score"]
        if abs(score - 1.0) > 1e-9:
            raise SystemExit(f"a perfect submission scored {score}, expected 1.0")
        say(f"upload scored {score} in {time.monotonic() - t0:.1f} s")

        # The operator's probes: the worker's heartbeat makes /readyz pass; /metrics counted the upload.
        status, payload = request("GET", f"{base}/readyz")
        if status != 200:
            raise SystemExit(f"/readyz answered {status}: {payload[:800]!r}")
        status, payload = request("GET", f"{base}/metrics")
        scored = [line for line in payload.decode().splitlines()
                  if line.startswith('leaderboard_submissions_total{status="scored"}')]
        if status != 200 or not scored or float(scored[0].split()[-1]) < 1:
            raise SystemExit(f"/metrics answered {status} without the scored upload: {scored}")
        say("/readyz 200, /metrics counts the scored upload")

        serve.send_signal(signal.SIGINT)
        try:
            code = serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise SystemExit("serve did not stop within 60 s of SIGINT") from None
        if code != 0:
            raise SystemExit(f"serve exited with {code} after SIGINT")
        say("SIGINT stopped serve cleanly")
        serve = None
        return 0
    except BaseException:
        if log_path.exists():
            print("---- serve log (tail) ----\n" + log_path.read_text(errors="replace")[-6000:], file=sys.stderr)
        raise
    finally:
        if serve is not None and serve.poll() is None:
            serve.kill()
            serve.wait()
        if database_url:
            drop_postgres_database(env["DATABASE_URL"])


if __name__ == "__main__":
    sys.exit(main())
