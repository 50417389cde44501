"""A local HTTP server on 127.0.0.1 that speaks the Anthropic Messages API, for tests.

`behaviour(request_json, n)` returns (status, body_dict, delay_s); n counts requests from 1.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def message(text: str, *, input_tokens: int = 1000, output_tokens: int = 200, cache_read: int = 0) -> dict:
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": cache_read}}


def error(kind: str, text: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": text}}


class FakeAnthropic:
    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append(body)
                status, payload, delay = server.behaviour(body, len(server.requests))
                if delay:
                    time.sleep(delay)
                text = isinstance(payload, str)  # a str is sent as an HTML page (a proxy's answer)
                data = (payload if text else json.dumps(payload)).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "text/html" if text else "application/json")
                    self.send_header("content-length", str(len(data)))
                    if status == 429:
                        self.send_header("retry-after-ms", "10")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def prompt_of(request: dict) -> str:
    return request["messages"][-1]["content"]


def source_in(prompt: str) -> str:
    """The parent source quoted in one of our prompts."""
    start = prompt.index("```cuda\n") + len("```cuda\n")
    return prompt[start:prompt.index("```", start)]
