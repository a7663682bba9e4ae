"""The client against a scripted local server: retry policy, error mapping, request shapes, paging, waiting."""
from __future__ import annotations

import datetime as dt
import io
import json

import pytest

from leaderboard_client import (
    AuthenticationFailed,
    Client,
    Conflict,
    DailyLimitReached,
    InvalidRequest,
    NetworkError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ServerError,
    WaitTimeout,
)
from tests.client.fakes import DROP, Reply, closed_port_url

SLUG = "bench"
SUBMIT = f"/api/benchmarks/{SLUG}/submissions/"
RECEIPT = {"id": 7, "status": "queued", "url": "http://x/api/submissions/7/", "audit_hash": "ab" * 32,
           "remaining_today": 4}


def _client(url, **kw) -> tuple[Client, list[float]]:
    client = Client(url, "secret-token", backoff=0.01, **kw)
    slept: list[float] = []
    client._sleep = slept.append
    return client, slept


def _errors(*items):
    return {"detail": items[0]["message"] if len(items) == 1 else f"{len(items)} problems found",
            "errors": list(items)}


# -- retries ----------------------------------------------------------------------------
def test_client_get_is_retried_after_a_lost_answer(fake):
    fake.add("GET", "/api/benchmarks/", DROP, [{"slug": SLUG, "title": "B", "kind": "properties"}])
    client, slept = _client(fake.url)
    assert [b.slug for b in client.benchmarks()] == [SLUG]
    assert len(fake.calls("GET")) == 2 and len(slept) == 1


def test_client_get_is_retried_on_503_honouring_retry_after(fake):
    fake.add("GET", "/api/benchmarks/", Reply(503, body=b"busy", headers={"Retry-After": "3"}), [])
    client, slept = _client(fake.url)
    assert client.benchmarks() == []
    assert slept == [3.0]


def test_client_get_gives_up_after_its_retries_with_the_server_error(fake):
    fake.add("GET", "/api/benchmarks/", Reply(502, body=b"<html>Bad Gateway</html>"))
    client, slept = _client(fake.url, retries=3)
    with pytest.raises(ServerError) as err:
        client.benchmarks()
    assert err.value.status == 502 and len(fake.calls()) == 4 and len(slept) == 3
    assert err.value.detail == f"Bad Gateway (GET {fake.url}/api/benchmarks/)"


def test_client_backoff_doubles_up_to_the_cap(fake):
    fake.add("GET", "/api/benchmarks/", DROP)
    client = Client(fake.url, backoff=1.0, max_backoff=4.0, retries=5)
    slept: list[float] = []
    client._sleep = slept.append
    with pytest.raises(NetworkError) as err:
        client.benchmarks()
    assert err.value.attempts == 6
    # full-jitter halves at most: attempt n waits in [b*2^(n-1)/2, b*2^(n-1)], capped at 4
    for n, seconds in enumerate(slept, start=1):
        top = min(4.0, 2 ** (n - 1))
        assert top / 2 <= seconds <= top


def test_client_submit_resends_with_the_same_key_after_a_lost_answer(fake, tmp_path):
    path = tmp_path / "preds.csv"
    path.write_bytes(b"sequence_id,A\nx,1\n")
    fake.add("POST", SUBMIT, DROP, Reply(202, RECEIPT, headers={"Idempotent-Replayed": "true"}))
    client, _ = _client(fake.url)
    receipt = client.submit(SLUG, path)
    first, second = fake.calls("POST")
    assert first.header("Idempotency-Key") == second.header("Idempotency-Key") == receipt.idempotency_key
    assert len(receipt.idempotency_key) >= 32
    assert first.multipart()["file"] == second.multipart()["file"] == ("preds.csv", path.read_bytes())
    assert receipt.id == 7 and receipt.replayed is True


