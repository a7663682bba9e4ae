"""``{% url %}`` reversing each address once per process (a builtin: every template's ``url`` is this one).

A page names the same 20-odd addresses on every request (the navigation, a benchmark's links), and
Django's ``reverse`` costs 20 to 60 us each (issue 26: 38% of the benchmark page was its templates).
The URLconf does not change while a process runs, so an address reversed from text and number
arguments is kept, keyed by everything ``reverse`` reads (the view name, the arguments, the current
app, the URLconf and the script prefix). Any other argument (a model instance, whose text may
change) is reversed every time, as Django does.
"""
from __future__ import annotations

from functools import lru_cache

from django import template
from django.conf import settings
from django.template.defaulttags import URLNode
from django.template.defaulttags import url as django_url
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse
from django.utils.html import conditional_escape

register = template.Library()

_PLAIN = (str, int)


@lru_cache(maxsize=4096)
def _reversed(view_name: str, args: tuple, kwargs: tuple, current_app: str | None, urlconf, prefix: str,
              root_urlconf: str) -> str:
    return reverse(view_name, urlconf=urlconf, args=args, kwargs=dict(kwargs), current_app=current_app)


class URLOnceNode(URLNode):
    def render(self, context):
        args = tuple(arg.resolve(context) for arg in self.args)
        kwargs = {k: v.resolve(context) for k, v in self.kwargs.items()}
        view_name = self.view_name.resolve(context)
        try:
            current_app = context.request.current_app
        except AttributeError:
            try:
                current_app = context.request.resolver_match.namespace
            except AttributeError:
                current_app = None
        url = ""
        try:
            if (isinstance(view_name, str) and all(type(a) in _PLAIN for a in args)
                    and all(type(v) in _PLAIN for v in kwargs.values())):
                url = _reversed(view_name, args, tuple(sorted(kwargs.items())), current_app, get_urlconf(),
                                get_script_prefix(), settings.ROOT_URLCONF)
            else:
                url = reverse(view_name, args=args, kwargs=kwargs, current_app=current_app)
        except NoReverseMatch:
            if self.asvar is None:
                raise
        if self.asvar:
            context[self.asvar] = url
            return ""
        return conditional_escape(url) if context.autoescape else url


@register.tag
def url(parser, token):
    """Django's ``{% url %}``, same syntax and answers (``URLOnceNode``)."""
    node = django_url(parser, token)
    return URLOnceNode(node.view_name, node.args, node.kwargs, node.asvar)
