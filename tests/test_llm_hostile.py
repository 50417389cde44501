"""A Messages API server that misbehaves on purpose: every call still ends within llm.timeout_s, the
budget counts what answers cost (never NaN, negative or nothing), an answer cut or unfinished is not
taken for a kernel, and a run says so when the API keeps failing."""
import logging
import threading
import time

import pytest

from evo.mutators.llm.operator import OperatorFailure
from evo.mutators.llm.prices import cost_usd
from evo.mutators.llm.recorder import FAILING_CALLS, Recorder
from tests.fake_anthropic import FakeAnthropic, Raw, error, message, prompt_of, sse, stream_parts
from tests.llm_helpers import PARENT, SHAPE, calls, deepen, operators

START = sse("message_start", {"type": "message_start", "message": dict(
    message(""), content=[], stop_reason=None, usage={"input_tokens": 4000, "output_tokens": 1})})
PING = sse("ping", {"type": "ping"})


def use(ops):
    return ops["llm:deepen_pipeline"].apply([PARENT], None, shape=SHAPE, info={})


def test_a_server_that_pings_forever_is_cut_at_the_calls_limit_and_its_input_is_billed(llm_env):
    """httpx's timeout bounds each read, so pings every 0.2 s kept a call open for as long as the server liked."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, Raw([(0, START)] + [(0.2, PING)] * 300), 0)) as server:
        ops, _ = operators(server, archive, run, timeout_s=2, idle_timeout_s=1, max_retries=0)
        t0 = time.monotonic()
        with pytest.raises(OperatorFailure, match="still streaming at the call's limit"):
            use(ops)
        assert time.monotonic() - t0 < 8  # the limit is 2 s; without the timer, 60 s
    (row,) = calls(archive)
    assert row["outcome"] == "unavailable" and row["cost_usd"] > 0  # the 4000 input tokens of message_start
    assert 1.5 < row["latency_s"] < 8  # a failed call's time is recorded too: the limit held (2 s)


def test_a_preflight_that_trickles_cannot_hold_the_start(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, Raw([(0, START)] + [(0.2, PING)] * 300), 0)) as server:
        t0 = time.monotonic()
        ops, _ = operators(server, archive, run, preflight=True, timeout_s=2, idle_timeout_s=1)
        assert time.monotonic() - t0 < 8 and ops  # a warning, and the search starts (limit 2 s; 60 s without)
    (row,) = calls(archive)
    assert row["operator"] == "preflight" and row["cost_usd"] > 0


@pytest.mark.parametrize("usage", [
    {"input_tokens": "lots", "output_tokens": 200},
    {"input_tokens": -30000, "output_tokens": 200},
    {"input_tokens": None, "output_tokens": None},
    {"input_tokens": 4000, "output_tokens": 10 ** 12},
    {"input_tokens": 0, "output_tokens": 200},  # a prompt of thousands of characters for nothing
    {"input_tokens": 4000, "output_tokens": 0},  # an answer of thousands of characters for nothing
])
def test_usage_figures_that_are_not_believable_cost_an_upper_estimate_and_keep_the_answer(llm_env, usage):
    """A string crashed the call after the answer was paid (lost); a negative count refunded the budget;
    null made calls free; a NaN switched the budget off."""
    archive, run = llm_env

    def behaviour(req, n):
        m = message(deepen(prompt_of(req)))
        return 200, dict(m, usage=dict(usage, cache_creation_input_tokens=0, cache_read_input_tokens=0)), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run, max_retries=0)
        child = use(ops)  # the answer is kept (the installed SDK passes these figures through)
        recorder = ops["llm:deepen_pipeline"].recorder
    (row,) = calls(archive)
    assert row["outcome"] == "child" and row["kernel_id"] == child.id and "not believable" in row["error"]
    assert 0 < row["cost_usd"] < 10 and recorder.spent_usd == pytest.approx(row["cost_usd"])


def test_an_answer_that_ends_without_its_stop_is_not_a_kernel_and_is_asked_again(llm_env):
    archive, run = llm_env

    def behaviour(req, n):
        parts = stream_parts(message(deepen(prompt_of(req))))
        if n == 1:  # everything up to the end of the text, then the connection closes
            return 200, Raw([(0, p) for p in parts[:-2]]), 0
        return 200, message(deepen(prompt_of(req))), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run, max_retries=1)
        child = use(ops)
        assert len(server.requests) == 2
    (row,) = calls(archive)
    assert row["outcome"] == "child" and row["kernel_id"] == child.id
    assert row["cost_usd"] > ops["llm:deepen_pipeline"].client.reply(
        _Msg(row["response"]), 0.0).cost_usd  # the cut attempt's input is billed on top


class _Msg:
    """A message as the SDK gives it, for pricing one answer alone."""

    def __init__(self, text):
        self.content = [type("B", (), {"type": "text", "text": text})()]
        self.usage = type("U", (), {"input_tokens": 4000, "output_tokens": 200, "cache_creation_input_tokens": 0,
                                    "cache_read_input_tokens": 0})()
        self.model, self.stop_reason = "claude-sonnet-5", "end_turn"


def test_a_call_waiting_for_its_turn_keeps_its_whole_limit(llm_env):
    """With llm.concurrency=1 the second of two calls spent its limit waiting and failed, though sent."""
    archive, run = llm_env
    # each answer takes 1.5 s of a 2.5 s limit: the second would pass its limit had it counted its wait
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req), str(n))), 1.5)) as server:
        ops, _ = operators(server, archive, run, concurrency=1, timeout_s=2.5, max_retries=0)
        op = ops["llm:deepen_pipeline"]
        outcomes = []
        threads = [threading.Thread(target=lambda: outcomes.append(_try(op))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert outcomes == ["child", "child"]


def _try(op):
    try:
        op.apply([PARENT], None, shape=SHAPE, info={})
        return "child"
    except OperatorFailure as e:
        return e.kind


def test_payment_required_stops_the_run_instead_of_retrying(llm_env):
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (402, error("billing_error", "no credit"), 0)) as server:
        ops, _ = operators(server, archive, run, max_retries=3)
        with pytest.raises(OperatorFailure, match="billing") as info:
            use(ops)
        assert len(server.requests) == 1
    assert info.value.kind == "refused"


def test_an_answer_streaming_past_any_kernels_length_is_given_up_before_its_end(llm_env):
    archive, run = llm_env
    delta = sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": "x" * 50_000}})
    block = sse("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "text", "text": ""}})
    with FakeAnthropic(lambda req, n: (200, Raw([(0, START), (0, block)] + [(0.01, delta)] * 2000), 0)) as server:
        ops, _ = operators(server, archive, run, max_retries=0, timeout_s=30)
        t0 = time.monotonic()
        with pytest.raises(OperatorFailure, match="longer than") as info:
            use(ops)
        assert time.monotonic() - t0 < 10  # 2000 deltas would take 20 s
    assert info.value.kind == "no_edit"
    (row,) = calls(archive)
    client = ops["llm:deepen_pipeline"].client
    price, most = client.price, client.cfg.max_tokens
    # the text received is billed as output (200,000 characters at 3.5 a token), but never past
    # max_tokens, which bounds what any answer can cost (the prompt here costs far less than 10 cents)
    billed_out = min(200_000 / 3.5, most) * price.out_per_mtok / 1e6
    assert most < 200_000 / 3.5
    assert row["response"] is None and billed_out <= row["cost_usd"] < billed_out + 0.1


def test_a_run_says_so_when_the_api_keeps_failing(caplog):
    recorder = Recorder(None, None, budget_usd=1.0)
    with caplog.at_level(logging.WARNING):
        for i in range(2 * FAILING_CALLS):
            recorder.record(outcome="unavailable", error=f"APIStatusError 503 #{i}")
    said = [r.getMessage() for r in caplog.records if "LLM calls all failed" in r.getMessage()]
    assert len(said) == 2 and f"last {FAILING_CALLS} " in said[0] and f"#{2 * FAILING_CALLS - 1}" in said[1]


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -5.0])
def test_a_cost_that_is_not_a_sum_of_money_spends_the_budget(cost, caplog):
    recorder = Recorder(None, None, budget_usd=1.0)
    recorder.record(outcome="child", cost_usd=cost)
    assert recorder.exhausted() and recorder.spent_usd == 1.0


def test_attempts_refused_before_any_answer_cost_nothing(llm_env):
    """Three 529s before an answer were billed as three prompts (about 9x the answer's cost)."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (529, error("overloaded_error", "busy"), 0) if n <= 3
                       else (200, message(deepen(prompt_of(req))), 0)) as server:
        ops, _ = operators(server, archive, run, max_retries=3)
        op = ops["llm:deepen_pipeline"]
        op.client.sleep = lambda s: None
        use(ops)
    (row,) = calls(archive)
    assert row["cost_usd"] == pytest.approx(op.client.reply(_Msg(row["response"]), 0.0).cost_usd)


