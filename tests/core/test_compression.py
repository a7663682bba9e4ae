"""Pages, JSON and CSV are gzip-compressed at the app for clients that accept it (issue 24)."""
from __future__ import annotations

import gzip

import pytest

from tests.core.test_boards import fill_board


@pytest.mark.parametrize("path, kind", [("/b/mini-props/", "text/html"),
                                        ("/api/benchmarks/mini-props/leaderboard/", "application/json"),
                                        ("/api/benchmarks/mini-props/leaderboard/?format=csv", "text/csv"),
                                        ("/api/no-such-path/", "application/json")])
def test_answers_are_gzipped_for_clients_that_accept_it(mini_benchmark, client, path, kind):
    fill_board(mini_benchmark, 120)
    plain = client.get(path)
    packed = client.get(path, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert plain.status_code == packed.status_code and packed["Content-Type"].startswith(kind)
    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed["Vary"]
    body = gzip.decompress(packed.content)
    if len(body) > 5000:  # a board: a third or less (the 404's few hundred bytes gain little)
        assert len(packed.content) < len(body) / 3
    if kind != "text/html":  # a page carries a CSRF token masked afresh on each answer
        assert body == plain.content


def test_page_lengths_vary_against_breach(mini_benchmark, client):
    """Django's GZipMiddleware pads each compressed answer with random bytes ("Heal The Breach"),
    so an attacker cannot read a secret off the lengths of many answers of one page."""
    lengths = {len(client.get("/api/benchmarks/mini-props/", HTTP_ACCEPT_ENCODING="gzip").content)
               for _ in range(12)}
    assert len(lengths) > 1
