"""Formatting filters for the pages: metric values and intervals, generic table cells, short hashes,
placeholder tokens of de-identified texts."""
from __future__ import annotations

import html as htmllib
import math
import re
from numbers import Number

import markdown
import nh3
from django import template
from django.utils.html import conditional_escape, format_html, strip_tags
from django.utils.safestring import mark_safe

from scoring.kinds.base import HUGE_MAGNITUDE, format_number, no_negative_zero

from leaderboard.deid.tokens import TOKEN_RE

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
        return format_number(value, fmt)
    except (ValueError, TypeError):
        return str(value)


@register.filter
def cell(value):
    """A generic table cell: floats to 4 decimals, booleans as yes/no, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and abs(value) >= HUGE_MAGNITUDE and not _missing(value):
        # Also an int: PostgreSQL's jsonb gives 1e300 back as 1 followed by 300 zeros.
        return format_number(value, "{:.4f}")
    if isinstance(value, float):
        if _missing(value):
            return "n/a"
        if value.is_integer() and abs(value) >= 1e4:
            return f"{value:,.0f}"
        return no_negative_zero(f"{value:.4f}")
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
def inline_markdown(text: str) -> str:
    """One line of markdown (links, emphasis) as sanitised inline HTML, without the paragraph."""
    html = markdown.markdown(text or "")
    html = re.sub(r"^<p>(.*)</p>$", r"\1", html.strip(), flags=re.S)
    return mark_safe(nh3.clean(html, tags={"a", "em", "strong", "code"}))


@register.filter
def markdown_summary(text: str) -> str:
    """The first paragraph of a markdown text, as plain text (for lists of benchmarks)."""
    html = markdown.markdown(text or "", extensions=["tables"])
    match = re.search(r"<p>(.*?)</p>", html, re.S)
    return htmllib.unescape(" ".join(strip_tags(match.group(1) if match else html).split()))


@register.simple_tag
def metric_value(value, spec, low=None, high=None):
    """A metric formatted with its spec, followed by its interval when both bounds are known:
    ``40.0 [29.5–45.3]``."""
    text = metric(value, spec)
    if _missing(value) or _missing(low) or _missing(high):
        return text
    return format_html('{} <span class="ci" title="95% bootstrap interval">[{}–{}]</span>',
                       text, metric(low, spec), metric(high, spec))


_FROM_METRICS = object()


@register.simple_tag
def metric_interval(metrics, spec, intervals, value=_FROM_METRICS):
    """``metric_value`` of ``metrics[spec.name]`` (or of ``value``) with the bounds
    ``intervals`` (a kind's ``metric_intervals``) names for it, if any."""
    metrics = metrics or {}
    low, high = (intervals or {}).get(spec.name, (None, None))
    if value is _FROM_METRICS:
        value = metrics.get(spec.name)
    return metric_value(value, spec, metrics.get(low), metrics.get(high))


@register.filter(needs_autoescape=True)
def redaction_marks(text, autoescape=True):
    """Escape a de-identified text and mark its placeholder tokens (``[COMPANY]``...) so they stand out."""
    esc = conditional_escape if autoescape else (lambda s: s)
    text = "" if text is None else str(text)
    out, last = [], 0
    for m in TOKEN_RE.finditer(text):
        out.append(esc(text[last:m.start()]))
        out.append(f'<mark class="redacted">{esc(m.group(0))}</mark>')
        last = m.end()
    out.append(esc(text[last:]))
    return mark_safe("".join(out))


@register.filter
def percent(value, digits: int = 1):
    """A share already in percent (0..100) as "12.5%"; a dash when unknown."""
    if _missing(value):
        return "–"
    return f"{float(value):.{int(digits)}f}%"


@register.filter
def signed(value, digits: int = 1):
    """A difference with its sign (+1.5, −2.0); a dash when unknown."""
    if _missing(value):
        return "–"
    return f"{float(value):+.{int(digits)}f}".replace("-", "−")