def test_a_stopping_run_sends_nothing_more(llm_env):
    from evo.mutators.llm.client import stop_new_calls
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req))), 0)) as server:
        ops, _ = operators(server, archive, run)
        stop_new_calls()
        with pytest.raises(OperatorFailure, match="stopping: not sent"):
            use(ops)
        assert server.requests == []
    (row,) = calls(archive)
    assert row["cost_usd"] is None


def test_headers_that_trickle_in_cannot_hold_a_call_past_its_limit(llm_env):
    """A byte of header every 0.2 s resets httpx's read timeout, and no stream exists yet to cut."""
    archive, run = llm_env
    trickle = [(0, b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-slow: ")] + [(0.2, b"a")] * 300
    with FakeAnthropic(lambda req, n: (200, Raw(trickle, with_headers=False), 0)) as server:
        ops, _ = operators(server, archive, run, timeout_s=2, idle_timeout_s=1, max_retries=0)
        t0 = time.monotonic()
        with pytest.raises(OperatorFailure, match="by the call's limit"):
            use(ops)
        assert time.monotonic() - t0 < 10  # the limit, 2 s, and 2 s for the attempt to unwind; 60 s without


def test_thinking_that_streams_past_any_kernels_length_is_given_up(llm_env):
    archive, run = llm_env
    block = sse("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    delta = sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "thinking_delta", "thinking": "y" * 50_000}})
    with FakeAnthropic(lambda req, n: (200, Raw([(0, START), (0, block)] + [(0.01, delta)] * 2000), 0)) as server:
        ops, _ = operators(server, archive, run, max_retries=0, timeout_s=30)
        with pytest.raises(OperatorFailure, match="longer than"):
            use(ops)


def test_answers_are_asked_for_uncompressed(llm_env):
    """A gzip bomb (1 MB expanding to 1 GB in one event) is decoded whole before the length cap sees it."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req))), 0)) as server:
        ops, _ = operators(server, archive, run)
        use(ops)
    assert server.headers[-1]["accept-encoding"] == "identity"


@pytest.mark.parametrize("change", [
    dict(content=[{"type": "text", "text": "\ud800"}]),  # a lone surrogate: valid JSON, not storable as UTF-8
    dict(model={"x": [1]}),
    dict(stop_reason={"a": 1}),
], ids=["lone surrogate", "model not text", "stop reason not text"])
def test_an_answer_with_fields_sqlite_cannot_take_as_sent_is_still_recorded_and_billed(llm_env, change):
    """Each of these failed the archive insert after the answer was paid: the row was lost, the cost
    forgotten by the next resume, and (for the last two) nothing was said."""
    archive, run = llm_env

    def behaviour(req, n):
        m = message(deepen(prompt_of(req)))
        if "content" in change:  # the odd character after the answer's edit
            text = m["content"][0]["text"] + "\n" + change["content"][0]["text"]
            return 200, dict(m, content=[{"type": "text", "text": text}]), 0
        return 200, dict(m, **change), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run, max_retries=0)
        use(ops)
        recorder = ops["llm:deepen_pipeline"].recorder
    (row,) = calls(archive)
    assert row["response"] and row["cost_usd"] > 0 and recorder.spent_usd == pytest.approx(row["cost_usd"])
    assert isinstance(row["model"], str) and (row["stop_reason"] is None or isinstance(row["stop_reason"], str))


@pytest.mark.parametrize("wait_ms", ["-5000", "nan"])
def test_a_retry_after_that_is_no_wait_falls_back_to_the_backoff(llm_env, wait_ms):
    """A negative or NaN retry-after sent every retry at once."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (429, error("rate_limit_error", "slow down"), 0) if n == 1
                       else (200, message(deepen(prompt_of(req))), 0)) as server:
        server.retry_after_ms = wait_ms
        ops, _ = operators(server, archive, run)
        op = ops["llm:deepen_pipeline"]
        waits = []
        op.client.sleep = waits.append
        use(ops)
    assert waits == [0.5] and len(server.requests) == 2


def test_input_tokens_that_shrink_after_message_start_are_billed_at_the_larger_figure(llm_env):
    """message_start said 50,000 input tokens and message_delta 700 (the SDK kept the last): billed 700."""
    archive, run = llm_env

    def behaviour(req, n):
        start = sse("message_start", {"type": "message_start", "message": dict(
            message(""), content=[], stop_reason=None, usage={"input_tokens": 50_000, "output_tokens": 1})})
        block = sse("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}})
        text = sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": deepen(prompt_of(req))}})
        end = sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                    "usage": {"input_tokens": 700, "output_tokens": 200}})
        stop = sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        return 200, Raw([(0, start), (0, block), (0, text), (0, stop), (0, end),
                         (0, sse("message_stop", {"type": "message_stop"}))]), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run, max_retries=0)
        use(ops)
        price = ops["llm:deepen_pipeline"].client.price
    (row,) = calls(archive)
    assert row["input_tokens"] == 50_000 and row["cost_usd"] >= 50_000 * price.in_per_mtok / 1e6


