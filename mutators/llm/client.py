"""The Anthropic Messages API client of the LLM operators.

One call = one `Request` answered by one `Reply` or one `LLMCallError`. Answers are streamed (a
full rewrite of a large kernel takes minutes); retries, waits for `retry-after` (capped) and the
streaming itself all fit in one wall-clock limit per call (`llm.timeout_s`). Safe to call from
several threads: a semaphore bounds the calls in flight.
"""
from __future__ import annotations

import hashlib
import math
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import TypeGuard

from evo.config import LLMConfig
from evo.core.errors import EvoError
from evo.mutators.llm.edits import MAX_ANSWER
from evo.mutators.llm.prices import cost_usd, listed_price, require_price, same_model

PREFLIGHT = "preflight"  # the prompt hash of the test call before a run (replay repeats its cost)
CHARS_PER_TOKEN = 3.5  # rough size of source code in tokens, for the cacheable-prefix check
# Text and code run at about 3-5 characters a token; a usage figure below text length / this (an answer of
# 286 characters reported as 0 output tokens, a 37,000-character prompt as 0 input, or as 1,200) is not
# believed. Twice the densest real text: a server can under-report by at most about 3x, never bill nothing.
MOST_CHARS_PER_TOKEN = 10
MOST_INPUT_TOKENS = 2_000_000  # more than any model's context: a usage figure above it is not believed
_stopping = threading.Event()  # the run is stopping: calls not yet sent are not sent (stop_new_calls)


def stop_new_calls() -> None:
    """A stopping run (Ctrl-C) waits for the answers it asked for, but sends nothing new: calls still
    waiting for a slot or between retries fail at once, at no cost. A new client clears it."""
    _stopping.set()


class LLMCallError(EvoError):
    """The call produced no answer. `kind`: "unavailable" (network, timeout, overload, rate limit,
    server error, an answer that is not a message: nobody's fault, no penalty for the operator),
    "refused" (authentication, permission, payment, unknown model, a rejected request: every later
    call would fail the same way, so the run stops; the message says what to fix) or "no_edit" (an
    answer too long to be a kernel, given up while streaming)."""

    def __init__(self, message: str, kind: str = "unavailable", *, replayed: bool = False, cost_usd: float = 0.0):
        super().__init__(message)
        self.kind, self.replayed = kind, replayed
        self.cost_usd = cost_usd  # what the failed attempts cost (answers cut mid-stream are billed)


#: HTTP statuses that will not go away by asking again, and what to fix
REFUSALS = {
    400: "the API rejected the request: check llm.model, llm.max_tokens, llm.thinking_budget and llm.temperature",
    401: "the API key was not accepted: check ANTHROPIC_API_KEY",
    402: "the API would not take payment: check the account's billing and credit balance",
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
    note: str = ""  # e.g. the API's usage figures were not believable: the cost is an estimate

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
        # answers uncompressed: a compressed event that expands to gigabytes is decoded whole before
        # the length cap can see it (a server that compresses all the same still can; its call ends at its limit)
        # no redirects followed: a server's 3xx must not send the prompts (and the parents' sources) elsewhere
        self.client = anthropic.Anthropic(base_url=cfg.base_url or None, max_retries=0, timeout=cfg.idle_timeout_s,
                                          default_headers={"accept-encoding": "identity"},
                                          http_client=anthropic.DefaultHttpxClient(follow_redirects=False,
                                                                                   timeout=cfg.idle_timeout_s))
        self._slots = threading.BoundedSemaphore(cfg.concurrency)
        self.sleep = time.sleep  # tests watch the waits
        self.budget_spent: Callable[[], bool] = lambda: False  # the run's recorder says (build_llm_operators)
        _stopping.clear()

    def complete(self, req: Request, on_cost: Callable[[float], object] | None = None,
                 on_send: Callable[[], object] | None = None) -> Reply:
        """The answer to `req`, within llm.timeout_s. `on_cost` hears what the call cost (answered or failed)
        while it still holds its concurrency slot: a call waiting for the slot then sees the budget
        (`budget_spent`) as that cost left it, and is not sent once it is spent. `on_send` is called once,
        when the call holds its slot and is about to go out (a call still waiting for a slot costs nothing)."""
        with self._slots:  # the call's limit starts when it may go out, not while it waits its turn
            start = time.monotonic()
            deadline = start + self.cfg.timeout_s
            attempt, wasted = 0, 0.0  # wasted: the cost of attempts cut mid-answer
            while True:
                if _stopping.is_set():
                    raise self._counted(LLMCallError("the run is stopping: not sent", cost_usd=wasted), on_cost)
                if self.budget_spent():  # by calls that ended while this one waited (or before a retry)
                    raise self._counted(LLMCallError("the LLM budget is spent: not sent", "budget",
                                                     cost_usd=wasted), on_cost)
                if on_send is not None and attempt == 0:
                    on_send()
                try:
                    reply = self._once(req, self.params(req), start, deadline)
                    reply = replace(reply, cost_usd=reply.cost_usd + wasted) if wasted else reply
                    if on_cost is not None:
                        on_cost(reply.cost_usd)
                    return reply
                except LLMCallError as e:
                    e.cost_usd += wasted
                    raise self._counted(e, on_cost) from None
                except _Retry as r:
                    wasted += r.cost_usd
                    attempt += 1
                    left = deadline - time.monotonic()
                    if attempt > self.cfg.max_retries or left <= 0:
                        why = (f"{attempt - 1} retries" if attempt > self.cfg.max_retries
                               else f"the call's limit llm.timeout_s={self.cfg.timeout_s:g} s")
                        raise self._counted(LLMCallError(f"{r.reason} (gave up after {why})", cost_usd=wasted),
                                            on_cost) from None
                    wait = r.retry_after if r.retry_after is not None else min(8.0, 0.5 * 2 ** (attempt - 1))
                    self.sleep(max(0.0, min(wait, self.cfg.retry_after_cap_s, left)))

    @staticmethod
    def _counted(e: LLMCallError, on_cost: Callable[[float], object] | None) -> LLMCallError:
        if on_cost is not None and e.cost_usd:
            on_cost(e.cost_usd)
        return e

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

    def _once(self, req: Request, params: dict, start: float, deadline: float) -> Reply:
        """One attempt, on a thread of its own that this one waits for until the call's deadline. Inside
        it a timer shuts the connection down at the deadline once the answer streams; before that (a
        server that trickles its headers a byte at a time, which resets httpx's per-read timeout) nothing
        can interrupt the request, so the attempt is left behind on its daemon thread and the call fails
        at its limit all the same."""
        box: dict = {}
        done = threading.Event()

        def attempt() -> None:
            try:
                box["reply"] = self._attempt(req, params, start, deadline, box)
            except BaseException as e:  # handed to the waiting thread
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=attempt, name="llm-attempt", daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic()) + 2.0):  # + the inner timer's time to unwind
            box["abandoned"] = True
            raise LLMCallError(f"no complete answer by the call's limit llm.timeout_s={self.cfg.timeout_s:g} s "
                               f"(the server was still sending its headers or its answer)")
        if "error" in box:
            raise box["error"]
        return box["reply"]

    def _attempt(self, req: Request, params: dict, start: float, deadline: float, box: dict) -> Reply:
        """One request and its streamed answer (see _once). The httpx timeout bounds each read, not the
        call: a server that trickles bytes (or pings) forever is cut by a timer at the call's deadline,
        which shuts the connection down."""
        sdk = self._sdk
        timeout = max(1.0, min(self.cfg.idle_timeout_s, deadline - time.monotonic()))
        cut, stream, answer = threading.Event(), None, _Answer()
        limit = f"the answer was still streaming at the call's limit llm.timeout_s={self.cfg.timeout_s:g} s"

        def spent() -> float:
            return self._partial_cost(answer, req)

        try:
            # the raw event stream, added up here (_Answer): the SDK's own accumulator raised on a
            # message_delta without usage, which threw a complete (paid) answer away
            with self.client.messages.create(**params, stream=True, timeout=timeout) as stream:
                if box.get("abandoned"):  # the caller gave up while the headers trickled in
                    _cut(stream, cut)
                timer = threading.Timer(max(0.0, deadline - time.monotonic()), _cut, (stream, cut))
                timer.daemon = True
                timer.start()
                try:
                    for event in stream:  # text, thinking and tool input all count towards the cap
                        answer.add(event)
                        if answer.chars > MAX_ANSWER:
                            raise LLMCallError(f"the answer is longer than {MAX_ANSWER} characters (given up while "
                                               f"streaming: no kernel is that long)", "no_edit", cost_usd=spent())
                        if time.monotonic() > deadline:
                            raise LLMCallError(limit, cost_usd=spent())
                finally:
                    timer.cancel()
        except sdk.APIStatusError as e:
            status = getattr(e, "status_code", 0)
            if status in REFUSALS:
                raise LLMCallError(f"{REFUSALS[status]} ({type(e).__name__} {status}: {str(e)[:300]})",
                                   "refused") from None
            if 300 <= status < 400:
                where = (getattr(e.response, "headers", None) or {}).get("location", "?")
                raise LLMCallError(f"the API answered with a redirect ({status} to {where[:200]}), which evo does not "
                                   f"follow: the prompts go to llm.base_url and nowhere else; if that is the endpoint, "
                                   f"set llm.base_url to it", "refused") from None
            if status == 413:  # this prompt is too large: asking again cannot help, other prompts may pass
                raise LLMCallError(f"the API found the request too large ({str(e)[:300]})") from None
            what = "an error event in the answer stream" if status == 200 else f"{type(e).__name__} {status}"
            raise _Retry(f"{what}: {str(e)[:300]}", _retry_after(e.response), spent()) from None
        except (sdk.APIConnectionError, sdk.APITimeoutError) as e:
            raise _Retry(f"{type(e).__name__}: {str(e)[:300]}", None, spent()) from None
        except LLMCallError:
            raise
        except Exception as e:  # whatever the SDK or the transport raises: the call failed, the run goes on
            if cut.is_set():
                raise LLMCallError(limit, cost_usd=spent()) from None
            if _connection_broke(e):
                raise _Retry(f"the connection broke mid-answer ({type(e).__name__}: {str(e)[:200]})", None,
                             spent()) from None
            # an empty body, bytes that are not UTF-8, a page that is not a stream: asked again (within
            # llm.max_retries), then given up; a proxy that always answers so fails after its retries
            raise _Retry(f"the API answered with something that is not a message stream ({type(e).__name__}: "
                         f"{str(e)[:300] or 'no detail'}); check llm.base_url and any proxy between", None,
                         spent()) from None
        if not answer.started or answer.stop_reason is None:  # the stream ended before the message was done
            if cut.is_set():
                raise LLMCallError(limit, cost_usd=spent())
            if not answer.started:  # e.g. a proxy's HTML page with status 200: no event at all
                raise _Retry("the API answered with something that is not a message stream (no message_start "
                             "event); check llm.base_url and any proxy between", None, spent())
            raise _Retry("the answer stream ended before the message was complete (no stop reason)", None, spent())
        return self.reply(answer.message(), time.monotonic() - start, req, max_tokens=params["max_tokens"],
                          answer_chars=answer.chars)  # complete: kept

    def reply(self, msg, latency_s: float, req: Request | None = None, *, max_tokens: int | None = None,
              answer_chars: int | None = None) -> Reply:
        """The Reply for an answered message: its text, and its cost from the usage figures where they are
        believable (see _tokens, _too_few; `answer_chars`: every character of answer streamed, thinking
        included, default the text's), else an upper estimate, at the dearer price where another model answered."""
        content, u = getattr(msg, "content", None), getattr(msg, "usage", None)
        if not isinstance(content, list):  # e.g. a proxy's HTML page with status 200
            raise LLMCallError(f"the API answered with something that is not a message ({type(msg).__name__}: "
                               f"{str(msg)[:200]!r}); check llm.base_url and any proxy between",
                               cost_usd=self._estimate(req))
        text = "".join(t for b in content if getattr(b, "type", "") == "text" and isinstance(t := getattr(b, "text", ""), str))
        tokens, bad = self._tokens(u)
        chars = len(text) if answer_chars is None else answer_chars
        bad = bad or self._too_few(tokens, req, chars)
        model = _text_or(getattr(msg, "model", None), self.cfg.model)
        stop = _text_or(getattr(msg, "stop_reason", None), None)
        if bad:  # the answer is kept (it is paid for); its cost is an upper estimate, said so
            out = self.cfg.max_tokens if max_tokens is None else max_tokens
            cost, said = self._priced(self._estimated_tokens(req, out), model)
            return Reply(text, model, stop, cost_usd=cost, latency_s=latency_s,
                         note=f"the API's usage figures were not believable ({bad}): the cost is estimated from the "
                              f"prompt's length and llm.max_tokens" + (f"; {said}" if said else ""))
        cost, note = self._priced(tokens, model)
        return Reply(text, model, stop, tokens["input_tokens"], tokens["output_tokens"],
                     tokens["cache_write_tokens"], tokens["cache_read_tokens"], cost, latency_s, note=note)

    def _priced(self, tokens: dict[str, int], model: str | None) -> tuple[float, str]:
        """The cost of `tokens` answered by `model`: at the asked model's price, or at the answering
        model's where that is dearer; and a note where another model answered ("" otherwise)."""
        cost = cost_usd(self.price, **tokens)
        if model is None or same_model(model, self.cfg.model):
            return cost, ""
        other = listed_price(self.cfg, model)
        said = f"answered by {model[:100]}, not {self.cfg.model}"
        if other is None:
            return cost, f"{said}, which has no listed price: priced as {self.cfg.model}"
        dearer = cost_usd(other, **tokens)
        return (dearer, f"{said}: priced as {model[:100]}") if dearer > cost else (cost, "")

    def _tokens(self, u) -> tuple[dict[str, int], str]:
        """The usage's token counts, and what is wrong with them ("" when each is a whole number from 0
        to what a model can take: a hostile or broken server must not make calls free or the budget NaN)."""
        fields = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
                  "cache_write_tokens": "cache_creation_input_tokens", "cache_read_tokens": "cache_read_input_tokens"}
        if u is None:
            return {}, "no usage"
        tokens: dict[str, int] = {}
        for ours, theirs in fields.items():
            v = getattr(u, theirs, None)
            if v is None and ours.startswith("cache"):
                v = 0
            most = self.cfg.max_tokens if ours == "output_tokens" else MOST_INPUT_TOKENS
            if not _count(v) or not 0 <= v <= most:
                return {}, f"{theirs}={v!r}"
            tokens[ours] = v
        return tokens, ""

    def _too_few(self, tokens: dict[str, int], req: Request | None, chars: int = 0) -> str:
        """What is wrong with believable-looking figures that are too small for what was sent and `chars`
        characters received (see MOST_CHARS_PER_TOKEN); "" if nothing. The per-call text after the cached
        prefix cannot have been read from the cache: it counts against the uncached input alone. (Figures
        that shrink between events are taken care of where they are added up: _Answer keeps the larger.)"""
        prompt = len(req.system) + len(req.text) if req else 0
        fresh = len(req.variable) if req else 0
        sent = tokens["input_tokens"] + tokens["cache_write_tokens"] + tokens["cache_read_tokens"]
        if sent < prompt / MOST_CHARS_PER_TOKEN:
            return f"{sent} input tokens for a prompt of {prompt} characters"
        if tokens["input_tokens"] + tokens["cache_write_tokens"] < fresh / MOST_CHARS_PER_TOKEN:
            return (f"{tokens['input_tokens']} uncached input tokens for {fresh} characters after the cached "
                    f"prefix")
        if tokens["output_tokens"] < chars / MOST_CHARS_PER_TOKEN:
            return f"{tokens['output_tokens']} output tokens for an answer of {chars} characters"
        return ""

    def upper_estimate(self, req: Request) -> float:
        """What a call can cost at most (billed for a call a stopping run leaves in flight)."""
        return self._estimate(req, self.cfg.max_tokens)

    def _estimate(self, req: Request | None, output_tokens: int = 0, model: str | None = None) -> float:
        """An upper estimate of a call's cost when the API's figures are missing or not believable: the
        prompt at two characters a token, uncached, and `output_tokens` out (a complete answer: the
        request's max_tokens), at the dearer price where `model` (another than asked) answered."""
        return self._priced(self._estimated_tokens(req, output_tokens), model)[0]

    @staticmethod
    def _estimated_tokens(req: Request | None, output_tokens: int) -> dict[str, int]:
        chars = len(req.system) + len(req.text) if req else 0
        return dict(input_tokens=math.ceil(chars / 2), output_tokens=output_tokens, cache_write_tokens=0,
                    cache_read_tokens=0)

    def _partial_cost(self, answer: _Answer, req: Request) -> float:
        """What an attempt that ended without a complete answer cost. Nothing when no answer began (a
        429, 529 or server error before the stream: not billed); else its usage so far when the stream
        reported believable figures, with at least the text received as output (about 3.5 characters
        a token), or the prompt's estimate when the figures are not believable."""
        if not answer.started:
            return 0.0
        model = _text_or(answer.model, None)
        tokens, bad = self._tokens(answer.usage_so_far())
        out = min(math.ceil(answer.chars / CHARS_PER_TOKEN), self.cfg.max_tokens)  # never billed past max_tokens
        if bad or self._too_few(dict(tokens, output_tokens=out), req):  # the input checks of a complete answer
            return self._estimate(req, out, model)
        return self._priced(dict(tokens, output_tokens=max(tokens["output_tokens"], out)), model)[0]

    def preflight(self) -> Reply:
        """One tiny call (max_tokens=1) with the run's key and model, before any work. LLMCallError:
        "refused" says what to fix; "unavailable" (the API cannot be reached now) says why. Streamed
        like every call, so that the same limit holds: a server that trickles bytes cannot hang the start."""
        req = Request(PREFLIGHT, self.cfg.model, "", "ping", "")
        params = {"model": self.cfg.model, "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}
        start = time.monotonic()
        try:
            return self._once(req, params, start, start + min(60.0, self.cfg.timeout_s))
        except _Retry as r:
            raise LLMCallError(f"the API could not answer ({r.reason})", cost_usd=r.cost_usd) from None


class _Retry(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, cost_usd: float = 0.0):
        super().__init__(reason)
        self.reason, self.retry_after, self.cost_usd = reason, retry_after, cost_usd


_DELTA_TEXT = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}


class _Answer:
    """A streamed answer added up from the raw events, with no trust in their shape: what is missing or
    of the wrong type is left out (a usage figure that is not there keeps the last one seen; the checks
    in `reply` then judge it). `chars` counts every character of answer received (text, thinking and
    tool input, deltas or text a block or message_start arrives with), for the length cap."""

    _USAGE = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

    def __init__(self) -> None:
        self.started, self.model, self.stop_reason = False, None, None
        self.usage: dict = {}
        self.texts: dict = {}  # block index -> text so far (text blocks only)
        self.chars = 0

    def add(self, event) -> None:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            msg = getattr(event, "message", None)
            self.started, self.model = True, getattr(msg, "model", None)
            self._take_usage(getattr(msg, "usage", None))
            for i, block in enumerate(getattr(msg, "content", None) or []):
                self._start_block(i, block)
        elif kind == "content_block_start":
            self._start_block(getattr(event, "index", None), getattr(event, "content_block", None))
        elif kind == "content_block_delta":
            delta = getattr(event, "delta", None)
            dtype = getattr(delta, "type", "")
            part = getattr(delta, _DELTA_TEXT.get(dtype, ""), None) if isinstance(dtype, str) else None
            if isinstance(part, str):
                self.chars += len(part)
                index = _index(getattr(event, "index", None))
                if dtype == "text_delta" and index in self.texts:
                    self.texts[index] += part
        elif kind == "message_delta":
            stop = getattr(getattr(event, "delta", None), "stop_reason", None)
            if stop is not None:  # a later delta without one does not take back the end of the message
                self.stop_reason = stop
            self._take_usage(getattr(event, "usage", None))

    def _start_block(self, index, block) -> None:
        for field in ("text", "thinking"):
            if isinstance(v := getattr(block, field, None), str):
                self.chars += len(v)
        index = _index(index)
        if getattr(block, "type", "") == "text" and index is not None:
            text = getattr(block, "text", "")
            self.texts[index] = text if isinstance(text, str) else ""

    def _take_usage(self, usage) -> None:
        """Each figure given replaces the last, but a count never goes down (a later event that reports
        less, or a second message_start, would make a call cheaper): the larger stays."""
        for name in self._USAGE:
            v = getattr(usage, name, None)
            if v is None:
                continue
            old = self.usage.get(name)
            if _count(v) and _count(old) and old > v:
                continue
            self.usage[name] = v

    def usage_so_far(self):
        return SimpleNamespace(**{name: self.usage.get(name) for name in self._USAGE})

    def message(self):
        """The answer in the shape `reply` reads (a Message's attributes)."""
        blocks = [SimpleNamespace(type="text", text=self.texts[i]) for i in sorted(self.texts)]
        return SimpleNamespace(content=blocks, usage=self.usage_so_far(), model=self.model,
                               stop_reason=self.stop_reason)


def _cut(stream, cut: threading.Event) -> None:
    """At the call's deadline: shut the connection down, so that the thread reading it gets an end or an
    error and closes it itself (closing it from here could free a descriptor that thread still reads),
    and say why. Without a socket to shut down (another transport), the stream is closed."""
    cut.set()
    try:
        sock = stream.response.extensions["network_stream"].get_extra_info("socket")
        sock.shutdown(socket.SHUT_RDWR)
        return
    except Exception:
        pass
    try:
        stream.close()
    except Exception:
        pass


def _connection_broke(e: BaseException) -> bool:
    """An httpx (or httpx2) transport or stream error: the connection failed mid-answer, worth a retry."""
    return any(c.__name__ in ("TransportError", "StreamError") and c.__module__.split(".")[0].startswith("httpx")
               for c in type(e).__mro__)


def _retry_after(response) -> float | None:
    """The server's retry-after (retry-after-ms or retry-after seconds), if it gave a usable one: a
    negative or NaN wait is no wait at all and would send the retries at once, so it counts as none
    (the backoff applies); an infinite one is capped by the caller."""
    headers = getattr(response, "headers", None) or {}
    for key, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            wait = float(headers[key]) * scale
        except (KeyError, TypeError, ValueError):
            continue
        if wait >= 0:  # False for NaN
            return wait
    return None


def _count(v) -> TypeGuard[int]:
    """A whole number (not a bool, which Python counts as one)."""
    return isinstance(v, int) and not isinstance(v, bool)


def _index(v) -> int | None:
    """A content block's index, where it is a whole number (anything else: the block is left out)."""
    return v if _count(v) else None


def _text_or(value, default):
    """A server's text field (the model, the stop reason) as text: `default` where it is missing, its repr
    where it is something else (it is recorded with the paid answer, which must not fail for it)."""
    if value is None:
        return default
    return (value if isinstance(value, str) else repr(value))[:200]  # a 5 MB model name is not stored whole
