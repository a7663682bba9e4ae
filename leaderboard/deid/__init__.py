"""De-identification of press releases (spec/impact-benchmark.txt), pure Python.

No Django here: the management commands and the admin call these functions.

* ``load_lists(directory=None) -> DeidLists``: the editable name lists in
  lists/ (trial names, institutions, cities and regions, conferences,
  companion diagnostics), each compiled into one alternation.
* ``make_backend(url, model, api_key=None, timeout=60.0)``: an
  ``OpenAICompatibleBackend`` for ``POST {url}/chat/completions``, or None when
  no URL or model is configured.
* ``deidentify(text, identifiers, lists=None, backend=None, *, attempts=2) -> DeidResult``.
* ``reidentification_check(cases, backend, *, tolerance_pp=2.0) -> ReidReport``.
"""
from leaderboard.deid.llm import BackendError, OpenAICompatibleBackend, make_backend, output_problems
from leaderboard.deid.pipeline import DeidResult, deidentify
from leaderboard.deid.regex import DeidLists, load_lists, regex_stage
from leaderboard.deid.reid import ReidCase, ReidReport, reidentification_check
from leaderboard.deid.tokens import TOKENS

__all__ = [
    "TOKENS",
    "BackendError",
    "DeidLists",
    "DeidResult",
    "OpenAICompatibleBackend",
    "ReidCase",
    "ReidReport",
    "deidentify",
    "load_lists",
    "make_backend",
    "output_problems",
    "regex_stage",
    "reidentification_check",
]
