"""A local HTTP server on 127.0.0.1 that speaks the Anthropic Messages API, for tests.

`behaviour(request_json, n)` returns (status, body_dict, delay_s); n counts requests from 1. A
request with `"stream": true` (the client streams every operator call) is answered as the API
does: server-sent events built from the same message dict.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def message(text: str, *, input_tokens: int = 4000, output_tokens: int = 200, cache_read: int = 0,
            cache_write: int = 0, stop_reason: str = "end_turn") -> dict:
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
            "content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read}}


def events(msg: dict) -> bytes:
    """The message as the streaming API sends it: start, the text in two deltas, stop reason, end."""
    start = dict(msg, content=[], stop_reason=None, usage=dict(msg["usage"], output_tokens=1))
    text = msg["content"][0]["text"]
    half = len(text) // 2
    out = [("message_start", {"type": "message_start", "message": start}),
           ("content_block_start", {"type": "content_block_start", "index": 0,
                                    "content_block": {"type": "text", "text": ""}}),
           ("ping", {"type": "ping"})]
    out += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": part}}) for part in (text[:half], text[half:])]
    out += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"],
                                                                  "stop_sequence": None},
                               "usage": {"output_tokens": msg["usage"]["output_tokens"]}}),
            ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in out).encode()


def sse(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class Raw:
    """An answer sent as it comes: event-stream headers without a length, then each chunk after its
    delay, then the connection closes (whatever the chunks said): trickles, cut streams, floods."""

    def __init__(self, chunks, *, with_headers: bool = True):
        self.chunks = chunks  # iterable of (delay_s, bytes)
        self.with_headers = with_headers  # False: the chunks are the whole response, status line included


def stream_parts(msg: dict) -> list[bytes]:
    """The events of `events(msg)`, one bytes object each, to send a part of them (a cut stream)."""
    return [part + b"\n\n" for part in events(msg).split(b"\n\n") if part]


def error(kind: str, text: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": text}}


class FakeAnthropic:
    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.requests: list[dict] = []
        self.headers: list[dict] = []  # each request's HTTP headers, names in lower case
        self.retry_after_ms = 10
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, payload, delay = server.behaviour(body, len(server.requests))
                if delay:
                    time.sleep(delay)
                if isinstance(payload, Raw):
                    self._raw(payload)
                    return
                text = isinstance(payload, str)  # a str is sent as an HTML page (a proxy's answer)
                sse = body.get("stream") and status == 200 and not text
                data = events(payload) if sse else (payload if text else json.dumps(payload)).encode()
                kind = "text/event-stream" if sse else "text/html" if text else "application/json"
                try:
                    self.send_response(status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    if status == 429:
                        self.send_header("retry-after-ms", str(server.retry_after_ms))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

            def _raw(self, payload: Raw):
                try:
                    if payload.with_headers:
                        self.send_response(200)
                        self.send_header("content-type", "text/event-stream")
                        self.send_header("connection", "close")
                        self.end_headers()
                    for delay, chunk in payload.chunks:
                        if server.closing.is_set():
                            return
                        time.sleep(delay)
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up
                self.close_connection = True

        self.closing = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def prompt_of(request: dict) -> str:
    content = request["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n\n".join(block["text"] for block in content)


def source_in(prompt: str) -> str:
    """The parent source quoted in one of our prompts."""
    start = prompt.index("```cuda\n") + len("```cuda\n")
    return prompt[start:prompt.index("```", start)]
