"""``lb webhook ...`` installed as a participant installs it, against the real site (gunicorn on the
test database, tasks run inline), with a real receiver on 127.0.0.1 that checks signatures with the
ten lines docs/client.md shows."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model

from leaderboard.core.api.auth import token_create
from leaderboard.core.services.benchmarks import benchmark_load_bundle
from tests.conftest import MINI_ROWS, submission_csv, write_properties_bundle
from tests.support.receiver import start_receiver

SLUG = "hook-props"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def docs_verify():
    """The ``verify`` function of docs/client.md, as a reader would paste it."""
    text = DOCS.read_text(encoding="utf-8").split("## Receiving webhooks", 1)[1]
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    space: dict = {}
    exec(code, space)
    return space["verify"]


@pytest.fixture
def site(transactional_db, tmp_path):
    from tests.support.server import start_gunicorn
    from tests.support.worker import stop_worker

    benchmark_load_bundle(write_properties_bundle(tmp_path / "bundle", MINI_ROWS, slug=SLUG))
    user = get_user_model().objects.create_user("alice", password="pw-alice-123")
    token = token_create(user=user)[1]
    (tmp_path / "good.csv").write_bytes(submission_csv(MINI_ROWS))
    receiver = start_receiver()
    server, base = start_gunicorn(workers=1, threads=4, env_overrides={
        "CELERY_TASK_ALWAYS_EAGER": "true", "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"})
    try:
        yield SimpleNamespace(url=base, token=token, dir=tmp_path, receiver=receiver)
    finally:
        receiver.close()
        print("---- gunicorn log (tail) ----\n" + stop_worker(server)[-3000:])


def _lb(venv_run, site, *argv):
    result = venv_run(["lb", *argv], env={"LEADERBOARD_URL": site.url, "LEADERBOARD_TOKEN": site.token},
                      cwd=site.dir)
    return SimpleNamespace(code=result.returncode, out=result.stdout.decode(), err=result.stderr.decode())


def test_live_lb_webhook_add_list_deliveries_remove(site, venv_run):
    added = _lb(venv_run, site, "webhook", "add", site.receiver.url, "--events", "submission.scored")
    assert added.code == 0, added.err
    hook_id = int(added.out.split()[1].rstrip(":"))
    secret = added.out.split("with it): ")[1].strip()
    bad = _lb(venv_run, site, "webhook", "add", site.receiver.url, "--events", "round.exploded")
    assert bad.code == 3 and "unknown event 'round.exploded'" in bad.err
    listed = json.loads(_lb(venv_run, site, "webhook", "list", "--format", "json").out)
    assert [(h["id"], h["url"], h["events"], h["active"]) for h in listed] == [
        (hook_id, site.receiver.url, ["submission.scored"], True)]

    assert _lb(venv_run, site, "submit", SLUG, "good.csv").code == 0
    (request,) = site.receiver.wait(1)
    assert docs_verify()(secret, request.headers, request.body)
    assert not docs_verify()("x" * 32, request.headers, request.body)
    assert request.json["event"] == "submission.scored" and request.json["data"]["benchmark"] == SLUG

    log = json.loads(_lb(venv_run, site, "webhook", "deliveries", str(hook_id), "--format", "json").out)
    assert [(r["event"], r["attempt"], r["status_code"], r["error"]) for r in log] == [
        ("submission.scored", 1, 200, "")]
    again = _lb(venv_run, site, "webhook", "deliveries", str(hook_id), "--redeliver", str(log[0]["delivery"]))
    assert again.code == 0, again.err
    assert len(site.receiver.wait(2)) == 2
    assert _lb(venv_run, site, "webhook", "remove", str(hook_id)).code == 0
    assert _lb(venv_run, site, "webhook", "list", "--format", "json").out.strip() == "[]"
    assert _lb(venv_run, site, "webhook", "deliveries", str(hook_id)).code == 5