def test_an_answer_sent_whole_in_its_first_event_is_held_to_the_length_cap(llm_env):
    """Text a content block starts with was not counted: 5 MB that way was stored whole (and billed as
    the 200 output tokens the server claimed)."""
    archive, run = llm_env
    block = sse("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "text", "text": "x" * 300_000}})
    with FakeAnthropic(lambda req, n: (200, Raw([(0, START), (0, block)] + [(0.05, PING)] * 100), 0)) as server:
        ops, _ = operators(server, archive, run, max_retries=0, timeout_s=30)
        t0 = time.monotonic()
        with pytest.raises(OperatorFailure, match="longer than") as info:
            use(ops)
        assert time.monotonic() - t0 < 4  # given up at the first event, not after the pings (5 s)
    assert info.value.kind == "no_edit"
    (row,) = calls(archive)
    assert row["response"] is None and row["cost_usd"] > 0


def test_a_call_a_stopping_run_leaves_in_flight_is_billed_once_at_an_upper_estimate(llm_env):
    """A call still streaming when the stop's grace ran out was never recorded: sent, paid, and $0."""
    from evo.mutators.llm.recorder import bill_calls_left_in_flight
    from evo.search.overlap import in_background

    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, Raw([(0, START)] + [(0.1, PING)] * 100), 0)) as server:
        ops, _ = operators(server, archive, run, timeout_s=3, idle_timeout_s=2, max_retries=0)
        op = ops["llm:deepen_pipeline"]
        fut = in_background(lambda: use(ops))
        deadline = time.monotonic() + 5
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        assert bill_calls_left_in_flight() == 1  # the stop gave up waiting: billed now
        (billed,) = calls(archive)
        assert "in flight" in billed["error"] and billed["cost_usd"] >= op.client.upper_estimate(
            op.request([PARENT], SHAPE, {})) * 0.99
        with pytest.raises(OperatorFailure):  # the call ends later (its limit): recorded at no further cost
            fut.result(timeout=10)
    late = [r for r in calls(archive) if r["id"] != billed["id"]]
    assert len(late) == 1 and not late[0]["cost_usd"] and "billed at the stop" in late[0]["error"]
    assert op.recorder.spent_usd == pytest.approx(billed["cost_usd"])


