"""The three-stage de-identification pipeline (spec: regex, model, regex)."""
from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from leaderboard.deid.llm import OpenAICompatibleBackend, llm_redact
from leaderboard.deid.regex import DeidLists, load_lists, regex_stage


@dataclass
class DeidResult:
    """What ``deidentify`` made of one text.

    ``replacements``: one entry per replaced span, ``{"stage", "rule", "original",
    "token", "start"}``; ``start`` is the offset in the text that stage received
    (the original text for ``regex_pre``); ``token`` is "" where structure was
    stripped (wire attribution, dateline, URL...). ``regex_only`` is True when no
    model redaction was accepted (no backend, or every attempt rejected or failed);
    ``log`` says why, in words, stage by stage.
    """

    redacted_text: str
    stages_run: list[str] = field(default_factory=list)
    regex_only: bool = True
    replacements: list[dict[str, Any]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_WORD_RE = re.compile(r"\[[A-Z_]+\]|\w+|[^\w\s]")


def _diff_replacements(source: str, output: str, stage: str) -> list[dict[str, Any]]:
    """What a model changed, as replacements (word-level diff)."""
    a = list(_WORD_RE.finditer(source))
    b = list(_WORD_RE.finditer(output))
    sm = difflib.SequenceMatcher(None, [m.group(0) for m in a], [m.group(0) for m in b], autojunk=False)
    out = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op not in ("replace", "delete") or i1 == i2:
            continue
        start, end = a[i1].start(), a[i2 - 1].end()
        new = output[b[j1].start() : b[j2 - 1].end()] if j2 > j1 else ""
        out.append({"stage": stage, "rule": "model", "original": source[start:end], "token": new, "start": start})
    return out


def deidentify(
    text: str,
    identifiers: Mapping[str, Any] | None = None,
    lists: DeidLists | None = None,
    backend: OpenAICompatibleBackend | None = None,
    *,
    attempts: int = 2,
) -> DeidResult:
    """Run the spec's three stages on one press release.

    ``identifiers``: the case's ``company``, ``ticker``, ``drugs``, ``executives``
    (lists, or semicolon-separated strings). ``lists``: ``load_lists()`` by default.
    ``backend``: the model endpoint, or None to skip the model stage (the result
    is then ``regex_only``). ``attempts``: model calls before the stage gives up.
    """
    lists = lists if lists is not None else load_lists()
    result = DeidResult(redacted_text=text)
    current, log = regex_stage(text, identifiers, lists, stage="regex_pre")
    result.stages_run.append("regex_pre")
    result.replacements += log
    result.log.append(f"regex_pre: {len(log)} replacement(s)")

    if backend is None:
        result.log.append("llm: skipped, no model backend configured (regex-only)")
    else:
        outcome = llm_redact(current, backend, attempts=attempts)
        result.log += outcome.log
        if outcome.text is not None:
            result.stages_run.append("llm")
            result.replacements += _diff_replacements(current, outcome.text, "llm")
            result.regex_only = False
            current = outcome.text

    current, log = regex_stage(current, identifiers, lists, stage="regex_post")
    result.stages_run.append("regex_post")
    result.replacements += log
    result.log.append(f"regex_post: {len(log)} replacement(s)")
    result.redacted_text = current
    return result
