"""The model stage of de-identification (spec stage 2) and its backend.

The backend talks to any OpenAI-compatible chat-completions endpoint
(``POST {url}/chat/completions`` with ``model`` and ``messages``, ``Authorization:
Bearer KEY``) through urllib from the standard library. Redirects are refused
(they could carry the key elsewhere) and loopback hosts bypass any proxy.

A model's redaction is accepted only if it uses no bracketed token other than the
spec's eleven and keeps every number of its input (``tokens.numbers``); otherwise
the stage retries, then gives up with the reasons in the log.
"""
from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.deid import tokens as T

logger = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class BackendError(Exception):
    """The model endpoint failed: unreachable, an HTTP error, or an answer of the wrong shape."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl} refused", headers, fp)


@dataclass
class OpenAICompatibleBackend:
    """A chat-completions client.

    ``url`` is the API base, e.g. ``https://api.openai.com/v1`` or
    ``http://127.0.0.1:8001/v1``; requests go to ``{url}/chat/completions``.
    ``temperature`` is sent only when set (some models accept only their default).
    """

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    temperature: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"the model URL must be http(s)://host[:port]/path; got {self.url!r}")
        if not self.model:
            raise ValueError("a model name is required")
        if not self.timeout > 0:
            raise ValueError("timeout must be positive")
        self.url = self.url.rstrip("/")
        handlers: list[Any] = [_NoRedirect()]
        if parsed.hostname in ("127.0.0.1", "localhost", "::1"):
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    @property
    def endpoint(self) -> str:
        return f"{self.url}/chat/completions"

    def chat(self, messages: Sequence[dict[str, str]]) -> str:
        """Send the messages; return the first choice's message content."""
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.endpoint, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                raw = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = ""
            try:
                detail = exc.read(500).decode("utf-8", "replace").strip()
            except Exception:  # the error body is a courtesy; its absence is no new failure
                pass
            raise BackendError(f"HTTP {exc.code} from {self.endpoint}: {detail or exc.reason}"[:400]) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BackendError(f"cannot reach {self.endpoint}: {reason}") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise BackendError(f"the answer from {self.endpoint} is larger than {MAX_RESPONSE_BYTES} bytes")
        try:
            doc = json.loads(raw)
            content = doc["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise BackendError(f"the answer from {self.endpoint} is not a chat completion: {raw[:200]!r}") from None
        if not isinstance(content, str):
            raise BackendError("the chat completion has no text content")
        return content


def make_backend(
    url: str | None, model: str | None, api_key: str | None = None, timeout: float = 60.0
) -> OpenAICompatibleBackend | None:
    """The backend the settings describe, or None when no URL or model is configured
    (the model stage is then skipped and cases are marked regex-only)."""
    if not url or not model:
        return None
    return OpenAICompatibleBackend(url=url, model=model, api_key=api_key or None, timeout=float(timeout))


# -- the redaction stage -----------------------------------------------------------

SYSTEM_PROMPT = f"""You de-identify biotech and pharmaceutical press releases for a forecasting benchmark.
Replace every piece of information that could identify the company, its products, the people or the
event with exactly one of these placeholder tokens, and use no other bracketed token:
{T.COMPANY} company and sponsor names (also partners and licensees)
{T.DRUG} drug names, brand names, development codes, companion diagnostics
{T.TICKER} stock ticker symbols
{T.DATE} specific dates
{T.EXECUTIVE} named executives, investigators and any other named person
{T.TRIAL_NAME} clinical trial names (e.g. KEYNOTE-XXX)
{T.LOCATION} cities, states, countries
{T.INSTITUTION} hospitals, universities, research centers
{T.TRIAL_ID} NCT and other registry identifiers
{T.CONFERENCE} medical conferences (ASCO, AACR, etc.)
{T.FINANCIAL_DETAIL} revenue, pricing, deal terms, financial projections
Generalise unique identifiers (a first-in-class mechanism, a unique target or modality) to a broader
category, e.g. "a novel oral kinase inhibitor".
Keep all scientific content: efficacy data (response rates, survival, hazard ratios, confidence
intervals, p-values), safety findings, trial design, the generalised mechanism of action and the
regulatory context. Keep every number that is not part of an identifier exactly as written.
Placeholders already in the text stay as they are.
Answer with the de-identified text only, without commentary or code fences."""

_FENCE_RE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.S)


def clean_model_text(text: str) -> str:
    m = _FENCE_RE.match(text)
    return (m.group(1) if m else text).strip()


def output_problems(source: str, output: str) -> list[str]:
    """Why a model's redaction of ``source`` is unacceptable (empty list: acceptable)."""
    problems = []
    if not output.strip():
        return ["the answer is empty"]
    bogus = T.foreign_tokens(source, output)
    if bogus:
        problems.append(f"uses tokens that are not the spec's: {', '.join(sorted(set(bogus))[:10])}")
    missing = T.missing_numbers(source, output)
    if missing:
        problems.append(f"drops numbers of the input: {', '.join(missing[:10])}")
    if len(output) < 0.5 * len(source.strip()):
        problems.append(f"is much shorter than the input ({len(output)} vs {len(source.strip())} characters)")
    return problems


@dataclass
class LLMOutcome:
    text: str | None  # the accepted redaction, or None when the stage gave up
    log: list[str]
    attempts: int


def llm_redact(text: str, backend: OpenAICompatibleBackend, *, attempts: int = 2) -> LLMOutcome:
    """Ask the backend to redact ``text``; accept the first answer that passes ``output_problems``."""
    log: list[str] = []
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}]
    for i in range(1, max(1, attempts) + 1):
        try:
            answer = clean_model_text(backend.chat(messages))
        except BackendError as exc:
            log.append(f"llm attempt {i}: backend error: {exc}")
            logger.warning("deid llm attempt %s: backend error: %s", i, exc)
            continue
        problems = output_problems(text, answer)
        if problems:
            log.append(f"llm attempt {i}: rejected: the answer {'; '.join(problems)}")
            logger.warning("deid llm attempt %s rejected: %s", i, "; ".join(problems))
            continue
        log.append(f"llm attempt {i}: accepted")
        return LLMOutcome(answer, log, i)
    log.append(f"llm stage skipped after {max(1, attempts)} attempt(s); the regex stages alone apply")
    return LLMOutcome(None, log, max(1, attempts))