def test_a_call_still_waiting_for_its_slot_when_the_stop_gives_up_is_not_billed(llm_env):
    """A call counted itself in flight before it had a concurrency slot: a stop that gave up waiting billed
    it at its upper estimate though it was never sent."""
    from evo.mutators.llm import client as client_module
    from evo.mutators.llm.recorder import bill_calls_left_in_flight
    from evo.search.overlap import in_background

    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, Raw([(0, START)] + [(0.1, PING)] * 40), 0)) as server:
        ops, _ = operators(server, archive, run, concurrency=1, timeout_s=3, idle_timeout_s=2, max_retries=0)
        op = ops["llm:deepen_pipeline"]
        try:
            futures = [in_background(lambda: use(ops)) for _ in range(2)]
            deadline = time.monotonic() + 5
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.3)  # the second call is waiting for the slot the first holds
            client_module.stop_new_calls()
            assert bill_calls_left_in_flight() == 1  # the one sent; not the one waiting (2 before)
            kinds = []
            for fut in futures:
                with pytest.raises(OperatorFailure) as info:
                    fut.result(timeout=10)
                kinds.append(str(info.value))
        finally:
            client_module._stopping.clear()
        assert len(server.requests) == 1
    assert any("not sent" in k for k in kinds)
    rows = calls(archive)
    billed = [r for r in rows if r["cost_usd"]]
    assert len(billed) == 1 and "in flight" in billed[0]["error"]
    assert op.recorder.spent_usd == pytest.approx(billed[0]["cost_usd"])


