"""A tiny real HTTP server on 127.0.0.1 for adapter tests (no mocks of the transport).

``serve(respond)`` runs a ``ThreadingHTTPServer`` on a random port; every POST is recorded
and answered by ``respond(request) -> Reply``. A reply may ask the server to sleep first
(to exercise client timeouts).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "Request", "Server", "chat_reply", "json_reply", "serve"]


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]
    body: bytes
    #: How many requests this path's first segment has had, this one included.
    hit: int

    @property
    def key(self) -> str:
        return self.path.lstrip("/").partition("/")[0]

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b"{}"
    delay_s: float = 0.0


def json_reply(payload: object, status: int = 200) -> Reply:
    return Reply(status=status, body=json.dumps(payload).encode())


def chat_reply(content: str) -> Reply:
    """A ``/chat/completions`` answer whose one choice says ``content``."""
    return json_reply(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    )


@dataclass
class Server:
    url: str
    requests: list[Request] = field(default_factory=list)
    hits: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def hits_of(self, key: str) -> int:
        with self.lock:
            return self.hits[key]


@contextmanager
def serve(respond: Callable[[Request], Reply]) -> Iterator[Server]:
    """Run a server answering with ``respond`` until the block ends."""
    server = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            key = self.path.lstrip("/").partition("/")[0]
            with server.lock:
                server.hits[key] += 1
                request = Request(self.path, dict(self.headers), body, server.hits[key])
                server.requests.append(request)
            reply = respond(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except OSError:
                pass  # the client gave up (timeout tests); nothing to answer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