def test_client_submit_makes_a_new_key_per_call(fake):
    fake.add("POST", SUBMIT, Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    client.submit(SLUG, b"a,b\n1,2\n")
    client.submit(SLUG, b"a,b\n1,2\n")
    keys = [r.header("Idempotency-Key") for r in fake.calls("POST")]
    assert len(set(keys)) == 2 and all(keys)


def test_client_submit_with_an_explicit_key_sends_it(fake):
    fake.add("POST", SUBMIT, Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    assert client.submit(SLUG, b"a\n1\n", idempotency_key="round-42-model-a").idempotency_key == "round-42-model-a"
    assert fake.calls("POST")[0].header("Idempotency-Key") == "round-42-model-a"


def test_client_submit_without_a_key_is_never_resent_once_sent(fake):
    fake.add("POST", SUBMIT, DROP, Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    with pytest.raises(NetworkError, match="no answer"):
        client.submit(SLUG, b"a\n1\n", idempotency_key="")
    assert len(fake.calls("POST")) == 1
    assert fake.calls("POST")[0].header("Idempotency-Key") is None


def test_client_submit_without_a_key_is_not_resent_on_503(fake):
    fake.add("POST", SUBMIT, Reply(503, body=b"unavailable"), Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    with pytest.raises(ServerError):
        client.submit(SLUG, b"a\n1\n", idempotency_key="")
    assert len(fake.calls("POST")) == 1


def test_client_staff_post_is_never_resent_once_sent(fake):
    fake.add("POST", f"/api/benchmarks/{SLUG}/rounds/3/truth/", DROP, Reply(201, {"version": 2}))
    client, _ = _client(fake.url)
    with pytest.raises(NetworkError):
        client.truth_load(SLUG, 3, b"id,target\na,1\n")
    assert len(fake.calls("POST")) == 1


def test_client_any_request_is_retried_when_the_connection_was_refused():
    client, slept = _client(closed_port_url(), retries=2)
    with pytest.raises(NetworkError, match="could not connect") as err:
        client.submit(SLUG, b"a\n1\n", idempotency_key="")  # nothing was sent, so resending is safe
    assert err.value.attempts == 3 and len(slept) == 2


def test_client_get_throttled_briefly_is_waited_out(fake):
    fake.add("GET", "/api/submissions/7/",
             Reply(429, _errors({"row": None, "column": None, "message": "Request was throttled."}),
                   headers={"Retry-After": "2"}),
             {"id": 7, "status": "scored"})
    client, slept = _client(fake.url)
    assert client.submission(7).status == "scored" and slept == [2.0]


# -- error mapping ------------------------------------------------------------------------
def test_client_400_raises_invalid_request_with_every_row_and_column(fake):
    body = _errors({"row": 3, "column": "A", "message": "'abc' is not a number"},
                   {"row": 6, "column": "sequence_id", "message": "unknown id 'zz99'"},
                   {"row": None, "column": None, "message": "2 ids are missing"})
    fake.add("POST", SUBMIT, Reply(400, {**body, "remaining_today": 5}))
    client, _ = _client(fake.url)
    with pytest.raises(InvalidRequest) as err:
        client.submit(SLUG, b"x")
    e = err.value
    assert e.status == 400 and e.detail == "3 problems found"
    assert [(i.row, i.column, i.message) for i in e.errors] == [
        (3, "A", "'abc' is not a number"), (6, "sequence_id", "unknown id 'zz99'"), (None, None, "2 ids are missing")]
    assert [str(i) for i in e.errors] == ["row 3, column A: 'abc' is not a number",
                                          "row 6, column sequence_id: unknown id 'zz99'", "2 ids are missing"]
    assert "row 3, column A: 'abc' is not a number" in str(e)
    assert e.body["remaining_today"] == 5
    assert len(fake.calls("POST")) == 1  # an answer is an answer: never resent


def test_client_429_past_the_daily_limit_carries_reset_time_and_retry_after(fake):
    message = "Daily limit reached: 5 accepted submissions per UTC day. It resets at 2030-01-02 00:00 UTC."
    fake.add("POST", SUBMIT, Reply(429, {**_errors({"row": None, "column": None, "message": message}),
                                         "remaining_today": 0, "reset_at": "2030-01-02T00:00:00+00:00"},
                                   headers={"Retry-After": "3600"}))
    client, slept = _client(fake.url)
    with pytest.raises(DailyLimitReached) as err:
        client.submit(SLUG, b"x")
    assert err.value.reset_at == dt.datetime(2030, 1, 2, tzinfo=dt.timezone.utc)
    assert err.value.retry_after == 3600.0 and err.value.detail == message
    assert slept == [] and len(fake.calls("POST")) == 1


def test_client_429_throttle_without_reset_at_computes_it_from_retry_after(fake):
    fake.add("POST", SUBMIT, Reply(429, _errors({"row": None, "column": None, "message": "throttled"}),
                                   headers={"Retry-After": "60"}))
    client, _ = _client(fake.url)
    before = dt.datetime.now(dt.timezone.utc)
    with pytest.raises(RateLimited) as err:
        client.submit(SLUG, b"x")
    assert not isinstance(err.value, DailyLimitReached)
    assert err.value.retry_after == 60.0
    assert before + dt.timedelta(seconds=59) <= err.value.reset_at <= before + dt.timedelta(seconds=62)


@pytest.mark.parametrize("status,cls", [(401, AuthenticationFailed), (403, PermissionDenied), (404, NotFound),
                                        (409, Conflict), (413, PayloadTooLarge), (422, InvalidRequest),
                                        (500, ServerError)])
def test_client_status_maps_to_its_exception_with_the_message(fake, status, cls):
    fake.add("POST", SUBMIT, Reply(status, _errors({"row": None, "column": "file", "message": f"said {status}"})))
    client, _ = _client(fake.url)
    with pytest.raises(cls) as err:
        client.submit(SLUG, b"x")
    assert err.value.status == status and err.value.detail == f"said {status}"
    assert err.value.errors[0].column == "file"


def test_client_409_no_round_open_carries_the_servers_message(fake):
    message = "this benchmark has no round open for submissions; the next opens 2030-01-05 12:00 UTC"
    fake.add("POST", SUBMIT, Reply(409, _errors({"row": None, "column": None, "message": message})))
    client, _ = _client(fake.url)
    with pytest.raises(Conflict, match="next opens 2030-01-05"):
        client.submit(SLUG, b"x")


def test_client_html_error_page_becomes_a_readable_error(fake):
    fake.add("GET", "/api/benchmarks/", Reply(500, body=b"<!doctype html>\n<h1>Server Error (500)</h1>"))
    client, _ = _client(fake.url, retries=0)
    with pytest.raises(ServerError) as err:
        client.benchmarks()
    assert err.value.detail == f"Internal Server Error (GET {fake.url}/api/benchmarks/)"


# -- what is sent -------------------------------------------------------------------------
def test_client_sends_the_token_and_accepts_env_defaults(fake, monkeypatch):
    fake.add("GET", "/api/benchmarks/", [])
    monkeypatch.setenv("LEADERBOARD_URL", fake.url + "/api/")
    monkeypatch.setenv("LEADERBOARD_TOKEN", "from-env")
    Client().benchmarks()
    assert fake.calls()[0].header("Authorization") == "Token from-env"
    assert fake.calls()[0].path == "/api/benchmarks/"


def test_client_without_a_url_says_how_to_give_one(monkeypatch):
    monkeypatch.delenv("LEADERBOARD_URL", raising=False)
    with pytest.raises(ValueError, match="LEADERBOARD_URL"):
        Client()


def test_client_submit_list_of_dicts_is_a_json_body_with_entrant_and_round(fake):
    fake.add("POST", SUBMIT, Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    rows = [{"case_id": "c1", "predicted_impact": "neutral", "confidence": 0.5}]
    client.submit(SLUG, rows, entrant="model-b", round=12)
    call = fake.calls("POST")[0]
    assert call.header("Content-Type") == "application/json"
    assert call.json() == {"predictions": rows, "entrant": "model-b", "round": 12}


def test_client_submit_bytes_guesses_json_or_csv_and_sends_form_fields(fake):
    fake.add("POST", SUBMIT, Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    client.submit(SLUG, b'  {"allocations": []}', round=3)
    client.submit(SLUG, b"id,prediction\na,0.5\n", entrant="m")
    json_call, csv_call = fake.calls("POST")
    assert json_call.multipart() == {"file": ("predictions.json", b'  {"allocations": []}'), "round": (None, b"3")}
    assert csv_call.multipart() == {"file": ("predictions.csv", b"id,prediction\na,0.5\n"), "entrant": (None, b"m")}


def test_client_submit_dict_is_sent_as_a_json_file(fake):
    fake.add("POST", SUBMIT, Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    portfolio = {"allocations": [{"option": "AAPL", "percent": 60}, {"option": "CASH", "percent": 40}],
                 "confidence": 0.7, "rationale": "momentum"}
    client.submit(SLUG, portfolio)
    name, data = fake.calls("POST")[0].multipart()["file"]
    assert name == "predictions.json" and json.loads(data) == portfolio


def test_client_submit_dataframe_is_sent_as_csv_with_its_named_index(fake):
    pandas = pytest.importorskip("pandas")
    fake.add("POST", SUBMIT, Reply(202, RECEIPT))
    client, _ = _client(fake.url)
    frame = pandas.DataFrame({"prediction": [0.25, 0.75]}, index=pandas.Index(["a", "b"], name="id"))
    client.submit(SLUG, frame)
    client.submit(SLUG, frame.reset_index())
    for call in fake.calls("POST"):
        name, data = call.multipart()["file"]
        assert name == "predictions.csv"
        assert data.decode().splitlines() == ["id,prediction", "a,0.25", "b,0.75"]


def test_client_submit_refuses_what_it_cannot_send(fake):
    client, _ = _client(fake.url)
    with pytest.raises(TypeError, match="DataFrame"):
        client.submit(SLUG, 42)
    assert fake.calls() == []


def test_client_verify_posts_predictions_and_parses_the_result(fake):
    result = {"metrics": {"cases_evaluated": 2, "exact_match_accuracy": 0.5},
              "results": [{"case_id": "c1", "correct": True}, {"case_id": "c2", "correct": False}],
              "direction_confusion_matrix": {"negative": {"negative": 1}}}
    fake.add("POST", f"/api/benchmarks/{SLUG}/verify/", DROP, result)
    client, _ = _client(fake.url)
    out = client.verify(SLUG, [{"case_id": "c1", "predicted_impact": "neutral"}])
    assert out.metrics["exact_match_accuracy"] == 0.5 and len(out.results) == 2
    assert out.direction_confusion_matrix == {"negative": {"negative": 1}}
    assert len(fake.calls("POST")) == 2  # verify stores nothing, so a lost answer is asked again


# -- boards and paging --------------------------------------------------------------------
def _page(n, count, next_url):
    rows = [{"rank": i, "entrant": f"e{i}", "score": 1 - i / 100, "metrics": {"score": 1 - i / 100},
             "submissions": 1, "updated_at": "2030-01-01T00:00:00Z"} for i in range(n * 2 - 1, n * 2 + 1)]
    return {"rows": rows, "count": count, "next": next_url}


def test_client_leaderboard_page_and_iterator_over_every_page(fake):
    board = f"/api/benchmarks/{SLUG}/leaderboard/"
    # The server names itself by another host (behind a proxy); the client stays on its own address.
    fake.add("GET", board, _page(1, 6, f"http://internal:8000{board}?page=2&page_size=2"))
    client, _ = _client(fake.url)
    page = client.leaderboard(SLUG, page=1, page_size=2)
    assert (page.count, len(page), page.next) == (6, 2, f"http://internal:8000{board}?page=2&page_size=2")
    assert page.rows[0].updated_at == dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)

    fake.add("GET", board, _page(1, 6, f"http://internal:8000{board}?page=2&page_size=2"),
             _page(2, 6, f"{fake.url}{board}?page=3&page_size=2"), _page(3, 6, None))
    rows = list(client.iter_leaderboard(SLUG, page_size=2))
    assert [r.rank for r in rows] == [1, 2, 3, 4, 5, 6]
    queries = [c.query for c in fake.calls("GET", board)][1:]
    assert queries == [{"page_size": ["2"]}, {"page": ["2"], "page_size": ["2"]}, {"page": ["3"], "page_size": ["2"]}]


def test_client_leaderboard_without_paging_fields_is_one_page(fake):
    fake.add("GET", f"/api/benchmarks/{SLUG}/leaderboard/",
             {"split": "public", "rows": [{"rank": 1, "entrant": "a", "score": 0.5, "metrics": {}}]})
    client, _ = _client(fake.url)
    page = client.leaderboard(SLUG, split="public")
    assert page.count == 1 and page.next is None and page.split == "public"
    assert fake.calls()[0].query == {"split": ["public"]}
    assert [r.entrant for r in client.iter_leaderboard(SLUG)] == ["a"]


# -- waiting ------------------------------------------------------------------------------
def test_client_wait_polls_to_a_final_status_reporting_progress(fake):
    fake.add("GET", "/api/submissions/7/", {"id": 7, "status": "queued"}, {"id": 7, "status": "scoring"},
             {"id": 7, "status": "scored", "scores": {"public": {"score": 0.9}}})
    client, slept = _client(fake.url)
    seen = []
    sub = client.wait(7, interval=0.5, progress=lambda s, elapsed: seen.append(s.status))
    assert seen == ["queued", "scoring", "scored"] and slept == [0.5, 0.5]
    assert sub.scores == {"public": {"score": 0.9}} and sub.is_final


def test_client_wait_stops_at_accepted_for_round_submissions(fake):
    fake.add("GET", "/api/submissions/8/", {"id": 8, "status": "accepted", "counted": True})
    client, _ = _client(fake.url)
    sub = client.wait(8)
    assert sub.status == "accepted" and sub.counted is True and not sub.is_final


def test_client_wait_times_out_with_the_last_state(fake):
    fake.add("GET", "/api/submissions/7/", {"id": 7, "status": "queued", "status_reason": "waiting for a worker"})
    client = Client(fake.url, "t")
    with pytest.raises(WaitTimeout, match=r"still queued after 0\.3 s") as err:
        client.wait(7, timeout=0.3, interval=0.1)
    assert err.value.submission.status_reason == "waiting for a worker"


def test_client_submission_detail_is_typed(fake):
    fake.add("GET", "/api/submissions/9/", {
        "id": 9, "benchmark": SLUG, "entrant": "a", "status": "failed", "status_reason": "no longer valid",
        "scores": {}, "errors": [{"row": 2, "column": "A", "message": "bad"}], "audit_hash": "h",
        "created_at": "2030-01-01T10:00:00.5Z", "scored_at": None, "provisional": False, "truth_version": None})
    client, _ = _client(fake.url)
    sub = client.submission(9)
    assert sub.status == "failed" and str(sub.errors[0]) == "row 2, column A: bad"
    assert sub.created_at == dt.datetime(2030, 1, 1, 10, 0, 0, 500000, tzinfo=dt.timezone.utc)
    assert sub.scored_at is None and sub.raw["status_reason"] == "no longer valid"


def test_client_cases_and_submission_cases_and_select(fake):
    fake.add("GET", f"/api/benchmarks/{SLUG}/cases/", [{"case_id": "c1", "text": "t"}])
    fake.add("GET", "/api/submissions/9/cases/", [{"case_id": "c1", "predicted": 1.0}])
    fake.add("POST", "/api/submissions/9/select/", {"id": 9, "status": "scored", "is_selected": True})
    client, _ = _client(fake.url)
    assert client.cases(SLUG) == [{"case_id": "c1", "text": "t"}]
    assert client.submission_cases(9) == [{"case_id": "c1", "predicted": 1.0}]
    assert client.select(9).raw["is_selected"] is True


def test_client_is_a_context_manager(fake):
    fake.add("GET", "/api/benchmarks/", [])
    with Client(fake.url) as client:
        assert client.benchmarks() == []
    assert client._http.is_closed


def test_client_universe_writes_the_file(fake, tmp_path):
    fake.add("GET", f"/api/benchmarks/{SLUG}/rounds/4/universe/", Reply(200, body=b"id\na\nb\n"))
    client, _ = _client(fake.url)
    target = tmp_path / "u.csv"
    assert client.universe(SLUG, 4, path=target) == b"id\na\nb\n"
    assert target.read_bytes() == b"id\na\nb\n"
    assert io.BytesIO(target.read_bytes()).read().count(b"\n") == 3
