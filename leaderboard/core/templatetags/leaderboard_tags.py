"""Formatting filters for the pages: metric values, generic table cells, short hashes."""
from __future__ import annotations

import html as htmllib
import math
import re
from numbers import Number

import markdown
from django import template
from django.utils.html import strip_tags

register = template.Library()


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value)))


@register.filter
def metric(value, spec):
    """Format a metric value with its MetricSpec's ``fmt``; "n/a" when unavailable."""
    if _missing(value):
        return "n/a"
    fmt = getattr(spec, "fmt", None) or "{:.4f}"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


@register.filter
def cell(value):
    """A generic table cell: floats to 4 decimals, booleans as yes/no, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if _missing(value):
            return "n/a"
        if value.is_integer() and abs(value) >= 1e4:
            return f"{value:,.0f}"
        return f"{value:.4f}"
    if isinstance(value, Number):
        return str(value)
    return value


@register.filter
def get_item(mapping, key):
    """``mapping[key]`` in a template, None when absent."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def short_hash(value, length: int = 12):
    return (value or "")[: int(length)]


@register.filter
def numeric(value) -> bool:
    """Whether a cell holds a number (right-aligned in tables)."""
    return isinstance(value, Number) and not isinstance(value, bool)


@register.filter
def markdown_summary(text: str) -> str:
    """The first paragraph of a markdown text, as plain text (for lists of benchmarks)."""
    html = markdown.markdown(text or "", extensions=["tables"])
    match = re.search(r"<p>(.*?)</p>", html, re.S)
    return htmllib.unescape(" ".join(strip_tags(match.group(1) if match else html).split()))
