"""The model stage and the re-identification check, against a fake OpenAI-compatible
server over real HTTP on loopback."""
from __future__ import annotations

import json
import statistics
import time

import pytest

from leaderboard.deid import (
    BackendError,
    OpenAICompatibleBackend,
    ReidCase,
    deidentify,
    make_backend,
    reidentification_check,
)
from tests.support.fake_openai import FakeOpenAI, completion

TEXT = ("Acme Bio (NASDAQ: ACMX) said the ZENITH-2 trial of zelvotinib met its primary endpoint: ORR 45.2% "
        "vs 21.3% (p<0.001), median PFS 11.2 vs 7.4 months (HR 0.62). A first-in-class Lumenase "
        "inhibitor developed with Orbital Partners.")
IDS = {"company": "Acme Bio", "drugs": "zelvotinib"}
# What the model is expected to catch after the regex stage: things no list or identifier knew.
MODEL_REDACTIONS = {"first-in-class Lumenase inhibitor": "novel enzyme inhibitor", "Orbital Partners": "[COMPANY]"}


@pytest.fixture
def fake():
    with FakeOpenAI(redactions=MODEL_REDACTIONS, api_key="sk-test") as server:
        yield server


def backend(server, **kw) -> OpenAICompatibleBackend:
    return OpenAICompatibleBackend(url=server.url, model="fake-model", api_key="sk-test", **kw)


def test_good_redaction_accepted(fake):
    r = deidentify(TEXT, IDS, backend=backend(fake))
    assert r.stages_run == ["regex_pre", "llm", "regex_post"]
    assert not r.regex_only
    assert "Orbital" not in r.redacted_text and "Lumenase" not in r.redacted_text
    assert "45.2%" in r.redacted_text and "0.62" in r.redacted_text
    assert any(rep["stage"] == "llm" and rep["original"] == "Orbital Partners" and rep["token"] == "[COMPANY]"
               for rep in r.replacements)
    assert "llm attempt 1: accepted" in r.log
    req = fake.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test"
    assert req["json"]["model"] == "fake-model"
    system, user = req["json"]["messages"]
    assert system["role"] == "system" and all(tok in system["content"] for tok in ("[COMPANY]", "[FINANCIAL_DETAIL]"))
    assert user["role"] == "user" and "Acme" not in user["content"]  # the model sees the pre-stage output


def test_dropped_number_rejected_then_retried(fake):
    fake.script = ["drop_number"]
    r = deidentify(TEXT, IDS, backend=backend(fake), attempts=2)
    assert not r.regex_only and len(fake.requests) == 2
    assert any("attempt 1: rejected" in line and "drops numbers" in line for line in r.log)


def test_bogus_token_rejected_every_time_then_skipped(fake):
    fake.behaviour = "bogus_token"
    r = deidentify(TEXT, IDS, backend=backend(fake), attempts=3)
    assert r.regex_only and r.stages_run == ["regex_pre", "regex_post"]
    assert len(fake.requests) == 3
    assert sum("[PERSON]" in line for line in r.log) == 3
    assert "skipped after 3 attempt(s)" in r.log[-2]
    assert "Orbital Partners" in r.redacted_text  # the model's work was not used


def test_server_error_logged_and_skipped(fake):
    fake.behaviour = "error"
    r = deidentify(TEXT, IDS, backend=backend(fake), attempts=2)
    assert r.regex_only and len(fake.requests) == 2
    assert any("HTTP 500" in line and "the fake model is down" in line for line in r.log)


def test_non_json_answer_is_a_backend_error(fake):
    fake.behaviour = "garbage"
    with pytest.raises(BackendError, match="not a chat completion"):
        backend(fake).chat([{"role": "user", "content": "hi"}])


def test_wrong_key_is_a_backend_error(fake):
    b = OpenAICompatibleBackend(url=fake.url, model="m", api_key="wrong")
    with pytest.raises(BackendError, match="HTTP 401"):
        b.chat([{"role": "user", "content": "hi"}])


def test_timeout_is_a_backend_error(fake):
    def slow(body):
        time.sleep(1.5)
        return 200, completion("late")

    fake.behaviour = slow
    with pytest.raises(BackendError, match="cannot reach"):
        backend(fake, timeout=0.3).chat([{"role": "user", "content": "hi"}])


def test_unreachable_server_is_a_backend_error():
    with FakeOpenAI() as server:
        url = server.url
    with pytest.raises(BackendError, match="cannot reach"):
        OpenAICompatibleBackend(url=url, model="m", timeout=2).chat([{"role": "user", "content": "hi"}])


def test_code_fences_removed(fake):
    fake.behaviour = lambda body: (200, completion("```\n" + body["messages"][-1]["content"] + "\n```"))
    r = deidentify(TEXT, IDS, backend=backend(fake))
    assert not r.regex_only and "```" not in r.redacted_text


def test_backend_construction():
    assert make_backend(None, "m") is None and make_backend("http://x/v1", "") is None
    b = make_backend("https://api.example.org/v1/", "gpt-x", "sk-secret", timeout=5)
    assert b.endpoint == "https://api.example.org/v1/chat/completions" and b.timeout == 5.0
    assert "sk-secret" not in repr(b)
    for bad in ("file:///etc/passwd", "ftp://x/v1", "not a url"):
        with pytest.raises(ValueError):
            make_backend(bad, "m")


def test_reidentification_check(fake):
    fake.behaviour = "reidentify"
    fake.guesses = {"alpha": ("ACMX", 11.0), "beta": ("$ZZZZ", -4.0), "gamma": ("NASDAQ: CCCC", 3.0)}
    cases = [
        ReidCase("a", "text alpha", "ACMX", 12.5),  # ticker right, move off by 1.5 (within 2)
        ReidCase("b", "text beta", "BBBB", 6.0),  # ticker wrong, off by 10
        ReidCase("c", "text gamma", "cccc", -0.5),  # ticker right (normalised), off by 3.5
        ReidCase("d", "text delta", "DDDD", 1.5),  # no idea: null ticker, 0.0 -> off by 1.5
    ]
    rep = reidentification_check(cases, backend(fake))
    assert rep.cases == 4 and rep.answered == 4
    assert rep.ticker_hits == 2 and rep.reidentification_rate == pytest.approx(50.0)
    assert rep.price_hits == 2 and rep.price_recall_within == pytest.approx(50.0)
    assert rep.mae == pytest.approx((1.5 + 10 + 3.5 + 1.5) / 4)
    assert rep.pearson == pytest.approx(statistics.correlation([11.0, -4.0, 3.0, 0.0], [12.5, 6.0, -0.5, 1.5]))
    json.dumps(rep.as_dict())  # serialisable for the management command


def test_reidentification_check_counts_failures_as_misses(fake):
    fake.behaviour = "error"
    rep = reidentification_check([ReidCase("a", "x", "ACMX", 1.0)], backend(fake), attempts=2)
    assert rep.answered == 0 and rep.reidentification_rate == 0.0 and rep.mae is None and rep.pearson is None
    assert len(rep.log) == 2 and "HTTP 500" in rep.log[0]
