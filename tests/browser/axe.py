"""The accessibility check of the browser tests: axe-core (vendored, tests/browser/vendor/axe-core/) run
inside the page under test, in Debian's Chromium, against WCAG 2.1 A and AA and axe's best practices."""
from __future__ import annotations

from pathlib import Path

AXE_JS = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
# What Lighthouse's accessibility audit checks (it runs axe-core too): WCAG 2.x A and AA, and axe's best practices.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]

_RUN = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' -> ' + (n.failureSummary || '').replace(/\\s+/g, ' '))}));
}"""


def axe_violations(page) -> list[dict]:
    """axe's violations on the page as it is now: ``[{"id", "impact", "help", "nodes"}]`` (empty: none).

    The page's context must bypass the site's Content-Security-Policy (``bypass_csp=True``): the
    engine is injected as a script of its own, which the policy would rightly refuse.
    """
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=AXE_JS.read_text(encoding="utf-8"))
    return page.evaluate(_RUN, AXE_TAGS)


def axe_report(violations: list[dict]) -> str:
    """The violations as lines a failing test prints: rule, impact, what it asks, where."""
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']}")
        lines.extend(f"    {n}" for n in v["nodes"])
    return "\n".join(lines)
