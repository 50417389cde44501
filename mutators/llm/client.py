"""The Anthropic Messages API client of the LLM operators.

One call = one `Request` answered by one `Reply` or one `LLMCallError`. Answers are streamed (a
full rewrite of a large kernel takes minutes); retries, waits for `retry-after` (capped) and the
streaming itself all fit in one wall-clock limit per call (`llm.timeout_s`). Safe to call from
several threads: a semaphore bounds the calls in flight.
"""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass

from evo.config import LLMConfig
from evo.core.errors import EvoError
from evo.mutators.llm.prices import cost_usd, require_price

PREFLIGHT = "preflight"  # the prompt hash of the test call before a run (replay repeats its cost)
CHARS_PER_TOKEN = 3.5  # rough size of source code in tokens, for the cacheable-prefix check


class LLMCallError(EvoError):
    """The call produced no answer. `kind`: "unavailable" (network, timeout, overload, rate limit,
    server error, an answer that is not a message: nobody's fault, no penalty for the operator) or
    "refused" (authentication, permission, unknown model, a rejected request: every later call
    would fail the same way, so the run stops; the message says what to fix)."""

    def __init__(self, message: str, kind: str = "unavailable", *, replayed: bool = False):
        super().__init__(message)
        self.kind, self.replayed = kind, replayed


#: HTTP statuses that will not go away by asking again, and what to fix
REFUSALS = {
    400: "the API rejected the request: check llm.model, llm.max_tokens, llm.thinking_budget and llm.temperature",
    401: "the API key was not accepted: check ANTHROPIC_API_KEY",
    403: "the API key may not use this model or endpoint: check ANTHROPIC_API_KEY's permissions and llm.model",
    404: "the API does not know this model (or llm.base_url is wrong): check llm.model and llm.base_url",
    422: "the API rejected the request: check llm.model, llm.max_tokens, llm.thinking_budget and llm.temperature",
}


def prompt_hash(model: str, system: str, prompt: str) -> str:
    return hashlib.sha256("\0".join((model, system, prompt)).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Request:
    """One prompt: the stable prefix (the parent's source, cached) and the per-call text after it."""
    operator: str
    model: str
    system: str
    stable: str
    variable: str
    parent_id: str = ""
    occurrence: int = 0  # how many times this prompt was asked before in the run (replay matches on it)
    generation: int | None = None  # the search generation that asks

    @property
    def text(self) -> str:
        return f"{self.stable}\n\n{self.variable}"

    @property
    def hash(self) -> str:
        return prompt_hash(self.model, self.system, self.text)


@dataclass(frozen=True)
class Reply:
    text: str
    model: str
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    replayed: bool = False

    @classmethod
    def from_row(cls, row: dict, model: str, *, replayed: bool) -> Reply:
        """The answer an llm_calls row recorded."""
        return cls(row["response"] or "", row["model"] or model, row["stop_reason"], row["input_tokens"] or 0,
                   row["output_tokens"] or 0, row["cache_write_tokens"] or 0, row["cache_read_tokens"] or 0,
                   row["cost_usd"] or 0.0, row["latency_s"] or 0.0, replayed)


class AnthropicClient:
    def __init__(self, cfg: LLMConfig):
        import anthropic
        self.cfg = cfg
        self.price = require_price(cfg)
        self._sdk = anthropic
        # retries are ours: they must fit in the call's wall-clock limit, with retry-after capped
        self.client = anthropic.Anthropic(base_url=cfg.base_url or None, max_retries=0, timeout=cfg.idle_timeout_s)
        self._slots = threading.BoundedSemaphore(cfg.concurrency)
        self.sleep = time.sleep  # tests watch the waits

    def complete(self, req: Request) -> Reply:
        start = time.monotonic()
        deadline = start + self.cfg.timeout_s
        with self._slots:
            attempt = 0
            while True:
                try:
                    return self._once(req, start, deadline)
                except _Retry as r:
                    attempt += 1
                    left = deadline - time.monotonic()
                    if attempt > self.cfg.max_retries or left <= 0:
                        why = (f"{attempt - 1} retries" if attempt > self.cfg.max_retries
                               else f"the call's limit llm.timeout_s={self.cfg.timeout_s:g} s")
                        raise LLMCallError(f"{r.reason} (gave up after {why})") from None
                    wait = r.retry_after if r.retry_after is not None else min(8.0, 0.5 * 2 ** (attempt - 1))
                    self.sleep(max(0.0, min(wait, self.cfg.retry_after_cap_s, left)))

    def params(self, req: Request) -> dict:
        """The Messages API request: system text, then the parent's source marked as the end of the
        cached prefix (when the prefix is long enough for the model to cache), then the per-call text."""
        stable: dict = {"type": "text", "text": req.stable}
        if (len(req.system) + len(req.stable)) / CHARS_PER_TOKEN >= self.price.min_cache_tokens:
            stable["cache_control"] = {"type": "ephemeral"}
        p: dict = {"model": self.cfg.model, "max_tokens": self.cfg.max_tokens,
                   "system": [{"type": "text", "text": req.system}],
                   "messages": [{"role": "user", "content": [stable, {"type": "text", "text": req.variable}]}]}
        if self.cfg.thinking_budget:
            p["thinking"] = {"type": "enabled", "budget_tokens": self.cfg.thinking_budget}
        if self.cfg.temperature is not None:  # this SDK has no temperature argument: it travels in the body
            p["extra_body"] = {"temperature": self.cfg.temperature}
        return p

    def _once(self, req: Request, start: float, deadline: float) -> Reply:
        sdk = self._sdk
        timeout = max(1.0, min(self.cfg.idle_timeout_s, deadline - time.monotonic()))
        try:
            with self.client.messages.stream(**self.params(req), timeout=timeout) as stream:
                for _ in stream:
                    if time.monotonic() > deadline:
                        raise LLMCallError(f"the answer was still streaming at the call's limit "
                                           f"llm.timeout_s={self.cfg.timeout_s:g} s")
                msg = stream.get_final_message()
        except sdk.APIStatusError as e:
            status = getattr(e, "status_code", 0)
            if status in REFUSALS:
                raise LLMCallError(f"{REFUSALS[status]} ({type(e).__name__} {status}: {str(e)[:300]})",
                                   "refused") from None
            raise _Retry(f"{type(e).__name__} {status}: {str(e)[:300]}", _retry_after(e.response)) from None
        except (sdk.APIConnectionError, sdk.APITimeoutError) as e:
            raise _Retry(f"{type(e).__name__}: {str(e)[:300]}") from None
        except LLMCallError:
            raise
        except Exception as e:  # whatever the SDK or the transport raises: the call failed, the run goes on
            raise LLMCallError(f"the call failed, or the API answered with something that is not a message stream "
                               f"({type(e).__name__}: {str(e)[:300]}); check llm.base_url and any proxy between") from None
        return self.reply(msg, time.monotonic() - start)

    def reply(self, msg, latency_s: float) -> Reply:
        content, u = getattr(msg, "content", None), getattr(msg, "usage", None)
        if not isinstance(content, list) or u is None:  # e.g. a proxy's HTML page with status 200
            raise LLMCallError(f"the API answered with something that is not a message ({type(msg).__name__}: "
                               f"{str(msg)[:200]!r}); check llm.base_url and any proxy between")
        tokens: dict[str, int] = {"input_tokens": u.input_tokens or 0, "output_tokens": u.output_tokens or 0,
                                  "cache_write_tokens": getattr(u, "cache_creation_input_tokens", 0) or 0,
                                  "cache_read_tokens": getattr(u, "cache_read_input_tokens", 0) or 0}
        text = "".join(getattr(b, "text", "") for b in content if getattr(b, "type", "") == "text")
        return Reply(text, getattr(msg, "model", None) or self.cfg.model, getattr(msg, "stop_reason", None),
                     tokens["input_tokens"], tokens["output_tokens"], tokens["cache_write_tokens"],
                     tokens["cache_read_tokens"], cost_usd(self.price, **tokens), latency_s)

    def preflight(self) -> Reply:
        """One tiny call (max_tokens=1) with the run's key and model, before any work. LLMCallError:
        "refused" says what to fix; "unavailable" (the API cannot be reached now) says why."""
        try:
            msg = self.client.messages.create(model=self.cfg.model, max_tokens=1,
                                              messages=[{"role": "user", "content": "ping"}],
                                              timeout=min(60.0, self.cfg.timeout_s))
        except self._sdk.APIStatusError as e:
            status = getattr(e, "status_code", 0)
            kind = "refused" if status in REFUSALS else "unavailable"
            raise LLMCallError(f"{REFUSALS.get(status, 'the API could not answer')} "
                               f"({type(e).__name__} {status}: {str(e)[:300]})", kind) from None
        except Exception as e:
            raise LLMCallError(f"{type(e).__name__}: {str(e)[:300]}") from None
        return self.reply(msg, 0.0)


class _Retry(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.reason, self.retry_after = reason, retry_after


def _retry_after(response) -> float | None:
    """The server's retry-after (retry-after-ms or retry-after seconds), if it gave one."""
    headers = getattr(response, "headers", None) or {}
    for key, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            return float(headers[key]) * scale
        except (KeyError, TypeError, ValueError):
            continue
    return None
