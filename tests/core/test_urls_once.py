"""``{% url %}`` reversed once per process (leaderboard/core/templatetags/urls_once.py) answers as Django's does."""
from __future__ import annotations

import pytest
from django.template import Context, Template
from django.test import override_settings
from django.urls import NoReverseMatch, reverse

from leaderboard.core.templatetags.urls_once import URLOnceNode


def _render(text: str, **context) -> str:
    return Template(text).render(Context(context))


def test_urls_once_is_the_url_tag_of_every_template():
    assert isinstance(Template("{% url 'benchmark_list' %}").nodelist[0], URLOnceNode)


def test_urls_once_answers_as_reverse_does():
    for _ in range(2):  # the second answer comes from the kept one
        assert _render("{% url 'benchmark_detail' slug %}", slug="a-b") == "/b/a-b/"
        assert _render("{% url 'submission_detail' pk=7 %}") == reverse("submission_detail", args=[7])
        assert _render("{% url 'benchmark_detail' 'x' as there %}[{{ there }}]") == "[/b/x/]"
        assert _render("{% url 'no-such-view' as there %}[{{ there }}]") == "[]"
    with pytest.raises(NoReverseMatch):
        _render("{% url 'no-such-view' %}")
    # An address with characters to escape is escaped as Django's tag escapes it (& is kept by reverse).
    assert _render("{% url 'case_detail' 'b' case %}", case="a&b") == "/b/b/cases/a&amp;b/"


@override_settings(FORCE_SCRIPT_NAME="/sub/")
def test_urls_once_follows_the_script_prefix():
    from django.urls import set_script_prefix

    set_script_prefix("/sub/")
    try:
        assert _render("{% url 'benchmark_detail' 'x' %}") == "/sub/b/x/"
    finally:
        set_script_prefix("/")
    assert _render("{% url 'benchmark_detail' 'x' %}") == "/b/x/"
