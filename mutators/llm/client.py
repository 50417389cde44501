"""Clients that answer prompts: the Anthropic Messages API, or replay from an earlier archive.

Both return a `Reply`; both are safe to call from several threads (a semaphore bounds the
number of requests in flight). Retries with backoff on rate limits, overload, server errors and
timeouts are the SDK's own (max_retries, timeout).
"""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass

from evo.config import LLMConfig
from evo.core.errors import ConfigError, EvoError

# USD per million tokens by model family: input, output, cache write, cache read. List prices, used
# as an estimate: the archive records tokens too, so costs can be recomputed.
PRICES = {
    "claude-opus": (5.0, 25.0, 6.25, 0.50),
    "claude-sonnet": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku": (1.0, 5.0, 1.25, 0.10),
}
DEFAULT_PRICE = PRICES["claude-sonnet"]


class LLMCallError(EvoError):
    """The request failed after the SDK's retries (or no recorded answer exists in replay).

    `kind`: "unavailable" (network, timeout, overload, rate limit, server error, an answer that is not
    a message: nobody's fault, no penalty for the operator) or "refused" (authentication, permission,
    unknown model, a rejected request: every later call would fail the same way)."""

    def __init__(self, message: str, kind: str = "unavailable"):
        super().__init__(message)
        self.kind = kind


#: SDK errors that will not go away by asking again
REFUSALS = ("AuthenticationError", "PermissionDeniedError", "NotFoundError", "BadRequestError",
            "UnprocessableEntityError")


@dataclass(frozen=True)
class Reply:
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    latency_s: float = 0.0
    replayed: bool = False

    @property
    def cost_usd(self) -> float:
        if self.replayed:
            return 0.0
        price = next((p for prefix, p in PRICES.items() if self.model.startswith(prefix)), DEFAULT_PRICE)
        tokens = (self.input_tokens, self.output_tokens, self.cache_write_tokens, self.cache_read_tokens)
        return sum(t * p for t, p in zip(tokens, price)) / 1e6


def prompt_hash(model: str, system: str, prompt: str) -> str:
    return hashlib.sha256("\0".join((model, system, prompt)).encode()).hexdigest()[:32]


class AnthropicClient:
    def __init__(self, cfg: LLMConfig):
        import anthropic
        self.cfg = cfg
        self._sdk = anthropic
        self.client = anthropic.Anthropic(base_url=cfg.base_url or None, max_retries=cfg.max_retries,
                                          timeout=cfg.timeout_s)
        self._slots = threading.BoundedSemaphore(cfg.concurrency)

    def complete(self, system: str, prompt: str) -> Reply:
        start = time.monotonic()
        with self._slots:
            try:
                # this SDK has no temperature argument: it travels in the body when configured
                extra = {"temperature": self.cfg.temperature} if self.cfg.temperature is not None else None
                resp = self.client.messages.create(
                    model=self.cfg.model, max_tokens=self.cfg.max_tokens, extra_body=extra,
                    # the stable part (ABI, GPU facts, rules) is cached between calls
                    system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                    messages=[{"role": "user", "content": prompt}])
            except self._sdk.APIError as e:
                kind = "refused" if type(e).__name__ in REFUSALS else "unavailable"
                raise LLMCallError(f"{type(e).__name__}: {str(e)[:300]}", kind) from None
            except Exception as e:  # whatever the SDK or the transport raises: the call failed, the run goes on
                raise LLMCallError(f"the API call failed: {type(e).__name__}: {str(e)[:300]}") from None
        content, u = getattr(resp, "content", None), getattr(resp, "usage", None)
        if not isinstance(content, list) or u is None:  # e.g. a proxy's HTML page with status 200
            raise LLMCallError(f"the API answered with something that is not a message ({type(resp).__name__}: "
                               f"{str(resp)[:200]!r}); check llm.base_url and any proxy between")
        text = "".join(getattr(b, "text", "") for b in content)
        return Reply(text, resp.model or self.cfg.model, u.input_tokens or 0, u.output_tokens or 0,
                     getattr(u, "cache_creation_input_tokens", 0) or 0, getattr(u, "cache_read_input_tokens", 0) or 0,
                     time.monotonic() - start)


class ReplayClient:
    """Answers with the responses recorded in another archive, matched by prompt (model, system, text)."""

    def __init__(self, cfg: LLMConfig):
        from evo.archive import Archive
        from evo.archive.llm_calls import recorded_responses
        self.cfg = cfg
        source = Archive.open(cfg.replay_from or "", readonly=True)
        self.answers = recorded_responses(source)
        source.close()
        if not self.answers:
            raise ConfigError(f"llm.replay_from={cfg.replay_from} holds no recorded LLM responses")
        self._lock = threading.Lock()

    def complete(self, system: str, prompt: str) -> Reply:
        key = prompt_hash(self.cfg.model, system, prompt)
        with self._lock:
            queue = self.answers.get(key)
            if not queue:
                raise LLMCallError("replay: no recorded response for this prompt")
            text = queue.pop(0) if len(queue) > 1 else queue[0]
        return Reply(text, self.cfg.model, replayed=True)
