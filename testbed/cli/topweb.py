"""`hpn-testbed top --web`: the live view as a page served on 127.0.0.1 only.

Two paths and nothing else: `/` is the page (top.html: the fabric drawn in SVG, every cable
coloured by its load, no script or style from anywhere else), `/view.json` the latest View
(testbed/measure/liveview.py), which the page polls. The sampling runs in this thread; the server
answers from its own threads with the last view taken. Ctrl-C (or the run ending) stops both.

The server runs as root and every local user can reach 127.0.0.1, so: a request whose Host does
not name the loopback (LOCAL_NAMES, any port, as through `ssh -L`) is refused (a web page
elsewhere that got a name of its resolved to 127.0.0.1, DNS rebinding, reads nothing), and a
connection that sends nothing is dropped after TIMEOUT_S instead of holding a thread for good.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from testbed.core.errors import ParamError

HOST = "127.0.0.1"
LOCAL_NAMES = (HOST, "localhost", "[::1]")   # what a Host header may name (any port: a forward)
TIMEOUT_S = 10          # a connection's idle limit (http.server's own default is none)


class Latest:
    """The last view's JSON, shared between the sampling thread and the server's threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._body = json.dumps({"waiting": True}).encode()

    def set(self, view: dict) -> None:
        body = json.dumps(view).encode()
        with self._lock:
            self._body = body

    def get(self) -> bytes:
        with self._lock:
            return self._body


def handler(page: bytes, latest: Latest) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = TIMEOUT_S

        def do_GET(self):   # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            if self.headers.get("Host", "").rsplit(":", 1)[0] not in LOCAL_NAMES:
                self.answer(421, "text/plain", b"wrong host\n")
            elif path == "/":
                self.answer(200, "text/html; charset=utf-8", page)
            elif path == "/view.json":
                self.answer(200, "application/json", latest.get())
            else:
                self.answer(404, "text/plain", b"not found\n")

        def answer(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):      # the terminal shows the fabric, not each request
            pass
    return Handler


def bind(port: int, page: bytes, latest: Latest) -> ThreadingHTTPServer:
    """The server on 127.0.0.1:port (a port taken: one line, exit 2)."""
    try:
        server = ThreadingHTTPServer((HOST, port), handler(page, latest))
    except OSError as e:
        raise ParamError(f"top --web: cannot listen on {HOST}:{port} ({e.strerror})") from None
    server.daemon_threads = True
    return server


def serve(watched, port: int, views) -> int:
    """Serve until Ctrl-C or until `views` (the sampling: top.views) ends with the run."""
    page = resources.files("testbed.cli").joinpath("top.html").read_bytes()
    latest = Latest()
    server = bind(port, page, latest)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(f"serving run {watched.state.run_id} on http://{HOST}:{server.server_port}/ "
          "(this machine only; Ctrl-C ends)", flush=True)
    try:
        for view in views:
            latest.set(view.as_dict())
        print(f"run {watched.state.run_id} ended", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
    return 0