@pytest.mark.parametrize("start_usage, delta_usage", [
    ({"input_tokens": 4000, "output_tokens": 1}, None),  # message_delta without usage
    (None, None),  # no usage anywhere
], ids=["no usage at the end", "no usage at all"])
def test_a_streamed_answer_without_usage_is_kept_and_billed_at_an_estimate(llm_env, start_usage, delta_usage):
    """The SDK's accumulator raised on a message_delta without usage: the complete answer was thrown away,
    asked again and paid for on every attempt, and the error pointed at llm.base_url."""
    archive, run = llm_env

    def behaviour(req, n):
        msg = dict(message(""), content=[], stop_reason=None)
        msg.pop("usage")
        if start_usage is not None:
            msg["usage"] = start_usage
        end = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}}
        if delta_usage is not None:
            end["usage"] = delta_usage
        return 200, Raw([(0, sse("message_start", {"type": "message_start", "message": msg})),
                         (0, sse("content_block_start", {"type": "content_block_start", "index": 0,
                                                         "content_block": {"type": "text", "text": ""}})),
                         (0, sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                             "type": "text_delta", "text": deepen(prompt_of(req))}})),
                         (0, sse("content_block_stop", {"type": "content_block_stop", "index": 0})),
                         (0, sse("message_delta", end)), (0, sse("message_stop", {"type": "message_stop"}))]), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run)
        child = use(ops)
        assert len(server.requests) == 1  # kept, not asked again
    (row,) = calls(archive)
    assert row["outcome"] == "child" and row["kernel_id"] == child.id and "not believable" in row["error"]
    assert row["cost_usd"] > 0


def test_a_redirect_is_not_followed_and_says_where_it_pointed(llm_env):
    """A 307 to another host was followed: every prompt (parents' sources included) went there."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req))), 0)) as elsewhere:
        moved = (f"HTTP/1.1 307 Temporary Redirect\r\nlocation: {elsewhere.url}/v1/messages\r\n"
                 f"content-length: 0\r\nconnection: close\r\n\r\n").encode()
        with FakeAnthropic(lambda req, n: (200, Raw([(0, moved)], with_headers=False), 0)) as server:
            ops, _ = operators(server, archive, run)
            with pytest.raises(OperatorFailure, match="redirect") as info:
                use(ops)
        assert not elsewhere.requests and info.value.kind == "refused" and elsewhere.url in str(info.value)


@pytest.mark.parametrize("answered, dearer, noted", [
    ("claude-opus-4-1", True, True),  # a dearer model than asked: billed at its price
    ("claude-haiku-4-5", False, False),  # a cheaper one: billed as asked
    ("claude-sonnet-5-20991231", False, False),  # the asked model's dated name
    ("mystery-model", False, True),  # no listed price: as asked, and said so
])
def test_an_answer_from_another_model_is_billed_at_the_dearer_price(llm_env, answered, dearer, noted):
    """An answer from claude-opus-4-1 to a claude-sonnet-5 request was billed at a fifth of its price."""
    archive, run = llm_env
    with FakeAnthropic(lambda req, n: (200, dict(message(deepen(prompt_of(req))), model=answered), 0)) as server:
        ops, _ = operators(server, archive, run)
        use(ops)
        cfg = ops["llm:deepen_pipeline"].client.cfg
    (row,) = calls(archive)
    tokens = dict(input_tokens=4000, output_tokens=200, cache_write_tokens=0, cache_read_tokens=0)
    asked = cost_usd(cfg.prices[cfg.model], **tokens)
    expected = cost_usd(cfg.prices[answered], **tokens) if dearer else asked
    assert row["model"] == answered and row["cost_usd"] == pytest.approx(expected)
    assert bool(row["error"]) == noted and (not noted or answered in row["error"])



@pytest.mark.parametrize("case", ["below the bound", "cache for the per-call text", "thinking not counted",
                                  "cut with no input", "index a list", "stop taken back", "huge model name"])
def test_a_server_cannot_make_an_answer_cheap_or_lose_it(llm_env, case):
    """From a second hostile-server review: usage just at the old bound (a 37,000-character prompt as 1,200
    tokens), the per-call text billed as cache reads, 150,000 characters of thinking billed as 9 tokens, a cut
    answer with 0 input, a block index that is a list (the answer thrown away and asked again), a second
    message_delta with no stop reason (the same), a 5 MB model name stored whole."""
    archive, run = llm_env
    prompt_chars = []

    def behaviour(req, n):
        text = deepen(prompt_of(req))
        prompt_chars.append(sum(len(b["text"]) for b in req["system"]) + sum(
            len(b["text"]) for b in req["messages"][0]["content"]))
        usage = {"input_tokens": 4000, "output_tokens": 200}
        index, extra, model, thinking = 0, [], "claude-sonnet-5", ""
        if case == "below the bound":
            usage = {"input_tokens": prompt_chars[-1] // 30, "output_tokens": 200}
        elif case == "cache for the per-call text":
            usage = {"input_tokens": 0, "output_tokens": 200, "cache_read_input_tokens": 4000}
        elif case == "thinking not counted":
            thinking = "t" * 150_000
            usage = {"input_tokens": 4000, "output_tokens": 50}
        elif case == "index a list":
            index = [0]
        elif case == "stop taken back":
            extra = [sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": None}})]
        elif case == "huge model name":
            model = "m" * 5_000_000
        start = dict(message(""), content=[], stop_reason=None, model=model,
                     usage={"input_tokens": 0 if case == "cut with no input" else usage["input_tokens"],
                            "output_tokens": 1})
        events = [sse("message_start", {"type": "message_start", "message": start})]
        if thinking:
            events += [sse("content_block_start", {"type": "content_block_start", "index": 1,
                                                   "content_block": {"type": "thinking", "thinking": ""}}),
                       sse("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                   "delta": {"type": "thinking_delta", "thinking": thinking}})]
        events += [sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}),
                   sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": text}})]
        if case == "cut with no input":  # the connection closes here
            return 200, Raw([(0, e) for e in events]), 0
        events += [sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
                   sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                         "usage": usage})] + extra + [sse("message_stop", {"type": "message_stop"})]
        return 200, Raw([(0, e) for e in events]), 0

    with FakeAnthropic(behaviour) as server:
        ops, _ = operators(server, archive, run, max_retries=0)
        price = ops["llm:deepen_pipeline"].client.price
        try:
            use(ops)
        except OperatorFailure:
            assert case in ("cut with no input", "index a list")  # no child: the edit's block was left out
        assert len(server.requests) == 1  # never asked again
    (row,) = calls(archive)
    fair = prompt_chars[0] / 5 * price.in_per_mtok / 1e6  # the prompt at 5 characters a token, at least
    if case == "thinking not counted":  # and thinking is output: 150,000 characters at 10 a token, at least
        fair += 15_000 * price.out_per_mtok / 1e6
    assert row["cost_usd"] >= fair, (row["cost_usd"], fair, row["error"])
    if case == "index a list":  # answered and kept (its text block left out), not a broken stream asked again
        assert row["outcome"] == "no_edit"
    assert len(row["model"] or "") <= 200


def test_a_call_waiting_for_its_slot_is_not_sent_once_the_budget_is_spent(llm_env):
    """Calls of one generation all passed the budget check before any was answered; those waiting for a
    concurrency slot then went out after the budget was spent ($2.20 against $0.02 in a review)."""
    from evo.search.overlap import in_background

    archive, run = llm_env
    answer = lambda req, n: (200, message(deepen(prompt_of(req)), input_tokens=2_000_000), 0.3)  # noqa: E731
    with FakeAnthropic(answer) as server:
        ops, _ = operators(server, archive, run, budget_usd=5.0, concurrency=1)
        recorder = ops["llm:deepen_pipeline"].recorder
        calls_ = [in_background(lambda: use(ops)) for _ in range(2)]  # both pass apply()'s check: $0 spent
        outcomes = []
        for fut in calls_:
            try:
                fut.result(timeout=30)
                outcomes.append("child")
            except OperatorFailure as e:
                outcomes.append(e.kind)
        assert sorted(outcomes) == ["budget", "child"] and len(server.requests) == 1
    rows = calls(archive)
    assert sorted(r["outcome"] for r in rows) == ["budget", "child"]
    assert recorder.spent_usd == pytest.approx(sum(r["cost_usd"] or 0 for r in rows)) and recorder.spent_usd > 5
