"""The HTTP server and handler base the fake APIs (tests/fake_api.py, tests/fake_github.py) share."""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer(ThreadingHTTPServer):
    """A threaded server on 127.0.0.1 that never waits for its handlers when it closes."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's FQDN, which can stall without DNS; it is not needed.
        super(ThreadingHTTPServer, self).server_bind()  # TCPServer.server_bind
        self.server_name, self.server_port = self.server_address[:2]  # type: ignore[assignment]


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, no Nagle delay on small replies, no access log on stderr."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass
